//! Plan execution on the CPU (docs/reference.md §3.5 steps 4–5) in one pass over output tiles, in parallel.

// The output [m, n] is cut into tiles of `rows` rows of A by a panel of W rows of B. A tile runs every split and chunk
// of the plan: the chunk's k positions are cut into pieces of whole blocks; for each piece the panel's codes are
// decoded into value and exponent planes (`piece` positions x W, padding and missing columns as zeros) and the tile's
// rows of A are read in place (a piece inside one run of k) or gathered with zero padding, then every row of the tile
// runs the block kernel against the panel. Blocks of trailing padding are skipped where they cannot change the
// accumulator. The running accumulators, the slow-chunk sums and the split partials of the tile live in per-tile
// scratch; at the end the partials are combined by the plan's scheme with the model's own `combine`. Tiles run in
// parallel (rayon), in waves of consecutive row blocks so that the scratch stays bounded by a few rows of the result.

use crate::kernel::{block_steps, product_blocks, Lane, Params, Path};
use crate::tables::{Lut, ZERO_EXP};
use mmaemu_model::plan::{combine, Plan, Scheme};
use mmaemu_model::{Operands, Preset};
use rayon::prelude::*;
use std::ops::Range;

/// Target length of a piece of a chunk (rounded to whole blocks): the panel planes of a piece (5 or 9 bytes
/// per position and output: 40 to 150 KB) stay in L1 or L2 while every row of the tile runs over them; 256
/// ran 1024^3 about 5 % faster than 128 and 512 on one thread (`mmaemu bench gemm --m 1024 --n 1024 --k 1024
/// --threads 1`, AMD EPYC with AVX-512).
const PIECE: usize = 256;

/// Most rows of A per tile: decoding a panel piece costs a few cycles per code, the kernel a fraction of a
/// cycle per product, so a decoded piece must serve hundreds of rows.
const MAX_ROWS: usize = 512;

