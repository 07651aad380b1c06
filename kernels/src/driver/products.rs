//! The product-lane tiling of the plan execution (see `driver.rs`): a tile is all rows of A by a strip of rows of
//! B; per piece of a chunk its rows of A are decoded, and B's rows run through the product-lane block step eight
//! at a time, decoded beforehand, or, at one or two rows of A on the AVX-512 level, sixteen at a time as codes.

use super::tiles::{group, reads_codes, strip_len, STRIP_CHUNKS};
use super::{gather_rows, ChunkPlan, Job, Piece, TileOutputs};
use crate::kernel::{product_blocks, Path};
#[cfg(target_arch = "x86_64")]
use crate::x86::{self, CODE_CHAINS};
/// Rows of B per call of the step over codes (`x86::CODE_CHAINS` on x86-64).
#[cfg(not(target_arch = "x86_64"))]
pub(super) const CODE_CHAINS: usize = 16;
use crate::tables::{Lut, ZERO_EXP};
use std::ops::Range;

/// Rows `rows` of the [_, k] matrix `x` (format table `l`), decoded at positions [q0, q1) of a chunk into
/// `v` and `e`, row after row: straight from `x` when the piece is one run of k (`single`), else gathered
/// into `g` with zero padding first, on the AVX-512 level or another (`avx512`, see [`Lut::decode_on`]). Returns
/// whether the AVX-512 VBMI decoding met a non-finite code.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn decode_rows(
    (x, k, l, avx512): (&[u8], usize, &Lut, bool),
    rows: Range<usize>,
    chunk: &ChunkPlan,
    q0: usize,
    q1: usize,
    single: &Option<Range<usize>>,
    g: &mut [u8],
    v: &mut [f32],
    e: &mut [i8],
) -> bool {
    let len = q1 - q0;
    let n = rows.len() * len;
    match single {
        Some(kr) => {
            let mut seen = false;
            for (t, i) in rows.enumerate() {
                let r = t * len..(t + 1) * len;
                seen |= l.decode_on(avx512, &x[i * k + kr.start..i * k + kr.end], &mut v[r.clone()], &mut e[r]);
            }
            seen
        }
        None => {
            gather_rows(x, k, rows, chunk, q0, q1, &mut g[..n]);
            l.decode_on(avx512, &g[..n], &mut v[..n], &mut e[..n])
        }
    }
}

/// Chains interleaved by the product-lane kernel (see [`product_blocks`]).
pub(super) const CHAINS: usize = 8;

/// Rows `brows` of B (at most [`CHAINS`]) decoded at positions [q0, q1) of a chunk, as [`decode_rows`] does, the
/// group's rows past them zeros: the CHAINS rows of values and of exponents of one group of the step over decoded
/// rows, and whether the AVX-512 VBMI decoding met a non-finite code.
#[inline(always)]
pub(super) fn decode_group<'x>(
    bt: (&[u8], usize, &Lut, bool),
    brows: Range<usize>,
    chunk: &ChunkPlan,
    (q0, q1): (usize, usize),
    single: &Option<Range<usize>>,
    (gb, bv, be): (&mut [u8], &'x mut [f32], &'x mut [i8]),
) -> ([&'x [f32]; CHAINS], [&'x [i8]; CHAINS], bool) {
    let (len, real) = (q1 - q0, brows.len());
    let seen = decode_rows(bt, brows, chunk, q0, q1, single, gb, bv, be);
    bv[real * len..CHAINS * len].fill(0.0);
    be[real * len..CHAINS * len].fill(ZERO_EXP);
    let (bv, be) = (&*bv, &*be);
    let (values, exponents) = (|t| &bv[t * len..(t + 1) * len], |t| &be[t * len..(t + 1) * len]);
    (std::array::from_fn(values), std::array::from_fn(exponents), seen)
}

