//! How the CPU backend tiles one GEMM, chosen from its shape: panels of outputs (lanes across a panel of outputs
//! of one row) or product lanes (lanes along each block's products, for few rows), and whether A and B exchange
//! roles (few outputs per row, many rows).

use crate::driver::{products_serve, wide_panels, Job, Tiles};
use crate::kernel::Path;
use mmaemu_model::Operands;

/// Which axis the lanes of a tile run along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tiling {
    /// Across a panel of W outputs of one row: a panel of B is decoded once per piece and serves many rows
    /// of A. The fastest per product; it needs many rows (the decoding) and full panels (the lanes).
    Panels,
    /// Along each block's products, a few chains at a time: every code is decoded once per tile, so a single
    /// row of A (a decode step) runs at the rate of the kernel, and no lane is left empty.
    Products,
}

impl Tiling {
    /// `panels` or `products`.
    pub fn name(self) -> &'static str {
        match self {
            Tiling::Panels => "panels",
            Tiling::Products => "products",
        }
    }
}

/// At most this many rows (after the exchange, M <= N) run with product lanes, or as many as a block has
/// products when that is more (hopper: 32); more rows amortise the decoding of a panel, whose kernel is faster
/// per product. Measured with `mmaemu bench gemm --tiling products|panels` (kernels/README.md).
pub const PRODUCT_ROWS: usize = 16;

/// At most this many rows run with product lanes where the level has the fused panel step (presets with room for
/// its bias: `crate::x86::panel_blocks` on AVX-512, `crate::x86::panel_blocks_avx2` on AVX2 with FMA, whose
/// product lanes then read B's codes up to as many rows: `crate::driver::CODE_ROWS_AVX2`), which needs fewer rows to
/// beat product lanes. `mmaemu bench gemm
/// --m M --n 4096 --k 4096 --tiling products|panels --no-native --reps 5` (2 threads, Intel Xeon with AVX-512),
/// GMAC/s, hopper and ada: M = 3 6.5 vs 5.2 and 5.1 vs 4.8, M = 4 7.5 vs 6.6 and 5.7 vs 6.2, M = 8 9.7 vs 10.7 and
/// 7.0 vs 9.9, M = 16 12.3 vs 16.0 and 8.1 vs 15.4.
pub const FUSED_PRODUCT_ROWS: usize = 4;

/// [`FUSED_PRODUCT_ROWS`] where the fused panel tile also decodes its pieces from B in place (AVX-512 VBMI:
/// `crate::x86::panel_piece`). Product lanes against panels on one thread, both at once, one on each core, the
/// cores swapped at each pair (`mmaemu bench gemm --m M --n 4096 --k 4096 --threads 1 --reps 30 --no-native
/// --tiling products|panels`, Intel Xeon model 207), panels over products, median of 4 pairs: M = 2 0.81 (ada
/// 0.81, slow 0.92), M = 3 2.44 (ada 3.14, slow with e5m2 B 1.96), M = 4 2.76.
pub const IN_PLACE_PRODUCT_ROWS: usize = 2;

/// The shortest block for which a wide-path job whose step sums in f64 lanes runs few rows with product lanes, on
/// the AVX-512 level (`x86::wide_product_blocks8`, eight chains at a time). Each block of each chain ends in a
/// horizontal maximum and sum, which longer blocks share among more products, while a panel's decoding is shared
/// among its rows. Where the level runs the job's panels on the wide panel step (`driver::wide_panels`: every preset
/// of the fit's space past the i32 step), one row for blocks of 64 and two for longer ones; elsewhere (wider sums, a
/// floor far above the products) one row per 32 products, at least one and at most 4. The i32 step
/// (`small::int32_steps`) stays on panels, and so does every wide job on the other levels, where the product-lane
/// step runs one chain's ends at a time and panels won at every M.
///
/// `mmaemu bench gemm --m M --n 4096 --k 4096 --preset P --fast --no-native --reps 30 --tiling panels|products` (2
/// threads, Intel Xeon with AVX-512 VBMI, best of 3 rounds; P: bench/presets/nearest-128-frac40.toml with that nfma),
/// GMAC/s, wide panels against products, M = 1, 2, 4, 8: blocks of 16 4.98/4.17, 7.79/4.79, 10.76/5.41,
/// 13.55/5.64; of 32 5.19/4.95, 8.20/6.01, 11.82/6.77, 14.81/7.09; of 64 5.23/5.42, 8.56/6.94, 12.32/7.87,
/// 15.89/8.41; of 128 3.79/5.84, 6.14/7.56, 9.50/8.79, 12.81/9.47 (M = 3: 8.23/8.29); of 256 (2 rounds) 3.32/6.17,
/// 6.03/7.83, 9.70/8.64, 12.89/10.44. Earlier, panels in i64 lanes against products: blocks of 16 at M = 1, 2, 4, 8
/// 2.37/2.81, 4.33/3.42, 5.09/4.16, 6.79/4.86; of 128 at M = 2, 4, 8, 16 4.20/5.94, 5.77/6.66, 7.02/8.33, 9.09/7.59.
/// With `MMAEMU_SIMD=avx2` (portable f64 panels, before the AVX2 wide panel step made them faster still), M = 1, 2, 4,
/// 8: blocks of 16 1.86/1.49, 2.16/1.64, 3.77/1.65, 4.97/1.98; of 64 1.91/1.10, 2.22/1.29, 4.09/1.39, 4.96/1.50;
/// `MMAEMU_SIMD=portable`, M = 1, 4: blocks of 16 0.57/0.44, 0.95/0.73; of 64 0.71/0.54, 1.14/0.60. Earlier and later
/// measurements: `wide-steps.md`.
pub const WIDE_PRODUCT_BLOCK: usize = 16;

