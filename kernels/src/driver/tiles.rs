//! The driver's tiling decisions: piece lengths, rows per tile and waves of the panel tiles, which tiles read B's
//! codes in the product-lane step and how many rows of B they group, and when a GEMM runs on the calling thread.

#[cfg(not(target_arch = "x86_64"))]
use super::products::CODE_CHAINS;
use super::products::{CHAINS, X86_AVX2, X86_AVX512};
use super::Job;
use crate::kernel::Path;
#[cfg(target_arch = "x86_64")]
use crate::x86::CODE_CHAINS;

/// Target length of a piece of a chunk (rounded to whole blocks): the panel planes of a piece (5 or 9 bytes
/// per position and output: 40 to 150 KB) stay in L1 or L2 while every row of the tile runs over them; 256
/// ran 1024^3 about 5 % faster than 128 and 512 on one thread (`mmaemu bench gemm --m 1024 --n 1024 --k 1024
/// --threads 1`, AMD EPYC with AVX-512).
pub(super) const PIECE: usize = 256;

/// [`PIECE`] for the i32 steps (tensor-wise and MXFP8) on panels of 64 outputs (AVX-512): their f32 planes of 256
/// positions (80 KB) left the first-level cache between the decoding and the step, and pieces of 32 positions (one
/// block from 32 products up) ran faster from 1 to 1024 rows (kernels/scaling-modes.md). f64 planes, and the 32-output
/// panels of the other levels, were not faster with them.
const PIECE_I32_64: usize = 32;

/// Target length of a piece of the wide panel step's tiles (rounded to whole blocks, [`whole_blocks`]), tensor-wise
/// and block-scaled. The planes of 64 positions (32 KiB of magnitudes) stay in the first-level cache while every row
/// of the tile reads them; 256 positions ran 7–13 % slower (`mmaemu bench gemm --m 16 --n 4096 --k 4096 --preset P
/// --fast --no-native`, blocks of 16 and 64 at frac 40).
pub(crate) const WIDE_PIECE: usize = 64;

/// Target length of a piece of the group-scaled (NVFP4) panels' tiles (rounded to whole instructions): their planes,
/// an f32 value and a byte per code (320 bytes per position of a panel of 64), stay in the first-level cache. Against
/// 256 positions, b200_tcgen05's NVFP4 at 1, 16 and 1024 rows (`mmaemu bench gemm --m M --n N --k K --preset
/// b200_tcgen05 --scales nvfp4 --no-native --threads 1`, best of three) ran 2.28 / 9.17 / 10.32 GMAC/s against
/// 1.63 / 6.23 / 7.58 on AVX-512 (128 positions: 1.66 / 6.86 / 8.51), and 1.36 / 4.89 against 1.24 / 4.62 at 1 and
/// 16 rows on AVX2.
pub(crate) const GROUP_PIECE: usize = 64;

/// The target positions of a piece of a panel tile (the tensor-wise panels and the block-scaled ones) of `w` outputs
/// whose step sums in i32 lanes (`i32_step`) or not: [`PIECE_I32_64`] or [`PIECE`].
pub(crate) fn piece_positions(i32_step: bool, w: usize) -> usize {
    if i32_step && w == 64 {
        PIECE_I32_64
    } else {
        PIECE
    }
}

/// Most rows of A per tile: decoding a panel piece costs a few cycles per code, the kernel a fraction of a
/// cycle per product, so a decoded piece must serve hundreds of rows.
const MAX_ROWS: usize = 512;

/// Fewest rows of A per panel tile where M has them.
const MIN_ROWS: usize = 32;

/// Below this many multiply-adds (about 20 µs of one core) the tiles run on the calling thread: waking the
/// pool's threads and waiting for them costs more than the work.
pub(super) const SERIAL_MACS: usize = 1 << 18;

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

/// Positions per piece of the AVX-512 panel tile: its planes (64 magnitudes, 64 exponents and 128 magnitudes by
/// sign per position, 26 KB at 32 positions) stay in the first-level cache while every row of the tile runs over
/// them.
#[cfg(target_arch = "x86_64")]
const FUSED_PIECE: usize = 32;

/// The positions of a fused panel piece for blocks of `nfma`: [`whole_blocks`] of [`FUSED_PIECE`].
#[cfg(target_arch = "x86_64")]
pub(super) fn fused_piece_len(nfma: usize) -> usize {
    whole_blocks(nfma, FUSED_PIECE)
}

/// The positions of a piece of about `positions` for blocks of `nfma`: whole blocks up to `positions`, or one block
/// if longer.
pub(crate) fn whole_blocks(nfma: usize, positions: usize) -> usize {
    nfma * (positions / nfma).max(1)
}

/// Whether a tile of `rows` rows of the job runs a step over B's codes: the AVX-512 one (at most [`CODE_ROWS`]
/// rows, the narrow path), or the AVX2 one (at most [`CODE_ROWS_AVX2`] rows, where [`avx2_fused`] holds).
pub(super) fn reads_codes<const X86: u8>(job: &Job, rows: usize) -> bool {
    match X86 {
        X86_AVX512 => rows <= CODE_ROWS && job.p.path == Path::Narrow,
        X86_AVX2 => rows <= CODE_ROWS_AVX2 && avx2_fused(job),
        _ => false,
    }
}

