//! Plan execution on the CPU (docs/reference.md §3.5 steps 4–5) in one pass over output tiles, in parallel: the
//! jobs, the chunk walk and the reading of A's rows here; the tiling decisions in `driver/tiles.rs`, the executors
//! of panel tiles in `driver/panel.rs` and `driver/fused_panel.rs`, of product-lane tiles in `driver/products.rs`; the
//! block-wise scaled jobs in `driver/blockwise.rs`.

// The output [m, n] is cut into tiles of `rows` rows of A by a panel of W rows of B. A tile runs every split and chunk
// of the plan: the chunk's k positions are cut into pieces of whole blocks; for each piece the panel's codes are
// decoded into value and exponent planes (`piece` positions x W, padding and missing columns as zeros) and the tile's
// rows of A are read in place (a piece inside one run of k) or gathered with zero padding, then every row of the tile
// runs the block kernel against the panel. Blocks of trailing padding are skipped where they cannot change the
// accumulator. The running accumulators, the slow-chunk sums and the split partials of the tile live in per-tile
// scratch; at the end the partials are combined by the plan's scheme with the model's own `combine`. Tiles run in
// parallel (rayon), in waves of consecutive row blocks so that the scratch stays bounded by a few rows of the result.

use crate::kernel::{Params, Path};
use crate::tables::Lut;
use mmaemu_model::interrupt::Interrupt;
use mmaemu_model::plan::{combine, Plan, Scheme};
use mmaemu_model::{Operands, Preset};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

mod blockwise;
mod fused_panel;
mod panel;
mod products;
mod tiles;
mod wide_panel;
mod wide_products;
pub use blockwise::blockwise_chains;
use blockwise::BlockScales;
#[cfg(target_arch = "x86_64")]
pub use fused_panel::tile_fused;
pub use fused_panel::vbmi;
pub use panel::tile;
pub use products::{strip_tile, X86_AVX2, X86_AVX512, X86_NONE};
use tiles::SERIAL_MACS;
pub use tiles::{avx2_fused, products_serve, reads_b_codes, Tiles};
pub(crate) use tiles::{piece_positions, whole_blocks, GROUP_PIECE, WIDE_PIECE};
#[cfg(target_arch = "x86_64")]
pub use wide_panel::tile_wide;
#[cfg(target_arch = "x86_64")]
pub use wide_panel::tile_wide_avx2;
pub use wide_panel::wide_panels;
pub use wide_panel::wide_panels_avx2;

/// One chunk (one chain from +0): its real k ranges with their positions in the chain, and the length of
/// chain that is run, in whole blocks (the positions past the real ones are zero padding).
#[derive(Clone, Debug)]
pub struct ChunkPlan {
    ranges: Vec<(usize, Range<usize>)>,
    len: usize,
}

impl ChunkPlan {
    /// A chunk of `len` positions whose real indices are `ranges`. When `skip_padding`, the blocks made
    /// only of trailing padding are left out: they leave the accumulator unchanged (see
    /// [`Params::zero_block_is_identity`]).
    fn new(ranges: &[Range<usize>], len: usize, nfma: usize, skip_padding: bool) -> ChunkPlan {
        let mut pos = 0;
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            if !r.is_empty() {
                out.push((pos, r.clone()));
                pos += r.len();
            }
        }
        let run = if skip_padding { pos } else { len };
        ChunkPlan { ranges: out, len: run.div_ceil(nfma) * nfma }
    }

    /// The real k indices at chain positions [q0, q1): (offset from q0, k range) pairs.
    fn segments(&self, q0: usize, q1: usize) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
        self.ranges.iter().filter_map(move |(pos, r)| {
            let lo = q0.max(*pos);
            let hi = q1.min(pos + r.len());
            (lo < hi).then(|| (lo - q0, r.start + (lo - pos)..r.start + (hi - pos)))
        })
    }
}

/// Everything a tile needs: the operands (finite, or B watched), the decoded tables, the kernel parameters and the
/// plan.
pub struct Job<'a> {
    a: &'a [u8],
    b: &'a [u8],
    m: usize,
    n: usize,
    k: usize,
    la: Lut,
    lb: Lut,
    p: Params,
    splits: Vec<Vec<ChunkPlan>>,
    fast: bool,
    scheme: Scheme,
    /// B was not scanned for non-finite codes: the block step that reads B's codes sets this when it meets one
    /// (its results are then garbage, and the caller discards them).
    watch: Option<&'a AtomicBool>,
    /// The calling thread's interrupt flag, captured when the job is made: tiles after it is set are skipped.
    interrupt: Interrupt,
    /// Block-wise scaling: each chunk's chains scaled per output before they are added (one split of slow chunks).
    scales: Option<BlockScales<'a>>,
}

