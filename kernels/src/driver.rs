//! Plan execution on the CPU (docs/reference.md §3.5 steps 4–5) in one pass over output tiles, in parallel.

// The output [m, n] is cut into tiles of `rows` rows of A by a panel of W rows of B. A tile runs every split and chunk
// of the plan: the chunk's k positions are cut into pieces of whole blocks; for each piece the panel's codes are
// decoded into value and exponent planes (`piece` positions x W, padding and missing columns as zeros) and the tile's
// rows of A are read in place (a piece inside one run of k) or gathered with zero padding, then every row of the tile
// runs the block kernel against the panel. Blocks of trailing padding are skipped where they cannot change the
// accumulator. The running accumulators, the slow-chunk sums and the split partials of the tile live in per-tile
// scratch; at the end the partials are combined by the plan's scheme with the model's own `combine`. Tiles run in
// parallel (rayon), in waves of consecutive row blocks so that the scratch stays bounded by a few rows of the result.

use crate::kernel::{block_steps, Lane, Params, Path};
use crate::tables::{Lut, ZERO_EXP};
use mmaemu_model::plan::{combine, Plan, Scheme};
use mmaemu_model::{Operands, Preset};
use rayon::prelude::*;
use std::ops::Range;

/// Target length of a piece of a chunk (rounded to whole blocks): the panel planes of a piece (5 or 9 bytes
/// per position and output) stay in L1 while every row of the tile runs over them.
const PIECE: usize = 128;

/// Most rows of A per tile: decoding a panel piece costs a few cycles per code, the kernel a fraction of a
/// cycle per product, so a decoded piece must serve hundreds of rows.
const MAX_ROWS: usize = 512;

/// Below this many multiply-adds (about 20 µs of one core) the tiles run on the calling thread: waking the
/// pool's threads and waiting for them costs more than the work.
const SERIAL_MACS: usize = 1 << 18;

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

/// Everything a tile needs: the finite operands, the decoded tables, the kernel parameters and the plan.
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
        }
    }

    /// The kernel path of the job's preset.
    pub fn path(&self) -> Path {
        self.p.path
    }

    /// Run every tile with `tile(job, rows, panel)` (a level's tile function for panels of `w` rows of B)
    /// and assemble the [m, n] result.
    pub fn run(&self, w: usize, tile: impl Fn(&Job, Range<usize>, usize) -> Vec<f32> + Sync) -> Vec<f32> {
        let (m, n) = (self.m, self.n);
        let mut out = vec![0f32; m * n];
        if m == 0 || n == 0 {
            return out;
        }
        let panels = n.div_ceil(w);
        // A GEMM this small takes less time than handing its tiles to other threads: one thread runs it.
        let threads = if m.saturating_mul(n).saturating_mul(self.k) < SERIAL_MACS {
            1
        } else {
            rayon::current_num_threads().max(1)
        };
        // Rows per tile: up to MAX_ROWS (so a decoded panel piece serves many rows), fewer when there are
        // too few tiles to keep every thread busy.
        let want = 4 * threads;
        let row_blocks_needed = want.div_ceil(panels);
        let rows = m.div_ceil(row_blocks_needed).clamp(1, MAX_ROWS);
        let row_blocks = m.div_ceil(rows);
        // A wave: enough consecutive row blocks to give every thread work.
        let wave = row_blocks_needed.clamp(1, row_blocks);
        for w0 in (0..row_blocks).step_by(wave) {
            let tasks: Vec<(usize, usize)> =
                (w0..(w0 + wave).min(row_blocks)).flat_map(|rb| (0..panels).map(move |p| (rb, p))).collect();
            let run = |&(rb, p): &(usize, usize)| tile(self, rb * rows..((rb + 1) * rows).min(m), p);
            let tiles: Vec<Vec<f32>> =
                if threads == 1 { tasks.iter().map(run).collect() } else { tasks.par_iter().map(run).collect() };
            for (&(rb, p), t) in tasks.iter().zip(&tiles) {
                let (j0, j1) = (p * w, ((p + 1) * w).min(n));
                for (r, i) in (rb * rows..((rb + 1) * rows).min(m)).enumerate() {
                    out[i * n + j0..i * n + j1].copy_from_slice(&t[r * w..r * w + (j1 - j0)]);
                }
            }
        }
        out
    }
}

