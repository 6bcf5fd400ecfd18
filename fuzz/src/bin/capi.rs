//! afl.rs target: see [`demandtex_fuzz::capi_ops`].
fn main() {
    demandtex_fuzz::abort_on_panic();
    let files = demandtex_fuzz::capi_ops::Files::new();
    afl::fuzz_nohook!(|data: &[u8]| demandtex_fuzz::capi_ops::run(data, &files));
}
