//! The device side of [`DeviceState`]: tile-pool blocks (waiting for released ones when
//! the pool is full), reclaiming blocks whose fence has passed, and the flush — unmaps,
//! maps, uploads through the staging ring — in the order the module's doc gives.

use super::*;

impl DeviceState {
    /// A pool block of `tiles` tiles, waiting for released blocks if the pool is full.
    pub(super) fn allocate(&mut self, tiles: u32) -> Result<TileBlock> {
        let Some(pool) = self.pool.as_mut() else {
            return Err(Error::Internal("no tile pool (dense mode)".into()));
        };
        match pool.allocate(tiles) {
            Ok(b) => Ok(b),
            Err(first) => {
                if !self.wait_for_released_blocks()? {
                    return Err(first);
                }
                match self.pool.as_mut() {
                    Some(pool) => pool.allocate(tiles),
                    None => Err(first),
                }
            }
        }
    }

    /// If blocks wait for their fences (or releases for their unmap), submit and wait, and
    /// give them back to the pool; returns whether there were any.
    pub(super) fn wait_for_released_blocks(&mut self) -> Result<bool> {
        if !self.releases.is_empty() || !self.retiring.is_empty() {
            self.submit_unmaps()?;
        }
        if self.released_blocks.is_empty() {
            return Ok(false);
        }
        let last = self.staging.timeline().last();
        self.staging.timeline().wait(last)?;
        self.reclaim()?;
        Ok(true)
    }

    /// Free what completed fences release: blocks to the pool, retired textures dropped.
    fn reclaim(&mut self) -> Result<()> {
        let done = self.staging.timeline().poll()?;
        for block in self.released_blocks.release(done) {
            if let Some(pool) = self.pool.as_mut() {
                pool.free(block)?;
            }
        }
        drop(self.retired_textures.release(done));
        if let Some(pool) = self.pool.as_mut() {
            if pool.accounting().capacity_bytes() > pool.max_bytes() {
                pool.shrink()?;
            }
        }
        Ok(())
    }

    /// Unmap the released tiles and the tails of retired textures (one batch); their blocks
    /// and textures are freed after the fence recorded here.
    fn submit_unmaps(&mut self) -> Result<()> {
        let released = std::mem::take(&mut self.releases);
        let retiring = std::mem::take(&mut self.retiring);
        if released.is_empty() && retiring.is_empty() {
            return Ok(());
        }
        let mut blocks = Vec::new();
        {
            let mut batch = MapBatch::new(self.device.info().ordinal)?;
            for (page, tile, frees) in &released {
                let (Some(_), Some(sparse)) = (tile.block, tile.texture.sparse()) else {
                    continue;
                };
                if let Some(region) = sparse.page_region(page - tile.texture.start_page) {
                    batch.unmap(sparse, region)?;
                }
                blocks.extend(*frees);
            }
            for t in &retiring {
                if let (Some(block), Some(sparse)) = (t.tail_block, t.sparse()) {
                    if let Some(region) = sparse.page_region(0) {
                        batch.unmap(sparse, region)?;
                    }
                    blocks.push(block);
                }
            }
            batch.submit(&self.stream)?;
        }
        // SAFETY: the loader's stream is live.
        unsafe { self.unmapped.record(self.stream.cu_stream()) }?;
        self.unmaps_recorded = true;
        let fence = self.staging.timeline().record(&self.stream)?;
        self.stats.blocks_released += blocks.len() as u64;
        for b in blocks {
            self.released_blocks.push(fence, b)?;
        }
        // The tiles' texture references go with them now; the textures (arrays, objects,
        // samplers) wait for the fence.
        drop(released);
        for t in retiring {
            self.retired_textures.push(fence, t)?;
        }
        Ok(())
    }