impl<'a> Job<'a> {
    /// The job of a plan over finite operands.
    pub fn new(preset: &Preset, plan: &Plan, ops: &Operands<'a>) -> Job<'a> {
        let p = Params::new(preset);
        let splits = plan
            .splits()
            .iter()
            .map(|s| {
                s.chunks.iter().map(|c| ChunkPlan::new(&c.ranges, c.len, p.nfma, p.zero_block_is_identity)).collect()
            })
            .collect();
        Job {
            a: ops.a,
            b: ops.b,
            m: ops.m,
            n: ops.n,
            k: ops.k,
            la: Lut::new(ops.fa),
            lb: Lut::new(ops.fb),
            p,
            splits,
            fast: plan.fast(),
            scheme: plan.split().scheme(),
            watch: None,
            interrupt: Interrupt::current(),
            scales: None,
        }
    }

    /// The job of `m * n` plain chains of length `k` from +0 (one split, one chunk over 0..k).
    pub fn chains(preset: &Preset, ops: &Operands<'a>) -> Job<'a> {
        let p = Params::new(preset);
        let l = ops.k;
        Job {
            a: ops.a,
            b: ops.b,
            m: ops.m,
            n: ops.n,
            k: l,
            la: Lut::new(ops.fa),
            lb: Lut::new(ops.fb),
            p,
            splits: vec![vec![ChunkPlan::new(std::slice::from_ref(&(0..l)), l, p.nfma, p.zero_block_is_identity)]],
            fast: true,
            scheme: Scheme::None,
            watch: None,
            interrupt: Interrupt::current(),
            scales: None,
        }
    }

    /// The job with B unscanned: the step over B's codes records in `seen` whether it met a non-finite code
    /// (see [`reads_b_codes`] for the product-lane jobs whose every code of B it reads; the fused panel tile reads
    /// every code of B as it decodes the pieces of its panel, `FusedPiece`).
    pub fn watching(self, seen: &'a AtomicBool) -> Job<'a> {
        Job { watch: Some(seen), ..self }
    }

    /// Whether B is watched (see [`Job::watching`]) and `codes`, B's codes as a tile moved them, hold a non-finite
    /// one: the check of the pieces that no decoding reports on.
    pub(crate) fn nonfinite_in_watched(&self, codes: &[u8]) -> bool {
        self.watch.is_some() && self.lb.format().any_nonfinite(codes)
    }

    /// Record that the step over B's codes met a non-finite code (see [`Job::watching`]).
    pub(crate) fn saw_nonfinite_b(&self) {
        if let Some(w) = self.watch {
            w.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the rest of the job's tiles are not needed: the call was interrupted, or the watched B holds a
    /// non-finite code (the caller then runs the plan again over replaced codes).
    #[inline]
    fn stopped(&self) -> bool {
        self.interrupt.requested() || self.watch.is_some_and(|w| w.load(Ordering::Relaxed))
    }

    /// The kernel path of the job's preset.
    pub fn path(&self) -> Path {
        self.p.path
    }

    /// Products per block of the job's preset.
    pub fn nfma(&self) -> usize {
        self.p.nfma
    }

    /// The preset runs on the narrow path with room for the AVX-512 panel step's bias ([`Params::biased`]).
    pub fn biased(&self) -> bool {
        self.p.biased
    }

    /// The preset runs on the wide path with the panel step that sums in i32 lanes ([`Params::int32`]).
    pub fn int32(&self) -> bool {
        self.p.int32
    }

    /// The codes of the panel `cols` of B (at most W rows) at positions [q0, q1) of the first chunk, position-major
    /// with zero codes at padding positions and in the columns past the panel's: for the block-scaled panels of
    /// `crate::scaled`, whose jobs are [`Job::chains`] (one chunk over K), moved as the panels of the level `x86`
    /// ([`X86_NONE`], [`X86_AVX2`] or [`X86_AVX512`]) move them.
    pub(crate) fn chain_panel_codes<const W: usize>(
        &self,
        q0: usize,
        q1: usize,
        cols: Range<usize>,
        pc: &mut [u8],
        x86: u8,
    ) {
        if let Some(chunk) = self.splits.first().and_then(|s| s.first()) {
            panel::move_codes::<W>(self, chunk, (q0, q1), cols, pc, x86);
        }
    }

    /// M: rows of A.
    pub fn m(&self) -> usize {
        self.m
    }

    /// N: rows of B.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Run every tile of `rows` rows of A by `cols` rows of B with `tile(job, rows, cols)` (it returns the
    /// tile's `rows.len()` rows of `cols.len()` results) and assemble the [m, n] result. The tiles run in
    /// parallel, in waves of consecutive row blocks.
    pub fn run(&self, tiles: Tiles, tile: impl Fn(&Job, Range<usize>, Range<usize>) -> Vec<f32> + Sync) -> Vec<f32> {
        let (m, n) = (self.m, self.n);
        let mut out = vec![0f32; m * n];
        if m == 0 || n == 0 {
            return out;
        }
        let Tiles { rows, cols, wave } = tiles;
        let (row_blocks, col_blocks) = (m.div_ceil(rows), n.div_ceil(cols));
        let threads = self.threads();
        for w0 in (0..row_blocks).step_by(wave.max(1)) {
            let tasks: Vec<(usize, usize)> = (w0..(w0 + wave.max(1)).min(row_blocks))
                .flat_map(|rb| (0..col_blocks).map(move |cb| (rb, cb)))
                .collect();
            let span = |b: usize, size: usize, end: usize| b * size..((b + 1) * size).min(end);
            if self.stopped() {
                break;
            }
            // A relaxed load or two per tile: an interrupted call, or one whose watched B holds a non-finite code,
            // skips the rest (its caller discards the result).
            let run = |&(rb, cb): &(usize, usize)| {
                let (rr, cc) = (span(rb, rows, m), span(cb, cols, n));
                if self.stopped() {
                    return vec![0f32; rr.len() * cc.len()];
                }
                tile(self, rr, cc)
            };
            let results: Vec<Vec<f32>> =
                if threads == 1 { tasks.iter().map(run).collect() } else { tasks.par_iter().map(run).collect() };
            for (&(rb, cb), t) in tasks.iter().zip(&results) {
                let (rr, cc) = (span(rb, rows, m), span(cb, cols, n));
                for (r, i) in rr.enumerate() {
                    out[i * n + cc.start..i * n + cc.end].copy_from_slice(&t[r * cc.len()..(r + 1) * cc.len()]);
                }
            }
        }
        out
    }

    /// The threads the tiles run on: one for a GEMM so small that handing tiles to other threads costs more
    /// than the work, else the pool's.
    pub fn threads(&self) -> usize {
        if self.m.saturating_mul(self.n).saturating_mul(self.k) < SERIAL_MACS {
            1
        } else {
            rayon::current_num_threads().max(1)
        }
    }

    /// Every split and chunk of the plan over one tile of `outputs` chains: `piece(chunk, q0, q1, acc)` runs the
    /// tile's chains over positions [q0, q1) of a chunk (pieces of `piece_len`, whole blocks), from the running
    /// accumulators `acc`. The chunks' results are kept (fast) or added in fp32 (slow), and the partials of the
    /// splits combined by the plan's scheme with the model's own `combine`. Always inlined: the pieces must be
    /// compiled inside the level's `#[target_feature]` function.
    #[inline(always)]
    fn accumulate(&self, tile: &TileOutputs, piece_len: usize, piece: &mut impl Piece) -> Vec<f32> {
        let outputs = tile.len();
        let nsplit = self.splits.len();
        let mut acc = vec![0f32; outputs];
        let mut partials = vec![0f32; nsplit * outputs];
        for (s, chunks) in self.splits.iter().enumerate() {
            let part = &mut partials[s * outputs..(s + 1) * outputs];
            let whole = self.fast && chunks.len() == 1 || self.scales.is_some();
            let done = if whole { 0 } else { piece.run_chunks(self, chunks, part) };
            for (t, chunk) in chunks.iter().enumerate().skip(done) {
                if self.scales.is_none() {
                    acc.fill(0.0);
                }
                for q0 in (0..chunk.len).step_by(piece_len) {
                    piece.run(self, chunk, q0, (q0 + piece_len).min(chunk.len), &mut acc);
                }
                if let Some(scales) = &self.scales {
                    // Block-wise: part + c_t · (sa · sb) in fp32, the accumulators left at +0 for the next block.
                    scales.add(tile, t, &mut acc, part);
                } else if self.fast && chunks.len() == 1 {
                    // Fast: the split's partial is its single chain.
                    part.copy_from_slice(&acc);
                } else {
                    // Slow: ((+0 + c_0) + c_1) + ... in fp32.
                    part.iter_mut().zip(&acc).for_each(|(p, c)| *p += c);
                }
            }
        }
        if nsplit == 1 {
            return partials;
        }
        let mut ps = vec![0f32; nsplit];
        (0..outputs)
            .map(|o| {
                ps.iter_mut().enumerate().for_each(|(s, x)| *x = partials[s * outputs + o]);
                combine(self.scheme, &ps)
            })
            .collect()
    }
}

/// A tile's outputs as its executor lays them out: `rows` of A by `cols` of B, `width` to a row of the tile (the
/// lanes past `cols.len()` are padding).
pub(crate) struct TileOutputs {
    rows: Range<usize>,
    cols: Range<usize>,
    width: usize,
}

impl TileOutputs {
    fn new(rows: &Range<usize>, cols: &Range<usize>, width: usize) -> TileOutputs {
        TileOutputs { rows: rows.clone(), cols: cols.clone(), width }
    }

    /// Outputs in all, padding included.
    fn len(&self) -> usize {
        self.rows.len() * self.width
    }
}

/// The chains of a tile over one piece of a chunk (a trait rather than a closure so that it is inlined into
/// the level's `#[target_feature]` function with the rest of the tile).
trait Piece {
    /// Run the tile's chains over positions [q0, q1) of `chunk` from the running accumulators `acc`.
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]);

    /// Run the first chunks of one split at once where the piece can, each chain from +0, their results added in
    /// fp32 into `part` (which holds +0) in the order of `chunks`, as [`Job::accumulate`] adds them; returns how
    /// many (0: none, and nothing written). The executor runs the rest one by one.
    fn run_chunks(&mut self, _job: &Job, _chunks: &[ChunkPlan], _part: &mut [f32]) -> usize {
        0
    }
}

/// A tile's rows of A at positions [q0, q1) of a chunk, as codes and the stride between rows (row r is
/// `codes[r * stride..][..q1 - q0]`): read in place when the piece is one run of k, else gathered with zero padding
/// into `ga` (row after row, stride q1 - q0).
#[inline(always)]
fn rows_of_a<'x>(
    job: &'x Job,
    rows: Range<usize>,
    chunk: &ChunkPlan,
    q0: usize,
    q1: usize,
    ga: &'x mut [u8],
) -> (&'x [u8], usize) {
    let len = q1 - q0;
    match one_run(chunk, q0, q1) {
        Some(kr) => (job.a.get(rows.start * job.k + kr.start..).unwrap_or_default(), job.k),
        None => {
            gather_rows(job.a, job.k, rows, chunk, q0, q1, ga);
            (ga, len)
        }
    }
}

/// The run of k that positions [q0, q1) of a chunk are, where they are one (no padding, no seam between segments).
#[inline(always)]
fn one_run(chunk: &ChunkPlan, q0: usize, q1: usize) -> Option<Range<usize>> {
    chunk.segments(q0, q1).next().filter(|(off, kr)| *off == 0 && kr.len() == q1 - q0).map(|(_, kr)| kr)
}

/// The codes of `rows` of a [_, k] matrix at positions [q0, q1) of a chunk, row after row, with zeros at the
/// padding positions.
#[inline(always)]
fn gather_rows(x: &[u8], k: usize, rows: Range<usize>, chunk: &ChunkPlan, q0: usize, q1: usize, out: &mut [u8]) {
    let len = q1 - q0;
    if chunk.segments(q0, q1).map(|(_, kr)| kr.len()).sum::<usize>() < len {
        out.fill(0);
    }
    for (off, kr) in chunk.segments(q0, q1) {
        for (r, i) in rows.clone().enumerate() {
            out[r * len + off..r * len + off + kr.len()].copy_from_slice(&x[i * k + kr.start..i * k + kr.end]);
        }
    }
}