/// Fewest rows of A per panel tile where M has them.
const MIN_ROWS: usize = 32;

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

    /// Products per block of the job's preset.
    pub fn nfma(&self) -> usize {
        self.p.nfma
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
            let run = |&(rb, cb): &(usize, usize)| tile(self, span(rb, rows, m), span(cb, cols, n));
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
    fn accumulate(&self, outputs: usize, piece_len: usize, piece: &mut impl Piece) -> Vec<f32> {
        let nsplit = self.splits.len();
        let mut acc = vec![0f32; outputs];
        let mut partials = vec![0f32; nsplit * outputs];
        for (s, chunks) in self.splits.iter().enumerate() {
            let part = &mut partials[s * outputs..(s + 1) * outputs];
            for chunk in chunks {
                acc.fill(0.0);
                for q0 in (0..chunk.len).step_by(piece_len) {
                    piece.run(self, chunk, q0, (q0 + piece_len).min(chunk.len), &mut acc);
                }
                if self.fast && chunks.len() == 1 {
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

/// The chains of a tile over one piece of a chunk (a trait rather than a closure so that it is inlined into
/// the level's `#[target_feature]` function with the rest of the tile).
trait Piece {
    /// Run the tile's chains over positions [q0, q1) of `chunk` from the running accumulators `acc`.
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]);
}

/// How the output is cut into tiles: `rows` rows of A by `cols` rows of B, `wave` row blocks at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Rows of A per tile.
    pub rows: usize,
    /// Rows of B (outputs of a row) per tile.
    pub cols: usize,
    /// Row blocks per wave (bounds the scratch of a wave to a few rows of the result).
    pub wave: usize,
}

impl Tiles {
    /// The tiles of panels of `w` outputs: up to MAX_ROWS rows per tile (so that a decoded panel piece
    /// serves many rows), fewer when there are too few tiles to keep every thread busy, but not below
    /// MIN_ROWS where M allows it (a piece decoded for a few rows costs more than it saves).
    pub fn panels(job: &Job, w: usize) -> Tiles {
        let panels = job.n.div_ceil(w);
        let want = 4 * job.threads();
        let row_blocks_needed = want.div_ceil(panels);
        let rows = job.m.div_ceil(row_blocks_needed).clamp(MIN_ROWS.min(job.m).max(1), MAX_ROWS);
        let wave = row_blocks_needed.clamp(1, job.m.div_ceil(rows));
        Tiles { rows, cols: w, wave }
    }
}

/// One panel tile with the kernel its job's path needs. `HT`: the level truncates in hardware (SSE4.1 and up).
#[inline(always)]
pub fn tile<const W: usize, const HT: bool>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match (job.p.path, job.p.late) {
        (Path::Narrow, _) => tile_with::<W, f32, false, HT>(job, rows, cols),
        (_, true) => tile_with::<W, f64, true, HT>(job, rows, cols),
        (_, false) => tile_with::<W, f64, false, HT>(job, rows, cols),
    }
}

/// One panel tile: rows `rows` of A against the panel `cols` of B (at most W rows), every split and chunk, with
/// the lanes along the panel's outputs. Returns `rows.len()` rows of `cols.len()` results.
#[inline(always)]
fn tile_with<const W: usize, L: Lane, const LATE: bool, const HT: bool>(
    job: &Job,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let nfma = job.p.nfma;
    let nr = rows.len();
    let (j0, ncols) = (cols.start, cols.len());
    let piece_len = nfma * (PIECE / nfma).max(1);
    let mut piece = PanelPiece::<W, L, LATE, HT> {
        rows: rows.clone(),
        ncols,
        j0,
        pv: vec![L::default(); piece_len * W],
        pe: vec![ZERO_EXP; piece_len * W],
        ga: vec![0u8; nr * piece_len],
    };
    let acc = job.accumulate(nr * W, piece_len, &mut piece);
    // Drop the padding columns of the panel.
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(W).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// The scratch of a panel tile: the decoded panel piece and the gathered rows of A.
struct PanelPiece<const W: usize, L, const LATE: bool, const HT: bool> {
    rows: Range<usize>,
    ncols: usize,
    j0: usize,
    pv: Vec<L>,
    pe: Vec<i8>,
    ga: Vec<u8>,
}

impl<const W: usize, L: Lane, const LATE: bool, const HT: bool> Piece for PanelPiece<W, L, LATE, HT> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (k, nfma, nr, ncols, j0) = (job.k, job.p.nfma, self.rows.len(), self.ncols, self.j0);
        let (pv, pe, ga) = (&mut self.pv, &mut self.pe, &mut self.ga);
        let len = q1 - q0;
        // Decode the panel's codes at this piece's positions; zeros at padding positions and in columns
        // past n.
        let real: usize = chunk.segments(q0, q1).map(|(_, kr)| kr.len()).sum();
        if real < len || ncols < W {
            pv[..len * W].fill(L::default());
            pe[..len * W].fill(ZERO_EXP);
        }
        for (off, kr) in chunk.segments(q0, q1) {
            for jj in 0..ncols {
                let brow = &job.b[(j0 + jj) * k..(j0 + jj + 1) * k];
                for (t, &code) in brow[kr.clone()].iter().enumerate() {
                    pv[(off + t) * W + jj] = L::value(&job.lb, code);
                    pe[(off + t) * W + jj] = job.lb.e[code as usize];
                }
            }
        }
        let nblk = len / nfma;
        let (pv, pe) = (&pv[..len * W], &pe[..len * W]);
        let accs = acc.chunks_exact_mut(W).filter_map(|c| <&mut [f32; W]>::try_from(c).ok());
        // The rows of A: read in place when the piece is one run of k, else gathered with padding.
        let single = chunk.segments(q0, q1).next().filter(|(off, kr)| *off == 0 && kr.len() == len);
        if let Some((_, kr)) = single {
            for (c, i) in accs.zip(self.rows.clone()) {
                let row = &job.a[i * k + kr.start..i * k + kr.end];
                block_steps::<W, L, LATE, HT>(row, nblk, &job.la, pv, pe, c, &job.p);
            }
        } else {
            gather_rows(job.a, k, self.rows.clone(), chunk, q0, q1, &mut ga[..nr * len]);
            for (r, c) in accs.enumerate() {
                block_steps::<W, L, LATE, HT>(&ga[r * len..(r + 1) * len], nblk, &job.la, pv, pe, c, &job.p);
            }
        }
    }
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

/// Rows `rows` of the [_, k] matrix `x` (format table `l`), decoded at positions [q0, q1) of a chunk into
/// `v` and `e`, row after row: straight from `x` when the piece is one run of k (`single`), else gathered
/// into `g` with zero padding first.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn decode_rows(
    (x, k, l): (&[u8], usize, &Lut),
    rows: Range<usize>,
    chunk: &ChunkPlan,
    q0: usize,
    q1: usize,
    single: &Option<Range<usize>>,
    g: &mut [u8],
    v: &mut [f32],
    e: &mut [i8],
) {
    let len = q1 - q0;
    let n = rows.len() * len;
    match single {
        Some(kr) => {
            for (t, i) in rows.enumerate() {
                let r = t * len..(t + 1) * len;
                l.decode(&x[i * k + kr.start..i * k + kr.end], &mut v[r.clone()], &mut e[r]);
            }
        }
        None => {
            gather_rows(x, k, rows, chunk, q0, q1, &mut g[..n]);
            l.decode(&g[..n], &mut v[..n], &mut e[..n]);
        }
    }
}

