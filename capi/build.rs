//! Give the shared library its SONAME: `libdemandtex.so.<DTEX_ABI_VERSION>`, so that
//! programs linked against it record `NEEDED libdemandtex.so.0`, not a path.

fn main() {
    // Keep in step with `DTEX_ABI_VERSION` in src/lib.rs (a unit test checks it).
    const ABI_VERSION: u32 = 0;
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" || target_os == "android" || target_os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdemandtex.so.{ABI_VERSION}");
    }
}
