//! Tests of the Ptex reader: every value of the reference fixtures (structure, faces,
//! texels at every resolution, pixels, meta data, edits), bad files, unit checks of the
//! value arithmetic, and concurrent reads.

mod bad_input;
mod decoded_units;
pub(crate) mod fixtures;
mod meta;
mod pack;
mod region;
mod structure;
mod texels;
mod units;
mod versions;
mod write;
