//! Backends: where tile data lives and how a filled tile becomes visible. The CPU backend
//! keeps tiles in host memory and finds them through a [`cpu::TileDirectory`].

pub mod cpu;
