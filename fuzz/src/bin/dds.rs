//! afl.rs target: see [`demandtex_fuzz::dds`].
fn main() {
    demandtex_fuzz::abort_on_panic();
    afl::fuzz_nohook!(|data: &[u8]| demandtex_fuzz::dds(data));
}
