//! When a Ptex file is read: its header at registration, the rest when the engine opens
//! the texture (its first lookup), and a file that fails then is a failed texture.

use super::*;

/// A copy of `fx`'s file in a directory of its own, named `name`.
fn copy_of(fx: &Fixture, tag: &str, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("demandtex-ptex-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::copy(&fx.path, &path).unwrap();
    (dir, path)
}

/// `l` looked up in `launch`.
fn sample_launch(launch: &Launch, tex: &PtexTexture, l: &Lookup, out: &mut [f32]) -> PtexSampled {
    let (face, [u, v], d, o) = l;
    launch.ptex_sample(tex, *face, *u, *v, d[0], d[1], d[2], d[3], o, out)
}

/// Multi-pass: registration parses nothing; the first launch's lookups find the texture
/// unopened (zeros, no channels, non-resident) and ask for it; `process_requests` opens
/// it, which parses the file; the next launches converge to the resident reader's values.
/// A blocking cache parses at the first lookup and answers it at once.
#[test]
fn a_file_is_parsed_when_its_texture_is_first_looked_up() {
    let fx = Fixture::load("quad_uint8_rgb");
    let ls = lookups(fx.file.num_faces(), 200);
    let want = reference(&fx, &ls);
    let n = fx.file.num_channels();

    let loader = Loader::new(options(64)).unwrap();
    let tex = loader.create_ptex_texture(&fx.path).unwrap();
    assert!(tex.pages_if_parsed().is_none(), "parsed at registration");
    assert_eq!(tex.num_faces() as usize, fx.file.num_faces());
    let launch = loader.launch_prepare();
    for l in &ls {
        let mut out = vec![1f32; n];
        let s = sample_launch(&launch, &tex, l, &mut out);
        assert_eq!((s.resident, s.channels), (false, 0));
        assert!(out.iter().all(|&x| x == 0.0), "{out:?}");
    }
    assert!(tex.pages_if_parsed().is_none(), "parsed by a lookup");
    loader.process_requests(launch).wait();
    assert!(tex.pages_if_parsed().is_some(), "not parsed when opened");
    let mut converged = false;
    for _ in 0..16 {
        let launch = loader.launch_prepare();
        let mut all = true;
        for (l, want) in ls.iter().zip(&want) {
            let mut out = vec![0f32; n];
            let s = sample_launch(&launch, &tex, l, &mut out);
            if s.resident {
                assert_eq!(&out, want);
            }
            all &= s.resident;
        }
        loader.process_requests(launch).wait();
        if all {
            converged = true;
            break;
        }
    }
    assert!(converged, "not converged in 16 launches");

    let cache = TextureCache::new(options(64)).unwrap();
    let tex = cache.create_ptex_texture(&fx.path).unwrap();
    assert!(tex.pages_if_parsed().is_none(), "parsed at registration");
    let (l, want) = (&ls[0], &want[0]);
    let mut out = vec![0f32; n];
    let (face, [u, v], d, o) = l;
    let s = cache.ptex_sample(&tex, *face, *u, *v, d[0], d[1], d[2], d[3], o, &mut out);
    assert!(s.resident);
    assert_eq!(&out, want);
    assert!(tex.pages_if_parsed().is_some());
}

/// A file whose header is sound but whose face table is not registers; its texture fails
/// when opened: lookups give zeros, resident (nothing to wait for), in both modes and in
/// batches; the engine counts it failed and keeps the error, and `pages` returns it, each
/// naming the file. A file that is not Ptex at all is refused at registration.
#[test]
fn a_file_that_fails_to_parse_is_a_failed_texture() {
    let fx = Fixture::load("quad_uint8_rgb");
    let (dir, path) = copy_of(&fx, "unparsable", "tables.ptx");
    let mut bytes = std::fs::read(&path).unwrap();
    // The face info block follows the 64-byte header and the extended header: its zlib
    // stream zeroed after the stream header (a stored block of bad length).
    let ext = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    let faceinfo = 64 + ext;
    bytes[faceinfo + 2..faceinfo + 16].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let n = fx.file.num_channels();
    let o = PtexFilterOptions::default();

    let loader = Loader::new(options(16)).unwrap();
    let tex = loader.create_ptex_texture(&path).unwrap();
    for launch_no in 0..2 {
        let launch = loader.launch_prepare();
        let mut out = vec![1f32; n];
        let s = launch.ptex_sample(&tex, 0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut out);
        // The first launch finds the texture unopened, the second failed.
        assert_eq!(s.resident, launch_no == 1, "launch {launch_no}");
        assert_eq!(out, vec![0f32; n]);
        loader.process_requests(launch).wait();
    }
    let stats = loader.engine().stats();
    assert_eq!(stats.failed_textures, 1, "{stats:?}");
    let e = loader.engine().texture_error(tex.id()).expect("an error");
    assert!(e.to_string().contains("tables.ptx"), "{e}");
    let e = tex.pages().unwrap_err();
    assert!(
        e.to_string().contains("tables.ptx") && e.to_string().contains("face info"),
        "{e}"
    );

    let cache = TextureCache::new(options(16)).unwrap();
    let tex = cache.create_ptex_texture(&path).unwrap();
    let mut out = vec![1f32; n];
    let s = cache.ptex_sample(&tex, 0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut out);
    assert!(s.resident);
    assert_eq!(out, vec![0f32; n]);
    let queries: Vec<PtexLookup<'_>> = (0..4)
        .map(|face| PtexLookup {
            texture: &tex,
            face,
            uv: [0.5, 0.5],
            d: [0.0; 4],
        })
        .collect();
    let mut out = vec![1f32; 4 * n];
    let mut sampled = vec![PtexSampled::default(); 4];
    cache
        .ptex_sample_batch(&queries, &o, n, &mut out, &mut sampled)
        .unwrap();
    assert!(sampled.iter().all(|s| s.resident), "{sampled:?}");
    assert!(out.iter().all(|&x| x == 0.0), "{out:?}");

    std::fs::write(
        &path,
        b"not a ptex file at all, but long enough for a header.......",
    )
    .unwrap();
    let e = cache.create_ptex_texture(&path).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    assert!(e.to_string().contains("tables.ptx"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