/// Chains interleaved by the product-lane kernel (see [`product_blocks`]).
const CHAINS: usize = 8;

/// Positions per piece of the product-lane tiling (whole blocks): the decoded rows of a piece (5 bytes per
/// position) stay in L1 while the tile's rows run over them.
const STRIP: usize = 512;

/// At most this many rows of A per product-lane tile run the AVX-512 step that decodes B's codes in registers;
/// it decodes them again for every row, so more rows run the step over rows of B decoded once per group. One
/// thread, `mmaemu bench gemm --m M --n 4096 --k 4096 --threads 1 --no-native` (AMD EPYC with AVX-512), codes
/// against decoded rows in GMAC/s: M = 1 3.1 vs 2.1, M = 2 3.7 vs 3.7, M = 4 4.7 vs 5.2, M = 16 5.2 vs 7.1.
const CODE_ROWS: usize = 2;

/// Ask for the next `len` codes of `rows` of B after a piece that is one run `single` of k: the tile reads them
/// when its other groups are done. Short pieces (slow accumulation's chunks of 128) leave the hardware prefetcher
/// too little of a stream: at one row of A, slow accumulation ran 20 % faster with this (`mmaemu bench gemm --m 1
/// --n 4096 --k 4096 --slow --threads 1 --no-native`, 2.2–2.9 against 3.1–3.6 GMAC/s, alternating builds).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_next(job: &Job, rows: Range<usize>, single: &Option<Range<usize>>, len: usize) {
    if let Some(kr) = single {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let k = job.k;
        for i in rows {
            let next = &job.b[i * k + kr.end..(i * k + kr.end + len).min((i + 1) * k)];
            // SAFETY: a prefetch is a hint that reads nothing architecturally; the address is inside `job.b`.
            next.iter().step_by(64).for_each(|x| unsafe { _mm_prefetch::<_MM_HINT_T0>(x as *const u8 as *const i8) });
        }
    }
}

/// Whether the product-lane kernel serves a job: the narrow path with a block of 16 or 32 products (ada,
/// hopper, and custom presets of those sizes).
pub fn products_serve(job: &Job) -> bool {
    job.p.path == Path::Narrow && matches!(job.p.nfma, 16 | 32)
}

