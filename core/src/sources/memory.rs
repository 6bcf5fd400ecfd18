//! In-memory images (placeholder; being written).
/// An image held in memory.
pub struct InMemoryImage;
