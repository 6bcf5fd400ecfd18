//! Where the walk to a unit of a packing group starts ([`Checkpoints`]): the cursor of the
//! group's stream before some of its faces, so that a unit is placed again from the
//! nearest one before it (`pack::PackLayout::locate`).
//!
//! Two forms, whichever the group's faces make cheaper, so the index stays in proportion
//! to the group's units, never to the span of faces between its first and last unit:
//! - **dense**: a cursor every `stride` faces from the group's first face (found in O(1));
//!   kept while it has at most twice the sparse form's entries (plus a little);
//! - **sparse**: `(face, cursor)` at a group's first unit, after every `stride` units, and
//!   at the first unit after a run of `stride` or more faces without one (found by binary
//!   search). A walk from one then passes fewer than `stride` units and, between two of
//!   them, fewer than `stride` faces without a unit.
//!
//! A file whose few large faces sit at both ends of a million small ones no longer costs a
//! cursor per 8 faces per group it has units in.

use super::pack::Cursor;

/// A group's checkpoints (module documentation).
pub(super) enum Checkpoints {
    /// The cursor before face `first + stride * i`.
    Dense {
        first: u32,
        stride: u32,
        cursors: Vec<Cursor>,
    },
    /// `(face, cursor before it)`, by face.
    Sparse(Vec<(u32, Cursor)>),
}

impl Checkpoints {
    /// The last checkpoint at or before `face`: its face and cursor.
    #[inline]
    pub fn before(&self, face: u32) -> Option<(u32, Cursor)> {
        match self {
            Checkpoints::Dense {
                first,
                stride,
                cursors,
            } => {
                let k = face.checked_sub(*first)? / stride;
                Some((first + k * stride, *cursors.get(k as usize)?))
            }
            Checkpoints::Sparse(points) => {
                let i = points.partition_point(|&(f, _)| f <= face);
                points.get(i.checked_sub(1)?).copied()
            }
        }
    }

    /// The group's first face (the first with a unit in it): its first checkpoint's.
    pub fn first_face(&self) -> u32 {
        match self {
            Checkpoints::Dense { first, .. } => *first,
            Checkpoints::Sparse(points) => points.first().map_or(0, |&(f, _)| f),
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        match self {
            Checkpoints::Dense { cursors, .. } => std::mem::size_of_val(cursors.as_slice()),
            Checkpoints::Sparse(points) => std::mem::size_of_val(points.as_slice()),
        }
    }

    /// Whether the dense form is kept.
    #[cfg(test)]
    pub fn is_dense(&self) -> bool {
        matches!(self, Checkpoints::Dense { .. })
    }
}

/// Collects a group's checkpoints as its faces are packed, in face order.
pub(super) struct CheckpointBuilder {
    stride: u32,
    first: Option<u32>,
    /// Dropped once it would hold more than twice the sparse form's entries (plus slack).
    dense: Option<Vec<Cursor>>,
    sparse: Vec<(u32, Cursor)>,
    units_since: u32,
    last_unit: u32,
}

/// Dense entries allowed beyond twice the sparse form's.
const DENSE_SLACK: usize = 64;

impl CheckpointBuilder {
    /// A builder for checkpoints every `stride` faces (or units).
    pub fn new(stride: usize) -> CheckpointBuilder {
        CheckpointBuilder {
            stride: stride.max(1) as u32,
            first: None,
            dense: Some(Vec::new()),
            sparse: Vec::new(),
            units_since: 0,
            last_unit: 0,
        }
    }

    /// Face `face` comes next, the stream at `cursor`; `unit`: whether it has a unit in the
    /// group (placed after this call).
    pub fn face(&mut self, face: u32, cursor: Cursor, unit: bool) {
        let first = match self.first {
            Some(f) => f,
            None if unit => *self.first.insert(face),
            None => return,
        };
        if unit {
            let gap = face - self.last_unit >= self.stride;
            if self.sparse.is_empty() || self.units_since >= self.stride || gap {
                self.sparse.push((face, cursor));
                self.units_since = 0;
            }
            self.units_since += 1;
            self.last_unit = face;
        }
        if let Some(dense) = &mut self.dense {
            if (face - first) % self.stride == 0 {
                dense.push(cursor);
            }
            if dense.len() > 2 * self.sparse.len() + DENSE_SLACK {
                self.dense = None;
            }
        }
    }

    /// Faces `from..to` have no unit in the group, the stream at `cursor`: what
    /// [`CheckpointBuilder::face`] would do for each, without visiting them one by one.
    pub fn skip(&mut self, from: u32, to: u32, cursor: Cursor) {
        let Some(first) = self.first else {
            return; // nothing is kept before the first unit
        };
        let Some(dense) = &mut self.dense else {
            return;
        };
        // The stride multiples (counted from `first`) among `from..to`.
        let from = from.max(first);
        if from >= to {
            return;
        }
        let multiples = (from - first).div_ceil(self.stride)..(to - first).div_ceil(self.stride);
        for _ in multiples {
            dense.push(cursor);
            if dense.len() > 2 * self.sparse.len() + DENSE_SLACK {
                self.dense = None;
                return;
            }
        }
    }

