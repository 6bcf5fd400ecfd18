//! Interactive streaming seen from a renderer's loop: probabilistic request rejection
//! (deterministic per request key), and the frame that never waits.

use demandtex::sources::Checkerboard;
use demandtex::textures::TexelFormat;
use demandtex::{Loader, LoaderOptions, SampleOptions, StreamingMode, TextureDesc, TextureId};
use std::sync::Arc;

const SIDE: u32 = 8192;

fn loader(mode: StreamingMode, rejection: Option<bool>) -> (Loader, TextureId) {
    let loader = Loader::new(LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: 64 << 20,
        fill_threads: 1,
        // Misses outlive a launch: later launches have a rejection probability.
        max_requests_per_launch: 8,
        mode,
        request_rejection: rejection,
        ..LoaderOptions::default()
    })
    .unwrap();
    let source = Arc::new(Checkerboard::new(SIDE, SIDE, 64, TexelFormat::RGBA8));
    let id = loader
        .create_texture(source, TextureDesc::default())
        .unwrap();
    (loader, id)
}

/// One frame of `n × n` pixels sampling level 0 at pixel centres (key = pixel index),
/// each pixel's footprint 8 texels wide so that many pixels share a tile. Returns the
/// pages requested (the ticket's tasks) after waiting for the fills.
fn frame(loader: &Loader, id: TextureId, n: u32) -> usize {
    let launch = loader.launch_prepare();
    let g = 8.0 / SIDE as f32;
    for y in 0..n {
        for x in 0..n {
            let options = SampleOptions {
                request_key: y * n + x,
                ..SampleOptions::default()
            };
            let (s, t) = ((x as f32 + 0.5) / n as f32, (y as f32 + 0.5) / n as f32);
            launch.tex2d_grad(id, s, t, [g, 0.0], [0.0, g], &options);
        }
    }
    let ticket = loader.process_requests(launch);
    ticket.wait();
    ticket.tasks_total()
}

#[test]
fn interactive_mode_rejects_requests_from_the_second_launch_on_final_mode_never() {
    let (final_loader, id) = loader(StreamingMode::Final, None);
    let (interactive, id2) = loader(StreamingMode::Interactive, None);
    for _ in 0..3 {
        frame(&final_loader, id, 64);
        frame(&interactive, id2, 64);
    }
    assert_eq!(final_loader.stats().requests_rejected, 0);
    let s = interactive.stats();
    assert!(s.requests_rejected > 0, "{s:?}");
    // Rejection can be turned off in interactive mode.
    let (off, id3) = loader(StreamingMode::Interactive, Some(false));
    for _ in 0..3 {
        frame(&off, id3, 64);
    }
    assert_eq!(off.stats().requests_rejected, 0);
    assert_eq!(off.stats().requests, final_loader.stats().requests);
}

#[test]
fn rejection_is_reproducible() {
    let run = || {
        let (l, id) = loader(StreamingMode::Interactive, None);
        let tasks: Vec<usize> = (0..4).map(|_| frame(&l, id, 48)).collect();
        (tasks, l.stats().requests_rejected, l.stats().requests)
    };
    assert_eq!(run(), run());
}