/// One product-lane tile (see [`products_serve`]): rows `rows` of A against rows `cols` of B, every split and
/// chunk, with the lanes along each block's products. Returns `rows.len()` rows of `cols.len()` results.
/// `X86`: the block step's instructions ([`X86_NONE`], [`X86_AVX2`] or [`X86_AVX512`]; the caller is compiled for
/// them).
#[inline(always)]
pub fn strip_tile<const HT: bool, const X86: u8>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    match job.p.nfma {
        16 => strip_tile_with::<16, HT, X86>(job, rows, cols),
        _ => strip_tile_with::<32, HT, X86>(job, rows, cols),
    }
}

/// The portable block step ([`product_blocks`]).
pub const X86_NONE: u8 = 0;
/// The AVX2 block step over decoded rows of B (`x86::product_blocks`).
pub const X86_AVX2: u8 = 1;
/// The AVX-512 block step over the codes of B, decoded in registers (`x86::product_blocks_codes`), for tiles of
/// at most [`CODE_ROWS`] rows; AVX2's for more.
pub const X86_AVX512: u8 = 2;

#[inline(always)]
fn strip_tile_with<const NB: usize, const HT: bool, const X86: u8>(
    job: &Job,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let (nr, nc) = (rows.len(), cols.len());
    // Outputs rounded up to whole groups of CHAINS; the extra rows of B decode as zeros.
    let ncp = nc.div_ceil(CHAINS) * CHAINS;
    let piece_len = NB * (STRIP / NB);
    let mut piece = StripPiece::<NB, HT, X86> {
        rows: rows.clone(),
        cols: cols.clone(),
        ga: vec![0u8; nr * piece_len],
        av: vec![0f32; nr * piece_len],
        ae: vec![ZERO_EXP; nr * piece_len],
        gb: vec![0u8; CHAINS * piece_len],
        bv: vec![0f32; CHAINS * piece_len],
        be: vec![ZERO_EXP; CHAINS * piece_len],
        zeros: vec![0u8; piece_len],
    };
    let acc = job.accumulate(nr * ncp, piece_len, &mut piece);
    let mut out = Vec::with_capacity(nr * nc);
    acc.chunks_exact(ncp).for_each(|r| out.extend_from_slice(&r[..nc]));
    out
}

/// The scratch of a product-lane tile: the tile's rows of A and a group of rows of B, gathered and decoded.
struct StripPiece<const NB: usize, const HT: bool, const X86: u8> {
    rows: Range<usize>,
    cols: Range<usize>,
    ga: Vec<u8>,
    av: Vec<f32>,
    ae: Vec<i8>,
    gb: Vec<u8>,
    bv: Vec<f32>,
    be: Vec<i8>,
    /// A piece of zero codes: the rows of a group past the tile.
    zeros: Vec<u8>,
}

