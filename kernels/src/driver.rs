//! Plan execution on the CPU (docs/reference.md §3.5 steps 4–5) in one pass over output tiles, in parallel: the
//! jobs, the chunk walk and the panel tiling here, the product-lane tiling in `driver/products.rs`.

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
use std::sync::atomic::{AtomicBool, Ordering};

mod products;
pub use products::{products_serve, reads_b_codes, strip_tile, X86_AVX2, X86_AVX512, X86_NONE};

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
        }
    }

    /// The job with B unscanned: the step over B's codes records in `seen` whether it met a non-finite code
    /// (see [`reads_b_codes`] for the product-lane jobs whose every code of B it reads; the fused panel tile reads
    /// every code of B as it decodes the pieces of its panel, `FusedPiece`).
    pub fn watching(self, seen: &'a AtomicBool) -> Job<'a> {
        Job { watch: Some(seen), ..self }
    }

    /// Record that the step over B's codes met a non-finite code (see [`Job::watching`]).
    fn saw_nonfinite_b(&self) {
        if let Some(w) = self.watch {
            w.store(true, Ordering::Relaxed);
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

    /// The preset runs on the narrow path with room for the AVX-512 panel step's bias ([`Params::biased`]).
    pub fn biased(&self) -> bool {
        self.p.biased
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
            let done = if self.fast && chunks.len() == 1 { 0 } else { piece.run_chunks(self, chunks, part) };
            for chunk in &chunks[done..] {
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

    /// Run the first chunks of one split at once where the piece can, each chain from +0, their results added in
    /// fp32 into `part` (which holds +0) in the order of `chunks`, as [`Job::accumulate`] adds them; returns how
    /// many (0: none, and nothing written). The executor runs the rest one by one.
    fn run_chunks(&mut self, _job: &Job, _chunks: &[ChunkPlan], _part: &mut [f32]) -> usize {
        0
    }
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
        pc: vec![0u8; piece_len * W],
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
    /// The panel piece's codes, position-major.
    pc: Vec<u8>,
    pv: Vec<L>,
    pe: Vec<i8>,
    ga: Vec<u8>,
}

impl<const W: usize, L: Lane, const LATE: bool, const HT: bool> Piece for PanelPiece<W, L, LATE, HT> {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (nfma, nr, ncols, j0) = (job.p.nfma, self.rows.len(), self.ncols, self.j0);
        let (pc, pv, pe, ga) = (&mut self.pc, &mut self.pv, &mut self.pe, &mut self.ga);
        let len = q1 - q0;
        panel_codes::<W>(job, chunk, q0, q1, j0..j0 + ncols, pc);
        L::decode(&job.lb, &pc[..len * W], &mut pv[..len * W], &mut pe[..len * W]);
        let nblk = len / nfma;
        let (pv, pe) = (&pv[..len * W], &pe[..len * W]);
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut ga[..nr * len]);
        let row = |r: usize| &a[r * stride..r * stride + len];
        let accs = acc.chunks_exact_mut(W).filter_map(|c| <&mut [f32; W]>::try_from(c).ok());
        for (r, c) in accs.enumerate() {
            block_steps::<W, L, LATE, HT>(row(r), nblk, &job.la, pv, pe, c, &job.p);
        }
    }
}

/// The panel's codes (`cols` of B, at most W) at positions [q0, q1) of a chunk, moved into position-major order
/// (W per position; zero codes at padding positions and in the columns past the panel's), ready to be decoded
/// in one pass that vectorises: a copy of bytes and a decoding from the bits cost less than a table lookup of
/// every code at its place in the panel. The move runs in squares of 8 columns by 8 positions, transposed in
/// registers ([`transpose8`]); the edges byte by byte.
#[inline(always)]
fn panel_codes<const W: usize>(job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, cols: Range<usize>, pc: &mut [u8]) {
    let (k, len) = (job.k, q1 - q0);
    let real: usize = chunk.segments(q0, q1).map(|(_, kr)| kr.len()).sum();
    if real < len || cols.len() < W {
        pc[..len * W].fill(0);
    }
    let pc = &mut pc[..len * W];
    for (off, kr) in chunk.segments(q0, q1) {
        let n = kr.len();
        let row = |j: usize| &job.b[j * k + kr.start..j * k + kr.end];
        let (whole_cols, whole_pos) = (cols.len() / 8 * 8, n / 8 * 8);
        for jj in (0..whole_cols).step_by(8) {
            let rows: [&[u8]; 8] = std::array::from_fn(|i| row(cols.start + jj + i));
            for t in (0..whole_pos).step_by(8) {
                let mut x = [0u64; 8];
                for (x, r) in x.iter_mut().zip(rows) {
                    *x = u64::from_le_bytes(r[t..t + 8].try_into().unwrap_or([0; 8]));
                }
                transpose8(&mut x);
                for (i, x) in x.iter().enumerate() {
                    let at = (off + t + i) * W + jj;
                    pc[at..at + 8].copy_from_slice(&x.to_le_bytes());
                }
            }
            for (i, r) in rows.iter().enumerate() {
                for t in whole_pos..n {
                    pc[(off + t) * W + jj + i] = r[t];
                }
            }
        }
        for jj in whole_cols..cols.len() {
            for (t, &code) in row(cols.start + jj).iter().enumerate() {
                pc[(off + t) * W + jj] = code;
            }
        }
    }
}

/// Transposes the 8 x 8 bytes of `x` (byte c of `x[r]`, least significant first, becomes byte r of `x[c]`): three
/// rounds of exchanges of 1-, 2- and 4-byte blocks between rows 1, 2 and 4 apart.
#[inline(always)]
fn transpose8(x: &mut [u64; 8]) {
    for (shift, mask, pairs) in [
        (8, 0x00FF_00FF_00FF_00FFu64, [(0, 1), (2, 3), (4, 5), (6, 7)]),
        (16, 0x0000_FFFF_0000_FFFF, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (32, 0x0000_0000_FFFF_FFFF, [(0, 4), (1, 5), (2, 6), (3, 7)]),
    ] {
        for (r, s) in pairs {
            let t = ((x[r] >> shift) ^ x[s]) & mask;
            x[s] ^= t;
            x[r] ^= t << shift;
        }
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

/// Positions per piece of the AVX-512 panel tile: its planes (64 magnitudes, 64 exponents and 128 magnitudes by
/// sign per position, 26 KB at 32 positions) stay in the first-level cache while every row of the tile runs over
/// them.
#[cfg(target_arch = "x86_64")]
const FUSED_PIECE: usize = 32;

/// The positions of a fused panel piece for blocks of `nfma`: whole blocks, [`FUSED_PIECE`] or one block if longer.
#[cfg(target_arch = "x86_64")]
fn fused_piece_len(nfma: usize) -> usize {
    nfma * (FUSED_PIECE / nfma).max(1)
}

/// One panel tile of the AVX-512 level on the narrow path with room for the bias ([`Params::biased`]): each piece
/// of the panel decoded into magnitudes, magnitudes by sign and exponents, every row through the fused step
/// [`crate::x86::panel_blocks`]. Returns `rows.len()` rows of `cols.len()` results.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL and AVX2 (the caller is the AVX-512 level's tile).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn tile_fused(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    use crate::x86::{PANEL, SIDED};
    let nfma = job.p.nfma;
    let nr = rows.len();
    let ncols = cols.len();
    let piece_len = fused_piece_len(nfma);
    let mut piece = FusedPiece {
        rows: rows.clone(),
        cols,
        pc: vec![0u8; piece_len * PANEL],
        pm: Lines::new(piece_len * PANEL, 0.0),
        ps: Lines::new(piece_len * SIDED, 0.0),
        pe: Lines::new(piece_len * PANEL, ZERO_EXP),
        ga: vec![0u8; nr * piece_len],
        in_place: vbmi(),
    };
    let acc = job.accumulate(nr * PANEL, piece_len, &mut piece);
    let mut out = Vec::with_capacity(nr * ncols);
    acc.chunks_exact(PANEL).for_each(|r| out.extend_from_slice(&r[..ncols]));
    out
}

/// Whether the CPU has AVX-512 VBMI, whose byte permutes the fused step over B's codes
/// (`products::fused_codes`) and the fused panel tile's pieces decoded in place ([`crate::x86::panel_piece`])
/// need.
pub fn vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx512vbmi");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The scratch of a fused panel tile: the panel piece's codes, magnitudes, magnitudes by sign and exponents, and the
/// gathered rows of A.
#[cfg(target_arch = "x86_64")]
struct FusedPiece {
    rows: Range<usize>,
    cols: Range<usize>,
    pc: Vec<u8>,
    pm: Lines<f32>,
    ps: Lines<f32>,
    pe: Lines<i8>,
    ga: Vec<u8>,
    /// The CPU has AVX-512 VBMI: a whole panel's piece of one run of k is decoded from B in place
    /// ([`crate::x86::panel_piece`]).
    in_place: bool,
}

/// A buffer that starts on a cache line: every 64-byte vector of a panel row is then one line, where a vector
/// across two lines costs two loads.
#[cfg(target_arch = "x86_64")]
struct Lines<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

#[cfg(target_arch = "x86_64")]
impl<T: Copy> Lines<T> {
    fn new(len: usize, fill: T) -> Lines<T> {
        let buf = vec![fill; len + 64];
        let start = buf.as_ptr().align_offset(64).min(64);
        Lines { buf, start, len }
    }

    fn get(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }

    fn get_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

#[cfg(target_arch = "x86_64")]
impl Piece for FusedPiece {
    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        self.piece(job, chunk, q0, q1, acc, None);
    }

    /// Consecutive whole chunks (see [`products::consecutive`]) as one run of pieces, each chunk's last piece ending
    /// the chains into `part` and restarting them from +0: no pass over the accumulators between chunks.
    #[inline(always)]
    fn run_chunks(&mut self, job: &Job, chunks: &[ChunkPlan], part: &mut [f32]) -> usize {
        let piece_len = fused_piece_len(job.p.nfma);
        let Some((k0, l, count)) = products::consecutive(chunks, job.p.nfma).filter(|&(_, l, _)| l % piece_len == 0)
        else {
            return 0;
        };
        let total = count * l;
        let run = ChunkPlan::new(std::slice::from_ref(&(k0..k0 + total)), total, job.p.nfma, false);
        let mut acc = vec![0f32; part.len()];
        for q0 in (0..total).step_by(piece_len) {
            let q1 = q0 + piece_len;
            let end = q1.is_multiple_of(l).then_some(&mut *part);
            self.piece(job, &run, q0, q1, &mut acc, end);
        }
        count
    }
}

#[cfg(target_arch = "x86_64")]
impl FusedPiece {
    /// Positions [q0, q1) of `chunk` for the tile's rows from their accumulators `acc`, the chains ended into `end`
    /// where given ([`crate::x86::panel_blocks`]).
    #[inline(always)]
    fn piece(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32], end: Option<&mut [f32]>) {
        use crate::x86::{PANEL, SIDED};
        let (nr, len) = (self.rows.len(), q1 - q0);
        let (pm, ps, pe) = (self.pm.get_mut(), self.ps.get_mut(), self.pe.get_mut());
        let (pm, ps, pe) = (&mut pm[..len * PANEL], &mut ps[..len * SIDED], &mut pe[..len * PANEL]);
        match one_run(chunk, q0, q1) {
            Some(kr) if self.in_place && self.cols.len() == PANEL && len.is_multiple_of(16) => {
                let b = &job.b[self.cols.start * job.k..];
                // SAFETY: this tile runs only on the AVX-512 level (see `tile_fused`), and `in_place` says VBMI.
                if unsafe { crate::x86::panel_piece(b, (job.k, kr.start, len), &job.lb, (pm, ps, pe)) } {
                    job.saw_nonfinite_b();
                }
            }
            _ => {
                let pc = &mut self.pc[..len * PANEL];
                panel_codes::<PANEL>(job, chunk, q0, q1, self.cols.clone(), pc);
                if job.watch.is_some() && job.lb.format().any_nonfinite(pc) {
                    job.saw_nonfinite_b();
                }
                job.lb.decode_magnitudes::<PANEL>(pc, pm, ps, pe);
            }
        }
        let nblk = len / job.p.nfma;
        let (a, stride) = rows_of_a(job, self.rows.clone(), chunk, q0, q1, &mut self.ga[..nr * len]);
        let (pm, ps, pe) = (self.pm.get(), self.ps.get(), self.pe.get());
        // SAFETY: this tile runs only on the AVX-512 level (see `tile_fused`).
        unsafe { crate::x86::panel_blocks(a, stride, nblk, &job.la, pm, ps, pe, acc, end, &job.p) };
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

#[cfg(test)]
mod tests {
    use super::transpose8;

    /// Byte c of row r lands at byte r of row c, for every r and c.
    #[test]
    fn transpose8_transposes() {
        let mut x = [0u64; 8];
        for (r, x) in x.iter_mut().enumerate() {
            *x = u64::from_le_bytes(std::array::from_fn(|c| (16 * r + c) as u8));
        }
        transpose8(&mut x);
        for (c, x) in x.iter().enumerate() {
            assert_eq!(x.to_le_bytes(), std::array::from_fn(|r| (16 * r + c) as u8), "row {c}");
        }
    }
}
