//! afl.rs target: see [`demandtex_fuzz::capi_ops`].
fn main() {
    let files = demandtex_fuzz::capi_ops::Files::new();
    afl::fuzz!(|data: &[u8]| demandtex_fuzz::capi_ops::run(data, &files));
}
