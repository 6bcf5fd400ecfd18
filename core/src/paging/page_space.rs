//! Hands out page ranges: bump allocation in the resource range and the tile range.
//! Ranges are never reclaimed (a loader's page space outlives its textures).

use super::page_layout::PageLayout;
use crate::error::{Error, Result};

/// The allocation state of the page space.
#[derive(Clone, Debug)]
pub struct PageSpace {
    layout: PageLayout,
    next_resource: u32,
    next_tile: u32,
}

impl PageSpace {
    /// An empty space.
    pub fn new(layout: PageLayout) -> Self {
        PageSpace {
            layout,
            next_resource: layout.resource_start(),
            next_tile: layout.tile_start(),
        }
    }

    /// Reserve `count` pages of the tile range; returns the first.
    pub fn allocate_tiles(&mut self, count: u32, what: &str) -> Result<u32> {
        Self::bump(&mut self.next_tile, self.layout.num_pages, count, what)
    }

    /// Reserve `count` pages with page-table entries; returns the first.
    pub fn allocate_resources(&mut self, count: u32, what: &str) -> Result<u32> {
        Self::bump(
            &mut self.next_resource,
            self.layout.page_table_entries,
            count,
            what,
        )
    }

    /// One past the last page handed out (pull scans stop here).
    pub fn end_page(&self) -> u32 {
        self.next_tile
    }

    /// Pages of the tile range handed out so far.
    pub fn tile_pages_used(&self) -> u64 {
        (self.next_tile - self.layout.tile_start()) as u64
    }

    fn bump(next: &mut u32, end: u32, count: u32, what: &str) -> Result<u32> {
        let available = end - *next;
        if count > available {
            return Err(Error::OutOfPages {
                what: what.to_owned(),
                needed: count as u64,
                available: available as u64,
            });
        }
        let start = *next;
        *next += count;
        Ok(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_disjoint_and_bounded() {
        let mut s = PageSpace::new(PageLayout::new(4, 16, 100).unwrap());
        assert_eq!(s.allocate_resources(3, "r").unwrap(), 8);
        assert_eq!(s.allocate_resources(5, "r").unwrap(), 11);
        assert!(s.allocate_resources(1, "r").is_err());
        assert_eq!(s.allocate_tiles(50, "t").unwrap(), 16);
        assert_eq!(s.end_page(), 66);
        let e = s.allocate_tiles(35, "big texture").unwrap_err();
        assert!(e.to_string().contains("big texture"), "{e}");
        assert_eq!(s.allocate_tiles(34, "t").unwrap(), 66);
        assert_eq!(s.tile_pages_used(), 84);
    }
}
