//! The layout of K in a plan (docs/reference.md §3): chunks — one chain's k ranges and its zero padding — and
//! splits, and the cut of an index list into chunks. Plans (`plan.rs`) and split rules (`rule.rs`) both build them.

// Chunks are lists of k ranges; a list holding one range (`vec![0..k]`) is meant, not the indices.
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;

/// One chain from +0: the real k indices (as ranges, in order), then zero padding up to `len` elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Real k indices, in chain order.
    pub ranges: Vec<Range<usize>>,
    /// Length of the chain including the trailing zero padding.
    pub len: usize,
}

impl Chunk {
    /// Number of real k indices.
    pub fn real_len(&self) -> usize {
        self.ranges.iter().map(|r| r.len()).sum()
    }
}

/// One split: its chunks, whose results are added serially from +0 in fp32 when there is more than one
/// (slow accumulation); a split without chunks has the partial +0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The chunks, in the order their results are added.
    pub chunks: Vec<Chunk>,
}

/// Cut an index list into consecutive chunks of `chunk` elements (the last one shorter if `len` is not a
/// multiple). The list is `ranges` (real indices, in chain order) followed by zero padding up to `len`;
/// every range but the last one is a whole tile, so the real indices are packed at the front. Every range is
/// nonempty: the callers pass `0..k` with k > 0, or tiles below K (those at or past K are left out).
pub(crate) fn cut(ranges: &[Range<usize>], len: usize, chunk: usize) -> Vec<Chunk> {
    debug_assert!(ranges.iter().all(|r| !r.is_empty()), "cut: an empty range");
    let mut out = Vec::new();
    let mut pos = 0; // position in the split's index list
    let mut it = ranges.iter().cloned().peekable();
    let mut cur: Option<Range<usize>> = it.next();
    while pos < len {
        let end = (pos + chunk).min(len);
        let mut rs = Vec::new();
        let mut filled = pos;
        while filled < end {
            match cur.take() {
                Some(r) => {
                    let take = (end - filled).min(r.len());
                    rs.push(r.start..r.start + take);
                    filled += take;
                    if take < r.len() {
                        cur = Some(r.start + take..r.end);
                    } else {
                        cur = it.next();
                    }
                }
                None => break, // the rest of this chunk is padding
            }
        }
        out.push(Chunk { ranges: rs, len: end - pos });
        pos = end;
    }
    out
}

/// An upper bound of the bytes of a plan of `splits` splits of `chunks` chunks each, whose longest chain is `len`
/// elements: the splits, their chunks (a range each), and one row of A and of B gathered over that chain; None when
/// it overflows 64 bits. Computed before anything is built, so that a size a file or flag makes huge is refused
/// rather than allocated.
pub(crate) fn plan_bytes(splits: u64, chunks: u64, len: u64) -> Option<u64> {
    let per_chunk = (std::mem::size_of::<Chunk>() + std::mem::size_of::<Range<usize>>()) as u64;
    let per_split = (std::mem::size_of::<Split>() as u64).checked_add(chunks.checked_mul(per_chunk)?)?;
    splits.checked_mul(per_split)?.checked_add(len.checked_mul(2)?)
}