/// One product-lane tile (see [`super::products_serve`]): rows `rows` of A against rows `cols` of B, every split and
/// chunk, with the lanes along each block's products (a wide-path job: `driver/wide_products.rs`). Returns `rows.len()` rows of `cols.len()` results.
/// `X86`: the block step's instructions ([`X86_NONE`], [`X86_AVX2`] or [`X86_AVX512`]; the caller is compiled for
/// them).
#[inline(always)]
pub fn strip_tile<const HT: bool, const X86: u8>(job: &Job, rows: Range<usize>, cols: Range<usize>) -> Vec<f32> {
    if job.p.path == Path::Wide {
        return if X86 == X86_AVX512 {
            super::wide_products::wide_strip_tile::<HT, true>(job, rows, cols)
        } else {
            super::wide_products::wide_strip_tile::<HT, false>(job, rows, cols)
        };
    }
    match job.p.nfma {
        16 => strip_tile_with::<16, HT, X86>(job, rows, cols),
        _ => strip_tile_with::<32, HT, X86>(job, rows, cols),
    }
}

/// The portable block step ([`product_blocks`]).
pub const X86_NONE: u8 = 0;
/// The AVX2 block step over decoded rows of B (`x86::product_blocks`).
pub const X86_AVX2: u8 = 1;
/// The AVX-512 block step over the codes of B, decoded in registers (`x86::product_blocks_fused` where
/// `fused_codes` holds, else `x86::product_blocks_codes`), for tiles of at most `CODE_ROWS` (2) rows; AVX2's for
/// more.
pub const X86_AVX512: u8 = 2;

