//! afl.rs target: see [`demandtex_fuzz::exr`].
fn main() {
    afl::fuzz!(|data: &[u8]| demandtex_fuzz::exr(data));
}
