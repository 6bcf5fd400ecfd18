//! Backends: where tile data lives and how a filled tile becomes visible. The CPU backend
//! keeps tiles in host memory and finds them through a [`cpu::TileDirectory`]; [`cuda`] is
//! the CUDA backend's front door (driver and device probing, clear errors without either).

pub mod cpu;
pub mod cuda;
