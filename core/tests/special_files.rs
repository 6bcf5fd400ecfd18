//! Texture paths that name a FIFO (a scene pointing at a named pipe by mistake): the open
//! is refused (`sources::open_file`), so the texture fails with an error naming the FIFO and
//! renders its fallback colour — in a multi-pass render, whose tickets all complete, and
//! through a blocking cache, whose lookup returns. Opening the FIFO for reading would wait
//! for a writer: a fill worker, and the tickets and lookups waiting on it, would hang.
#![cfg(unix)]

mod common;

use common::{render, Query};
use demandtex::sources::file_source;
use demandtex::textures::TextureDesc;
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TILE_BYTES};
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn fifo(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demandtex-special-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    assert!(Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap()
        .success());
    path
}

const FALLBACK: [f32; 4] = [0.25, 0.5, 0.75, 1.0];

fn desc() -> TextureDesc {
    TextureDesc {
        fallback_color: FALLBACK,
        ..TextureDesc::default()
    }
}

/// Run `f` on a thread; fail if it has not returned after 60 s.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(f()));
    receive
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: still waiting on the FIFO after 60 s"))
}

#[test]
fn a_fifo_texture_fails_to_its_fallback_in_a_multipass_render() {
    let path = fifo("multipass.exr");
    let (values, converged, error) = within_a_minute("multi-pass", move || {
        let loader = Loader::new(LoaderOptions {
            max_texture_memory: 64 * TILE_BYTES as u64,
            ..LoaderOptions::default()
        })
        .unwrap();
        let tex = loader.create_texture(file_source(&path), desc()).unwrap();
        let queries: Vec<Query> = (0..16)
            .map(|i| Query {
                texture: tex,
                s: i as f32 / 16.0,
                t: 0.5,
                ddx: [1.0 / 256.0, 0.0],
                ddy: [0.0, 1.0 / 256.0],
            })
            .collect();
        let r = render(&loader, &queries, 2, 10);
        let error = loader.texture_error(tex).map(|e| e.to_string());
        (r.values, r.converged, error)
    });
    assert!(converged);
    assert!(values.iter().all(|v| *v == FALLBACK), "{values:?}");
    let error = error.expect("the texture failed");
    assert!(error.contains("FIFO"), "{error}");
}

#[test]
fn a_fifo_texture_fails_to_its_fallback_through_a_blocking_cache() {
    let path = fifo("blocking.png");
    let (value, error) = within_a_minute("blocking", move || {
        let cache = TextureCache::new(LoaderOptions {
            max_texture_memory: 64 * TILE_BYTES as u64,
            fill_threads: 1,
            ..LoaderOptions::default()
        })
        .unwrap();
        let tex = cache.texture_for_path(&path, desc()).unwrap();
        let sample = cache.tex2d_grad(
            tex,
            0.5,
            0.5,
            [1.0 / 256.0, 0.0],
            [0.0, 1.0 / 256.0],
            &SampleOptions::default(),
        );
        let error = cache.loader().texture_error(tex).map(|e| e.to_string());
        (sample.value, error)
    });
    assert_eq!(value, FALLBACK);
    let error = error.expect("the texture failed");
    assert!(error.contains("FIFO"), "{error}");
}