    /// Submit the queued unmaps, maps and uploads, in that order.
    ///
    /// A sparse map takes tens of microseconds of the driver's time, and one enqueued on a
    /// stream runs after the work in front of it (measured on an H100: `docs/GPU.md`). So
    /// new tiles are mapped on the map stream, which runs beside a kernel on the loader's
    /// stream: a publication made while the kernel runs (`TilePublication::DuringLaunch`)
    /// does not wait for it. That is safe because a new tile's region is unmapped and no
    /// launch reads it (its residence bit is pushed later, on the loader's stream), and its
    /// pool block was freed only after its unmap's fence. The map stream waits for the
    /// loader stream's last unmap batch (a region unmapped there may be mapped again here);
    /// the loader's stream waits for the maps before the uploads.
    pub(super) fn submit_tiles(&mut self) -> Result<()> {
        self.submit_unmaps()?;
        let maps = std::mem::take(&mut self.maps);
        if !maps.is_empty() {
            let pool = self
                .pool
                .as_ref()
                .ok_or_else(|| Error::Internal("a sparse map without a tile pool".into()))?;
            let mut batch = MapBatch::new(self.device.info().ordinal)?;
            for (texture, region, block) in &maps {
                if let Some(sparse) = texture.sparse() {
                    batch.map(sparse, *region, pool.memory(block)?)?;
                }
            }
            let (loader, mapper) = (self.stream.cu_stream(), self.map_stream.cu_stream());
            if self.unmaps_recorded {
                // SAFETY: both streams are live streams of the loader's context.
                unsafe { self.unmapped.wait(mapper) }?;
            }
            batch.submit(&self.map_stream)?;
            // SAFETY: as above.
            unsafe { self.mapped.order(mapper, loader) }?;
        }
        for u in std::mem::take(&mut self.uploads) {
            let array = u.texture.storage.array();
            self.staging
                .submit(&self.stream, u.slot, array, &u.rect, u.pitch)?;
        }
        Ok(())
    }

    /// Copy a tile page's texels into staging slots, queued behind its map.
    pub(super) fn stage_tile(
        &mut self,
        texture: &Arc<GpuTexture>,
        offset: u32,
        data: &[u8],
    ) -> Result<()> {
        let copies = page_copies(&texture.layout, offset).ok_or_else(|| {
            Error::Internal(format!(
                "page {offset} of a texture of {} pages",
                texture.num_pages()
            ))
        })?;
        for c in copies {
            if self.uploads.len() >= STAGING_SLOTS {
                // Every slot is filled and waits for its map: submit them.
                self.submit_tiles()?;
            }
            let row = texture.layout.row_bytes(c.rect.width);
            let rows = texture.layout.storage_rows(c.rect.height) as usize;
            let src = data.get(c.data_offset..).unwrap_or(&[]);
            if src.len() < c.pitch * rows.saturating_sub(1) + row || row * rows > TILE_BYTES {
                return Err(Error::Internal(format!(
                    "{} bytes for {:?}",
                    data.len(),
                    c.rect
                )));
            }
            let slot = self.staging.acquire()?;
            let dst = match self.staging.slot_mut(slot) {
                Ok(d) => d,
                Err(e) => {
                    let _ = self.staging.cancel(slot);
                    return Err(e);
                }
            };
            for r in 0..rows {
                dst[r * row..(r + 1) * row].copy_from_slice(&src[r * c.pitch..r * c.pitch + row]);
            }
            self.uploads.push(QueuedUpload {
                texture: texture.clone(),
                slot,
                rect: c.rect,
                pitch: row,
            });
        }
        Ok(())
    }

    /// Apply everything queued (see the module docs).
    pub(super) fn flush(&mut self) -> Result<()> {
        self.submit_tiles()?;
        let (invalidate, push) = coalesce(&std::mem::take(&mut self.residence));
        self.stats.residence_changes += (invalidate.len() + push.len()) as u64;
        self.buffers.invalidate(&self.kernels, &invalidate)?;
        self.buffers.push_mappings(&self.kernels, &push)?;
        self.stats.flushes += 1;
        self.stats.textures_on_device = self.textures.len() as u64;
        self.stats.shared_blocks = self.shared.blocks() as u64;
        if let Some(pool) = &self.pool {
            let used = pool.accounting().used_tiles() * TILE_BYTES as u64;
            self.stats.pool_used_bytes = used;
            self.stats.pool_peak_bytes = self.stats.pool_peak_bytes.max(used);
            self.stats.pool_capacity_bytes = pool.accounting().capacity_bytes();
        }
        self.reclaim()
    }
}
