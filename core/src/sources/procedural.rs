//! Procedural sources (placeholder; being written).
/// Checkerboard.
pub struct Checkerboard;
/// Noise.
pub struct Noise;
/// Mandelbrot.
pub struct Mandelbrot;
