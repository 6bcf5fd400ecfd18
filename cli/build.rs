//! The prebuilt ISPC kernels of `intel_tex_2` (the DDS encoder of `convert`) carry C++
//! exception tables that refer to the C++ runtime: link it.
fn main() {
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