/// One tile with the kernel its job's path needs. `HT`: the level truncates in hardware (SSE4.1 and up).
#[inline(always)]
pub fn tile<const W: usize, const HT: bool>(job: &Job, rows: Range<usize>, panel: usize) -> Vec<f32> {
    match (job.p.path, job.p.late) {
        (Path::Narrow, _) => tile_with::<W, f32, false, HT>(job, rows, panel),
        (_, true) => tile_with::<W, f64, true, HT>(job, rows, panel),
        (_, false) => tile_with::<W, f64, false, HT>(job, rows, panel),
    }
}

/// One tile: rows `rows` of A against rows `panel * W ..` of B, every split and chunk; returns the combined
/// accumulators, `rows.len()` rows of W (columns past n are padding).
#[inline(always)]
fn tile_with<const W: usize, L: Lane, const LATE: bool, const HT: bool>(
    job: &Job,
    rows: Range<usize>,
    panel: usize,
) -> Vec<f32> {
    let (k, nfma) = (job.k, job.p.nfma);
    let nr = rows.len();
    let j0 = panel * W;
    let cols = W.min(job.n - j0);
    let piece_len = nfma * (PIECE / nfma).max(1);
    let nsplit = job.splits.len();

    let mut pv = vec![L::default(); piece_len * W];
    let mut pe = vec![ZERO_EXP; piece_len * W];
    let mut ga = vec![0u8; nr * piece_len];
    let mut cst = vec![[0f32; W]; nr];
    let mut partials = vec![[0f32; W]; nsplit * nr];

    for (s, chunks) in job.splits.iter().enumerate() {
        let part = &mut partials[s * nr..(s + 1) * nr];
        for chunk in chunks {
            cst.iter_mut().for_each(|c| *c = [0.0; W]);
            for q0 in (0..chunk.len).step_by(piece_len) {
                let q1 = (q0 + piece_len).min(chunk.len);
                let len = q1 - q0;
                // Decode the panel's codes at this piece's positions; zeros at padding positions and in
                // columns past n.
                let real: usize = chunk.segments(q0, q1).map(|(_, kr)| kr.len()).sum();
                if real < len || cols < W {
                    pv[..len * W].fill(L::default());
                    pe[..len * W].fill(ZERO_EXP);
                }
                for (off, kr) in chunk.segments(q0, q1) {
                    for jj in 0..cols {
                        let brow = &job.b[(j0 + jj) * k..(j0 + jj + 1) * k];
                        for (t, &code) in brow[kr.clone()].iter().enumerate() {
                            pv[(off + t) * W + jj] = L::value(&job.lb, code);
                            pe[(off + t) * W + jj] = job.lb.e[code as usize];
                        }
                    }
                }
                let nblk = len / nfma;
                let (pv, pe) = (&pv[..len * W], &pe[..len * W]);
                // The rows of A: read in place when the piece is one run of k, else gathered with padding.
                let single = chunk.segments(q0, q1).next().filter(|(off, kr)| *off == 0 && kr.len() == len);
                if let Some((_, kr)) = single {
                    for (c, i) in cst.iter_mut().zip(rows.clone()) {
                        let row = &job.a[i * k + kr.start..i * k + kr.end];
                        block_steps::<W, L, LATE, HT>(row, nblk, &job.la, pv, pe, c, &job.p);
                    }
                } else {
                    ga[..nr * len].fill(0);
                    for (off, kr) in chunk.segments(q0, q1) {
                        for (r, i) in rows.clone().enumerate() {
                            ga[r * len + off..r * len + off + kr.len()]
                                .copy_from_slice(&job.a[i * k + kr.start..i * k + kr.end]);
                        }
                    }
                    for (r, c) in cst.iter_mut().enumerate() {
                        block_steps::<W, L, LATE, HT>(&ga[r * len..(r + 1) * len], nblk, &job.la, pv, pe, c, &job.p);
                    }
                }
            }
            if job.fast && chunks.len() == 1 {
                // Fast: the split's partial is its single chain.
                part.copy_from_slice(&cst);
            } else {
                // Slow: ((+0 + c_0) + c_1) + ... in fp32.
                for (p, c) in part.iter_mut().zip(&cst) {
                    for j in 0..W {
                        p[j] += c[j];
                    }
                }
            }
        }
    }

    let mut out = vec![0f32; nr * W];
    if nsplit == 1 {
        for (o, p) in out.chunks_exact_mut(W).zip(&partials) {
            o.copy_from_slice(p);
        }
    } else {
        let mut ps = vec![0f32; nsplit];
        for r in 0..nr {
            for j in 0..cols {
                for (s, x) in ps.iter_mut().enumerate() {
                    *x = partials[s * nr + r][j];
                }
                out[r * W + j] = combine(job.scheme, &ps);
            }
        }
    }
    out
}