impl<const NB: usize, const HT: bool, const X86: u8> Piece for StripPiece<NB, HT, X86> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (nr, nc) = (self.rows.len(), self.cols.len());
        let ncp = nc.div_ceil(CHAINS) * CHAINS;
        let len = q1 - q0;
        let nblk = len / NB;
        let single = chunk.segments(q0, q1).next().filter(|(off, kr)| *off == 0 && kr.len() == len).map(|(_, kr)| kr);
        let (at, bt) = ((job.a, job.k, &job.la), (job.b, job.k, &job.lb));
        decode_rows(at, self.rows.clone(), chunk, q0, q1, &single, &mut self.ga, &mut self.av, &mut self.ae);
        #[cfg(target_arch = "x86_64")]
        if X86 == X86_AVX512 && nr <= CODE_ROWS {
            self.run_codes(job, chunk, q0, q1, &single, acc);
            return;
        }
        // A group of CHAINS rows of B at a time, decoded just before use (rows past the tile are zeros).
        for g in (0..ncp).step_by(CHAINS) {
            let real = CHAINS.min(nc - g);
            let brows = self.cols.start + g..self.cols.start + g + real;
            decode_rows(bt, brows, chunk, q0, q1, &single, &mut self.gb, &mut self.bv, &mut self.be);
            self.bv[real * len..CHAINS * len].fill(0.0);
            self.be[real * len..CHAINS * len].fill(ZERO_EXP);
            let bvs: [&[f32]; CHAINS] = std::array::from_fn(|t| &self.bv[t * len..(t + 1) * len]);
            let bes: [&[i8]; CHAINS] = std::array::from_fn(|t| &self.be[t * len..(t + 1) * len]);
            for r in 0..nr {
                let Ok(c) = <&mut [f32; CHAINS]>::try_from(&mut acc[r * ncp + g..r * ncp + g + CHAINS]) else {
                    continue;
                };
                let (a, e) = (&self.av[r * len..(r + 1) * len], &self.ae[r * len..(r + 1) * len]);
                // (An AVX-512 form of this step, over decoded rows, ran M = 16 about 10 % slower than AVX2's:
                // `mmaemu bench gemm --m 16 --n 4096 --k 4096 --threads 1`, hopper and ada.)
                #[cfg(target_arch = "x86_64")]
                if X86 == X86_AVX2 || X86 == X86_AVX512 {
                    // SAFETY: `X86_AVX2` and `X86_AVX512` are passed only by the tiles of the AVX2 and AVX-512
                    // levels, which exist only after `is_x86_feature_detected!` reported AVX2.
                    unsafe { crate::x86::product_blocks::<NB>(a, e, bvs, bes, nblk, c, &job.p) };
                    continue;
                }
                product_blocks::<NB, CHAINS, HT>(a, e, bvs, bes, nblk, c, &job.p);
            }
        }
    }
}

impl<const NB: usize, const HT: bool, const X86: u8> StripPiece<NB, HT, X86> {
    /// The groups of CHAINS rows of B over one piece with the AVX-512 block step, which reads B's codes: in
    /// place when the piece is one run of k (`single`), else gathered with zero padding; the tile's rows of A
    /// are decoded already.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn run_codes(
        &mut self,
        job: &Job,
        chunk: &ChunkPlan,
        q0: usize,
        q1: usize,
        single: &Option<Range<usize>>,
        acc: &mut [f32],
    ) {
        let (nr, nc, k) = (self.rows.len(), self.cols.len(), job.k);
        let ncp = nc.div_ceil(CHAINS) * CHAINS;
        let len = q1 - q0;
        let nblk = len / NB;
        let e4m3 = job.lb.format() == mmaemu_model::Format::E4m3;
        for g in (0..ncp).step_by(CHAINS) {
            let real = CHAINS.min(nc - g);
            let brows = self.cols.start + g..self.cols.start + g + real;
            if single.is_none() {
                gather_rows(job.b, k, brows.clone(), chunk, q0, q1, &mut self.gb[..real * len]);
            }
            let codes: [&[u8]; CHAINS] = std::array::from_fn(|t| match single {
                _ if t >= real => &self.zeros[..len],
                Some(kr) => &job.b[(brows.start + t) * k + kr.start..(brows.start + t) * k + kr.end],
                None => &self.gb[t * len..(t + 1) * len],
            });
            prefetch_next(job, brows.clone(), single, len);
            for r in 0..nr {
                let Ok(c) = <&mut [f32; CHAINS]>::try_from(&mut acc[r * ncp + g..r * ncp + g + CHAINS]) else {
                    continue;
                };
                let (a, e) = (&self.av[r * len..(r + 1) * len], &self.ae[r * len..(r + 1) * len]);
                // SAFETY: `X86_AVX512` is passed only by the tiles of the AVX-512 level, which exists only after
                // `is_x86_feature_detected!` reported AVX-512F/BW/VL, AVX2 and F16C.
                unsafe {
                    if e4m3 {
                        crate::x86::product_blocks_codes::<NB, true>(a, e, codes, nblk, c, &job.p)
                    } else {
                        crate::x86::product_blocks_codes::<NB, false>(a, e, codes, nblk, c, &job.p)
                    }
                }
            }
        }
    }
}