/// Whether the AVX2 level's fused steps (over B's codes, `x86::product_blocks_codes_avx2`, and over panels,
/// `x86::panel_blocks_avx2`) serve the job on this CPU: the preset has room for its bias
/// ([`crate::kernel::Params::biased`]) and the CPU has FMA besides AVX2.
pub fn avx2_fused(job: &Job) -> bool {
    job.p.biased && super::fused_panel::fma()
}

/// Rows of B per group of the tile: [`CODE_CHAINS`] where the step over codes runs, else [`CHAINS`].
pub(super) fn group<const X86: u8>(job: &Job, rows: usize) -> usize {
    if X86 == X86_AVX512 && reads_codes::<X86>(job, rows) {
        CODE_CHAINS
    } else {
        CHAINS
    }
}

/// Positions per piece of the product-lane tiling (whole blocks): the decoded rows of a piece (5 bytes per
/// position) stay in L1 while the tile's rows run over them.
const STRIP: usize = 512;

/// The positions of a product-lane piece for blocks of `NB`: whole blocks, at most [`STRIP`].
pub(super) const fn strip_len<const NB: usize>() -> usize {
    strip_piece_len(NB)
}

/// The positions of a product-lane piece for blocks of `nb`: whole blocks, at most [`STRIP`] or one block if longer.
pub(super) const fn strip_piece_len(nb: usize) -> usize {
    let blocks = STRIP / nb;
    nb * if blocks == 0 { 1 } else { blocks }
}

/// The most chunks a piece of the product-lane tiling holds: chunks are whole blocks, of 16 positions at least.
pub(super) const STRIP_CHUNKS: usize = STRIP / 16;

/// At most this many rows of A per product-lane tile run the AVX-512 step that decodes B's codes in registers;
/// it decodes them again for every row, so more rows run the step over rows of B decoded once per group. One
/// thread, `mmaemu bench gemm --m M --n 4096 --k 4096 --threads 1 --no-native` (AMD EPYC with AVX-512), codes
/// against decoded rows in GMAC/s: M = 1 3.1 vs 2.1, M = 2 3.7 vs 3.7, M = 4 4.7 vs 5.2, M = 16 5.2 vs 7.1.
pub(super) const CODE_ROWS: usize = 2;

/// At most this many rows of A per product-lane tile run the AVX2 step over B's codes (see [`CODE_ROWS`]); with
/// the fused panel step more rows run with panels (`tiling::FUSED_PRODUCT_ROWS`, the same number), which beat
/// both product-lane steps from six rows. One thread, `MMAEMU_SIMD=avx2 taskset -c 1 mmaemu bench gemm --m M --n
/// 4096 --k 4096 --threads 1 --no-native --reps 10 --tiling products|panels` (AMD EPYC, Zen 4, at the AVX2 level),
/// GMAC/s of product lanes and fused panels, hopper and ada: M = 2 6.4, 3.0 and 5.6, 3.0; M = 4 6.6, 5.0 and 5.9,
/// 5.0; M = 6 (product lanes over decoded rows) 6.3, 6.5 and 4.9, 6.5. Before the fused panels, the step over codes
/// against decoded rows and the panels of 32: M = 8 5.1, 7.0, 8.2 and 5.9, 5.2, 7.7; M = 16 6.6, 8.3, 10.5 and
/// 5.7, 5.9, 9.7. With the panel step that rounds terms to integers (commit 6fae37d), product lanes and fused
/// panels: M = 3 5.1, 3.1 and 4.8, 4.2; M = 4 5.9, 5.6 and 6.0, 5.2; M = 5 5.7, 6.7 and 4.6, 6.4.
pub(super) const CODE_ROWS_AVX2: usize = 4;

/// Whether a product-lane tile of the job on the level of `X86` ([`X86_AVX512`] or [`X86_AVX2`]) reads every code
/// of B where it finds the non-finite ones (see [`Job::watching`]): with a block step over codes (a tile holds all
/// rows of A, so few enough of them, and the kernel must serve the preset), or, for the wide path on the AVX-512
/// level, with the AVX-512 VBMI decoding of its groups of B's rows ([`crate::tables::Lut::vbmi_decodes`]).
pub fn reads_b_codes<const X86: u8>(job: &Job) -> bool {
    let wide = job.p.path == Path::Wide && crate::tables::Lut::vbmi_decodes(X86 == X86_AVX512);
    products_serve(job) && (reads_codes::<X86>(job, job.m()) || wide)
}

/// Whether a product-lane kernel serves a job: the narrow path with a block of 16 or 32 products (ada, hopper, and
/// custom presets of those sizes), or the wide path with blocks of any length (`kernel::wide_product_blocks`).
pub fn products_serve(job: &Job) -> bool {
    match job.p.path {
        Path::Narrow => matches!(job.p.nfma, 16 | 32),
        Path::Wide => true,
        Path::Scalar => false,
    }
}