    /// The checkpoints, once the group's last unit is at face `last` (`None`: the group
    /// has no unit).
    pub fn finish(self, last: u32) -> Option<Checkpoints> {
        let first = self.first?;
        Some(match self.dense {
            Some(mut cursors) => {
                cursors.truncate(((last - first) / self.stride + 1) as usize);
                cursors.shrink_to_fit();
                Checkpoints::Dense {
                    first,
                    stride: self.stride,
                    cursors,
                }
            }
            None => {
                let mut points = self.sparse;
                points.shrink_to_fit();
                Checkpoints::Sparse(points)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cur(page: u32) -> Cursor {
        Cursor { page, offset: 0 }
    }

    /// Feed faces `0..n` with units where `unit(face)`, the cursor's page = the face.
    fn build(n: u32, stride: usize, unit: impl Fn(u32) -> bool) -> (Checkpoints, u32) {
        let mut b = CheckpointBuilder::new(stride);
        let mut last = 0;
        for f in 0..n {
            b.face(f, cur(f), unit(f));
            if unit(f) {
                last = f;
            }
        }
        (b.finish(last).unwrap(), last)
    }

    #[test]
    fn skipping_faces_without_units_keeps_what_feeding_them_keeps() {
        let patterns: [&dyn Fn(u32) -> bool; 4] = [
            &|f| f % 3 != 0,
            &|f| f % 50 == 7,
            &|f| !(3..=9_990).contains(&f) || (5_000..5_100).contains(&f),
            &|f| f == 4_000,
        ];
        for (i, unit) in patterns.iter().enumerate() {
            for stride in [1, 8] {
                let mut one = CheckpointBuilder::new(stride);
                let mut skipped = CheckpointBuilder::new(stride);
                // The stream's cursor: its page counts the units placed so far.
                let (mut last, mut next, mut placed) = (0, 0, 0);
                for f in 0..10_000 {
                    one.face(f, cur(placed), unit(f));
                    if unit(f) {
                        skipped.skip(next, f, cur(placed));
                        skipped.face(f, cur(placed), true);
                        next = f + 1;
                        last = f;
                        placed += 1;
                    }
                }
                skipped.skip(next, 10_000, cur(placed));
                let (a, b) = (one.finish(last).unwrap(), skipped.finish(last).unwrap());
                assert_eq!(a.is_dense(), b.is_dense(), "pattern {i}, stride {stride}");
                for f in 0..=last {
                    let (x, y) = (a.before(f), b.before(f));
                    assert_eq!(
                        x.map(|(f, c)| (f, c.page)),
                        y.map(|(f, c)| (f, c.page)),
                        "{i}: {f}"
                    );
                }
            }
        }
    }

    #[test]
    fn dense_groups_stay_dense_and_find_every_stride() {
        let (c, _) = build(1000, 8, |f| f % 3 != 0);
        assert!(c.is_dense());
        assert_eq!(c.before(0), None, "before the first unit (face 1)");
        assert_eq!(c.before(1).map(|(f, p)| (f, p.page)), Some((1, 1)));
        assert_eq!(c.before(20).map(|(f, p)| (f, p.page)), Some((17, 17)));
        assert_eq!(c.first_face(), 1);
    }

    #[test]
    fn a_wide_span_with_few_units_goes_sparse_and_bounds_every_walk() {
        // Units at both ends of a million faces, and a dense patch in the middle.
        let unit = |f: u32| !(3..=999_990).contains(&f) || (500_000..500_100).contains(&f);
        let (c, last) = build(1_000_000, 8, unit);
        assert!(!c.is_dense());
        assert!(c.bytes() < 1000, "{} bytes", c.bytes());
        // From every unit's checkpoint, fewer than 8 units and no gap of 8 faces to walk.
        for f in (0..=last).filter(|&f| unit(f)) {
            let (from, p) = c.before(f).unwrap();
            assert_eq!(p.page, from);
            let units = (from..f).filter(|&x| unit(x)).count();
            assert!(units < 8, "face {f}: {units} units from {from}");
            let mut prev = from;
            for x in (from..=f).filter(|&x| unit(x)) {
                assert!(x - prev < 8, "face {f}: a gap {prev}..{x}");
                prev = x;
            }
        }
        assert_eq!(c.before(2), Some((0, cur(0))));
        assert_eq!(c.first_face(), 0);
    }

    #[test]
    fn a_group_without_units_has_no_checkpoints() {
        let mut b = CheckpointBuilder::new(8);
        for f in 0..100 {
            b.face(f, cur(f), false);
        }
        assert!(b.finish(0).is_none());
    }
}
