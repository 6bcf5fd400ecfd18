//! Tests of the EXR source: files written by the tests, compared with the exr crate's own
//! full reader; bad files; the open-file bound.

mod changes;
mod describe;
mod errors;
mod fixtures;
mod limits;
mod maketx;
mod reads;
