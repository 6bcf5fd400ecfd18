//! afl.rs target: see [`demandtex_fuzz::ptex`].
fn main() {
    afl::fuzz!(|data: &[u8]| demandtex_fuzz::ptex(data));
}