#[inline(always)]
fn strip_tile_with<const NB: usize, const HT: bool, const X86: u8>(
    job: &Job,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Vec<f32> {
    let (nr, nc) = (rows.len(), cols.len());
    // Outputs rounded up to whole groups; the extra rows of B are zeros.
    let unit = group::<X86>(job, nr);
    let ncp = nc.div_ceil(unit) * unit;
    let piece_len = strip_len::<NB>();
    let tile = TileOutputs::new(&rows, &cols, ncp);
    let mut piece = StripPiece::<NB, HT, X86> {
        unit,
        rows: rows.clone(),
        cols: cols.clone(),
        ga: vec![0u8; nr * piece_len],
        av: vec![0f32; nr * piece_len],
        ae: vec![ZERO_EXP; nr * piece_len],
        gb: vec![0u8; unit * piece_len],
        bv: vec![0f32; CHAINS * piece_len],
        be: vec![ZERO_EXP; CHAINS * piece_len],
        zeros: vec![0u8; piece_len],
        fused: fused_codes::<X86>(job),
    };
    let acc = job.accumulate(&tile, piece_len, &mut piece);
    let mut out = Vec::with_capacity(nr * nc);
    acc.chunks_exact(ncp).for_each(|r| out.extend_from_slice(&r[..nc]));
    out
}

/// The scratch of a product-lane tile: the tile's rows of A and a group of rows of B, gathered and decoded.
struct StripPiece<const NB: usize, const HT: bool, const X86: u8> {
    /// Rows of B per group ([`group`]): the outputs of a row of the tile are padded to whole groups.
    unit: usize,
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
    /// Whether the step over codes is the fused one ([`fused_codes`]).
    fused: bool,
}

/// Whether the AVX-512 step over codes of this job is the fused one (`x86::product_blocks_fused`): the preset has
/// room for its bias and the CPU has AVX-512 VBMI (its byte permutes); else `x86::product_blocks_codes`.
fn fused_codes<const X86: u8>(job: &Job) -> bool {
    #[cfg(target_arch = "x86_64")]
    if X86 == X86_AVX512 {
        return job.p.biased && super::vbmi();
    }
    let _ = job;
    false
}

/// The first position, the length and the count of the leading `chunks` that are each one run of k of one length
/// (whole blocks of `nb`), each following the one before (slow accumulation's chunks, unsplit or split
/// contiguously, but for a ragged last one): the fused step over codes runs several of them in one call, and the
/// fused panel tile in one run of pieces.
pub(super) fn consecutive(chunks: &[ChunkPlan], nb: usize) -> Option<(usize, usize, usize)> {
    let l = chunks.first()?.len;
    let k0 = match chunks[0].ranges.as_slice() {
        [(0, r)] => r.start,
        _ => return None,
    };
    let each = |(i, c): &(usize, &ChunkPlan)| {
        c.len == l && matches!(c.ranges.as_slice(), [(0, r)] if r.start == k0 + i * l && r.len() == l)
    };
    let count = chunks.iter().enumerate().take_while(each).count();
    (l > 0 && l.is_multiple_of(nb) && count > 0).then_some((k0, l, count))
}

impl<const NB: usize, const HT: bool, const X86: u8> Piece for StripPiece<NB, HT, X86> {
    /// With the fused step over codes, consecutive chunks (see [`consecutive`]) run a piece of several at a time,
    /// the step adding each chunk's result into `part` and restarting its chains from +0.
    #[inline(always)]
    fn run_chunks(&mut self, job: &Job, chunks: &[ChunkPlan], part: &mut [f32]) -> usize {
        let piece_len = strip_len::<NB>();
        let codes = (self.fused || X86 == X86_AVX2) && reads_codes::<X86>(job, self.rows.len());
        let Some((k0, l, count)) = consecutive(chunks, NB).filter(|&(_, l, _)| codes && l <= piece_len) else {
            return 0;
        };
        let span = l * (piece_len / l);
        let total = count * l;
        // The chains' accumulators: +0 at each chunk's start, as the step leaves them at its end.
        let mut acc = vec![0f32; part.len()];
        for q0 in (0..total).step_by(span) {
            let q1 = (q0 + span).min(total);
            let single = Some(k0 + q0..k0 + q1);
            let at = (job.a, job.k, &job.la, X86 == X86_AVX512);
            decode_rows(at, self.rows.clone(), &chunks[0], q0, q1, &single, &mut self.ga, &mut self.av, &mut self.ae);
            #[cfg(target_arch = "x86_64")]
            if X86 == X86_AVX2 {
                self.run_codes_avx2(job, &chunks[0], (q0, q1), &single, &mut acc, (l / NB, part));
            } else {
                self.run_codes(job, &chunks[0], (q0, q1), &single, &mut acc, (l / NB, part));
            }
        }
        count
    }

    #[inline(always)]
    fn run(&mut self, job: &Job, chunk: &ChunkPlan, q0: usize, q1: usize, acc: &mut [f32]) {
        let (nr, nc) = (self.rows.len(), self.cols.len());
        let ncp = nc.div_ceil(self.unit) * self.unit;
        let len = q1 - q0;
        let nblk = len / NB;
        let single = super::one_run(chunk, q0, q1);
        let avx512 = X86 == X86_AVX512;
        let (at, bt) = ((job.a, job.k, &job.la, avx512), (job.b, job.k, &job.lb, avx512));
        decode_rows(at, self.rows.clone(), chunk, q0, q1, &single, &mut self.ga, &mut self.av, &mut self.ae);
        #[cfg(target_arch = "x86_64")]
        if reads_codes::<X86>(job, nr) {
            if X86 == X86_AVX2 {
                self.run_codes_avx2(job, chunk, (q0, q1), &single, acc, (0, &mut []));
            } else {
                self.run_codes(job, chunk, (q0, q1), &single, acc, (0, &mut []));
            }
            return;
        }
        // A group of CHAINS rows of B at a time, decoded just before use (rows past the tile are zeros).
        for g in (0..ncp).step_by(CHAINS) {
            let brows = self.cols.start + g..self.cols.start + g + CHAINS.min(nc - g);
            let (bvs, bes, _) =
                decode_group(bt, brows, chunk, (q0, q1), &single, (&mut self.gb, &mut self.bv, &mut self.be));
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
    /// The groups of [`CHAINS`] rows of B over one piece with the AVX2 block step over B's codes
    /// (`x86::product_blocks_codes_avx2`, where `tiles::avx2_fused` holds): in place when the piece is one run of k
    /// (`single`), else gathered with zero padding; the tile's rows of A are decoded already. With `restart` > 0
    /// the piece is whole chunks of `restart` blocks, whose results are added into `sums` in order.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn run_codes_avx2(
        &mut self,
        job: &Job,
        chunk: &ChunkPlan,
        (q0, q1): (usize, usize),
        single: &Option<Range<usize>>,
        acc: &mut [f32],
        (restart, sums): (usize, &mut [f32]),
    ) {
        let (nr, nc, k) = (self.rows.len(), self.cols.len(), job.k);
        let ncp = nc.div_ceil(CHAINS) * CHAINS;
        let len = q1 - q0;
        let nblk = len / NB;
        let e4m3 = job.lb.format() == mmaemu_model::Format::E4m3;
        // The step takes A's magnitudes scaled, and its codes for their signs.
        let scale = x86::FUSED_A_SCALE;
        self.av[..nr * len].iter_mut().for_each(|v| *v = v.abs() * scale);
        // The chunks' results of a group of rows of B, made once for all groups: the step writes each chunk's row
        // before it is added.
        let mut ends = [[0f32; CHAINS]; STRIP_CHUNKS];
        for g in (0..ncp).step_by(CHAINS) {
            let real = CHAINS.min(nc - g);
            let brows = self.cols.start + g..self.cols.start + g + real;
            if single.is_none() {
                gather_rows(job.b, k, brows.clone(), chunk, q0, q1, &mut self.gb[..real * len]);
            }
            let mut codes = [&self.zeros[..len]; CHAINS];
            for (t, c) in codes.iter_mut().enumerate().take(real) {
                *c = match single {
                    Some(kr) => &job.b[(brows.start + t) * k + kr.start..(brows.start + t) * k + kr.end],
                    None => &self.gb[t * len..(t + 1) * len],
                };
            }
            for r in 0..nr {
                let Ok(c) = <&mut [f32; CHAINS]>::try_from(&mut acc[r * ncp + g..r * ncp + g + CHAINS]) else {
                    continue;
                };
                let (a, e) = (&self.av[r * len..(r + 1) * len], &self.ae[r * len..(r + 1) * len]);
                let i = self.rows.start + r;
                let ac = match single {
                    Some(kr) => &job.a[i * k + kr.start..i * k + kr.end],
                    None => &self.ga[r * len..(r + 1) * len],
                };
                // SAFETY: `X86_AVX2` is passed only by the tiles of the AVX2 level, which exists only after
                // `is_x86_feature_detected!` reported AVX2, and this step runs only where `tiles::avx2_fused` saw
                // FMA too.
                let chains = (nblk, restart);
                let nonfinite = unsafe {
                    if e4m3 {
                        x86::product_blocks_codes_avx2::<NB, true>(a, e, ac, codes, chains, (c, &mut ends), &job.p)
                    } else {
                        x86::product_blocks_codes_avx2::<NB, false>(a, e, ac, codes, chains, (c, &mut ends), &job.p)
                    }
                };
                if nonfinite {
                    job.saw_nonfinite_b();
                }
                // The chunks' results into the split's sums, in order, rounded to nearest even.
                if let Some(sum) = sums.get_mut(r * ncp + g..r * ncp + g + CHAINS).filter(|_| restart > 0) {
                    for end in &ends[..nblk / restart] {
                        sum.iter_mut().zip(end).for_each(|(s, x)| *s += x);
                    }
                }
            }
        }
    }

    /// The groups of CODE_CHAINS rows of B over one piece with the AVX-512 block step, which reads B's codes: in
    /// place when the piece is one run of k (`single`), else gathered with zero padding; the tile's rows of A
    /// are decoded already.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn run_codes(
        &mut self,
        job: &Job,
        chunk: &ChunkPlan,
        (q0, q1): (usize, usize),
        single: &Option<Range<usize>>,
        acc: &mut [f32],
        (restart, sums): (usize, &mut [f32]),
    ) {
        let (nr, nc, k) = (self.rows.len(), self.cols.len(), job.k);
        let ncp = nc.div_ceil(CODE_CHAINS) * CODE_CHAINS;
        let len = q1 - q0;
        let nblk = len / NB;
        let e4m3 = job.lb.format() == mmaemu_model::Format::E4m3;
        let (lb, p) = (&job.lb, &job.p);
        if self.fused {
            // The fused step takes A's magnitudes scaled, and its codes for their signs.
            self.av[..nr * len].iter_mut().for_each(|v| *v = v.abs() * crate::x86::FUSED_A_SCALE);
        }
        for g in (0..ncp).step_by(CODE_CHAINS) {
            let real = CODE_CHAINS.min(nc - g);
            let brows = self.cols.start + g..self.cols.start + g + real;
            if single.is_none() {
                gather_rows(job.b, k, brows.clone(), chunk, q0, q1, &mut self.gb[..real * len]);
            }
            // (A loop rather than `array::from_fn`, whose closure was not inlined.)
            let mut codes = [&self.zeros[..len]; CODE_CHAINS];
            for (t, c) in codes.iter_mut().enumerate().take(real) {
                *c = match single {
                    Some(kr) => &job.b[(brows.start + t) * k + kr.start..(brows.start + t) * k + kr.end],
                    None => &self.gb[t * len..(t + 1) * len],
                };
            }
            for r in 0..nr {
                let Ok(c) = <&mut [f32; CODE_CHAINS]>::try_from(&mut acc[r * ncp + g..r * ncp + g + CODE_CHAINS])
                else {
                    continue;
                };
                let (a, e) = (&self.av[r * len..(r + 1) * len], &self.ae[r * len..(r + 1) * len]);
                let mut none = [0f32; CODE_CHAINS];
                let sum = match sums.get_mut(r * ncp + g..r * ncp + g + CODE_CHAINS) {
                    Some(s) if restart > 0 => <&mut [f32; CODE_CHAINS]>::try_from(s).unwrap_or(&mut none),
                    _ => &mut none,
                };
                let chains = (nblk, restart);
                // SAFETY: `X86_AVX512` is passed only by the tiles of the AVX-512 level, which exists only after
                // `is_x86_feature_detected!` reported AVX-512F/BW/VL, AVX2 and F16C; `fused` only where it also
                // reported AVX-512 VBMI.
                let nonfinite = unsafe {
                    if self.fused {
                        let i = self.rows.start + r;
                        let ac = match single {
                            Some(kr) => &job.a[i * k + kr.start..i * k + kr.end],
                            None => &self.ga[r * len..(r + 1) * len],
                        };
                        x86::fused_blocks(NB, a, e, ac, codes, chains, (c, sum), lb, p)
                    } else if e4m3 {
                        crate::x86::product_blocks_codes::<NB, true>(a, e, codes, nblk, c, &job.p)
                    } else {
                        crate::x86::product_blocks_codes::<NB, false>(a, e, codes, nblk, c, &job.p)
                    }
                };
                if nonfinite {
                    job.saw_nonfinite_b();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{consecutive, ChunkPlan};

    /// Chunks of 128 from `k0`, the last `last` long (padded to blocks of 32 where shorter).
    fn chunks(k0: usize, n: usize, last: usize) -> Vec<ChunkPlan> {
        (0..n)
            .map(|i| {
                let len = if i + 1 == n { last } else { 128 };
                ChunkPlan::new(std::slice::from_ref(&(k0 + 128 * i..k0 + 128 * i + len)), 128, 32, true)
            })
            .collect()
    }

    /// The leading whole chunks that follow each other count, from the split's first position; a ragged last
    /// chunk, a gap, a chunk of two runs (a tile-strided split) or a length of part of a block end the run.
    #[test]
    fn consecutive_counts_the_leading_whole_chunks() {
        assert_eq!(consecutive(&chunks(0, 4, 128), 32), Some((0, 128, 4)));
        assert_eq!(consecutive(&chunks(384, 3, 128), 32), Some((384, 128, 3)));
        assert_eq!(consecutive(&chunks(0, 3, 44), 32), Some((0, 128, 2)));
        assert_eq!(consecutive(&chunks(0, 1, 44), 32), None, "a single ragged chunk: 64 positions, 44 real");
        let mut gap = chunks(0, 3, 128);
        gap[2] = ChunkPlan::new(std::slice::from_ref(&(512..640)), 128, 32, true);
        assert_eq!(consecutive(&gap, 32), Some((0, 128, 2)));
        let strided = [ChunkPlan::new(&[0..64, 128..192], 128, 32, true)];
        assert_eq!(consecutive(&strided, 32), None);
        assert_eq!(consecutive(&chunks(0, 2, 128), 48), None, "128 positions are not whole blocks of 48");
        assert_eq!(consecutive(&[], 32), None);
    }
}
