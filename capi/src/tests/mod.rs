//! Unit tests of the C ABI, calling the exported functions as C would.

mod abi;
mod callbacks;
mod compile;
mod cuda;
mod derivatives_and_info;
mod errors;
mod files;
mod header;
mod lifecycle;
mod multipass;
mod nvrtc;
mod option_versions;
mod pixels;
mod ptex;
mod ptex_batch;
mod ptex_c;
mod resources;
mod timing;
mod udim_pattern;
mod util;