/// The most rows a wide-path job runs with product lanes (see [`WIDE_PRODUCT_BLOCK`]); `eight`: the level runs the
/// eight-chain step (the AVX-512 level, which runs the wide panel step where `driver::wide_panels` holds).
fn wide_product_rows(job: &Job, eight: bool) -> usize {
    let nfma = job.nfma();
    if !eight || job.int32() || nfma < WIDE_PRODUCT_BLOCK {
        0
    } else if wide_panels(job) {
        (nfma / 64).min(2)
    } else {
        (nfma / 32).clamp(1, 4)
    }
}

/// Outputs per product-lane tile: A's rows are decoded once per piece of a tile, and a tile's scratch is made once,
/// so wider tiles share that work among more chains. `mmaemu bench gemm --m M --n 4096 --k 4096 --no-native` (2
/// threads, AMD EPYC with AVX-512), 16 against 64 outputs, GMAC/s: M = 1 8.8 vs 9.9, M = 2 8.5–9.7 vs 9.9–10.3,
/// M = 16 15.1–16.0 vs 16.6. With the fused decode step (Intel Xeon model 207), 128 against 64: one thread, both
/// builds at once on the two cores (`--m 1 --threads 1 --reps 300`), 1.02 in the median of 6 pairs; two threads,
/// alternating, `--m 1 --reps 300` 12.4–13.0 → 13.1–13.3 GMAC/s (5 runs each), `--m 4 --reps 100` 8.5–8.6 vs
/// 8.3–8.7 (3 each). 256 was no better on two threads (fewer tiles to share).
const STRIP_COLS: usize = 128;

/// The tiling of one GEMM on a level of panel width `w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The lanes' axis.
    pub tiling: Tiling,
    /// A and B exchange roles: the engine computes the transposed result `B x A^T` (the chains are the same:
    /// a block's products and their exponents do not depend on which operand is which) and transposes it.
    pub swap: bool,
}

impl Choice {
    /// The most rows that run with product lanes (see [`PRODUCT_ROWS`]): [`FUSED_PRODUCT_ROWS`] where the level
    /// runs the job's panels with the fused step (`fused`), [`IN_PLACE_PRODUCT_ROWS`] where that step's pieces are
    /// also decoded in place (`in_place`); for a wide-path job, [`wide_product_rows`] (`eight`: the level runs the
    /// eight-chain wide step).
    pub fn product_rows(job: &Job, fused: bool, in_place: bool, eight: bool) -> usize {
        if job.path() == Path::Wide {
            return wide_product_rows(job, eight);
        }
        match (fused, in_place) {
            (true, true) => IN_PLACE_PRODUCT_ROWS,
            (true, false) => FUSED_PRODUCT_ROWS,
            _ => PRODUCT_ROWS.max(job.nfma()),
        }
    }

    /// The choice for the operands of a job (see [`Tiling`]): exchange the operands when N < M and either side
    /// is narrower than a panel, then product lanes for at most `most` rows ([`Choice::product_rows`]) where the
    /// kernel serves the preset, else panels.
    pub fn of(job: &Job, w: usize, most: usize) -> Choice {
        let (m, n) = (job.m(), job.n());
        let swap = n < m && n < w.max(most + 1);
        let rows = if swap { n } else { m };
        let tiling = if rows <= most && products_serve(job) { Tiling::Products } else { Tiling::Panels };
        Choice { tiling, swap }
    }

    /// The tiles of a job that runs with this choice (after the exchange).
    pub fn tiles(self, job: &Job, w: usize) -> Tiles {
        match self.tiling {
            Tiling::Panels => Tiles::panels(job, w),
            Tiling::Products => {
                // All rows in one tile, STRIP_COLS outputs (fewer where the threads need more tiles): a tile
                // streams along k through its rows of B, a group of eight rows at a time.
                let cols = STRIP_COLS.min(job.n().div_ceil(job.threads()).next_multiple_of(4));
                Tiles { rows: job.m().max(1), cols, wave: 1 }
            }
        }
    }
}

/// The operands with A and B exchanged.
pub fn swapped<'a>(ops: &Operands<'a>) -> Operands<'a> {
    Operands { a: ops.b, b: ops.a, fa: ops.fb, fb: ops.fa, m: ops.n, n: ops.m, k: ops.k }
}

/// The transpose of a row-major [rows, cols] matrix.
pub fn transpose(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for (i, row) in x.chunks_exact(cols.max(1)).enumerate().take(rows) {
        for (j, &v) in row.iter().enumerate() {
            out[j * rows + i] = v;
        }
    }
    out
}
