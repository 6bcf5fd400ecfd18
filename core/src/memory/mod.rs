//! Memory: the tile pool, budget, epochs and eviction.
