//! The AVX2 panel step: [`panel_blocks`]'s arithmetic in eight-lane vectors, each term's scaling, truncation and sum
//! in one multiply-add rounded toward zero by MXCSR (set for the step's span) onto two biased accumulators per chain.

use super::*;
#[cfg(target_arch = "x86_64")]
use crate::fpstate::FpState;

/// Outputs of one pass of [`panel_blocks_avx2`] over a row: half a panel, four vectors of eight f32 lanes, whose
/// two accumulators each the sixteen vector registers hold beside a's magnitude.
const HALF: usize = PANEL / 2;

/// [`panel_blocks`] on the AVX2 level: the same operands (`a` the rows' codes a `stride` apart, `pm`, `ps` and `pe`
/// the panel piece's magnitudes, magnitudes by sign and exponents from [`crate::tables::Lut::decode_magnitudes`],
/// `acc` the rows' 64 accumulators each, `end` the chunk's sums where the piece ends the chains) and the same
/// results, bit for bit.
///
/// AVX2 has no rounding per instruction: the step sets MXCSR's rounding control toward zero for its span
/// ([`FpState::toward_zero`], which puts the caller's MXCSR back when the span ends, returning or unwinding), where
/// every operation but the multiply-adds onto the biases is exact, so that only they round. The chains' results are
/// added into `end` after the span, rounded to nearest even as the executor adds a chunk's results. A row runs in
/// two passes of [`HALF`] outputs; in each, the block maximum of the next block is made in the same pass over the
/// positions as this block's terms (it does not depend on them: only c links the blocks).
///
/// # Safety
/// The CPU must support AVX2 and FMA (the caller holds the AVX2 level and saw `is_x86_feature_detected!` report
/// FMA).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn panel_blocks_avx2(
    a: &[u8],
    stride: usize,
    nblk: usize,
    la: &crate::tables::Lut,
    pm: &[f32],
    ps: &[f32],
    pe: &[i8],
    acc: &mut [f32],
    end: Option<&mut [f32]>,
    p: &Params,
) {
    let (nfma, rows) = (p.nfma, acc.len() / PANEL);
    let len = nblk * nfma;
    // Every load below reads inside these bounds.
    assert!(
        super::panel::panel_bounds((a, stride, len), (pm, ps, pe), (acc, end.as_deref()), p),
        "panel_blocks_avx2: a preset without room for the bias, or rows or a piece shorter than its blocks"
    );
    if nblk == 0 || rows == 0 {
        return;
    }
    let panel = Panel { pm: pm.as_ptr(), ps: ps.as_ptr(), pe: pe.as_ptr(), nfma };
    {
        let _toward_zero = FpState::toward_zero();
        // The passes in order: every row over the first half of the panel, then over the second; each pass
        // makes the first block maximum of the next.
        let passes = 2 * rows;
        let pass = |i: usize| (a.as_ptr().add((i % rows) * stride), (i / rows) * HALF);
        let (row, j0) = pass(0);
        let mut e = block_max(&panel, row, 0, j0, la);
        for i in 0..passes {
            let (row, j0) = pass(i);
            // The codes of the row ROWS_AHEAD on, asked for now (see `panel_blocks`).
            if i % rows + ROWS_AHEAD < rows {
                let ahead = row.add(ROWS_AHEAD * stride);
                _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(ahead.add(len - 1) as *const i8);
            }
            let c = acc.as_mut_ptr().add((i % rows) * PANEL + j0);
            let next = (i + 1 < passes).then(|| pass(i + 1));
            e = half_over(&panel, (row, j0, nblk), c, e, next, la, p);
        }
    }
    // The chains' results into the chunk's sums, rounded to nearest even; the chains restart at +0.
    if let Some(end) = end {
        for (s, c) in end.iter_mut().zip(acc.iter_mut()) {
            *s += *c;
            *c = 0.0;
        }
    }
}

/// How many rows ahead [`panel_blocks_avx2`] asks for A's codes.
const ROWS_AHEAD: usize = 4;

/// A panel piece of [`panel_blocks_avx2`]: magnitudes, magnitudes by sign and exponents per position, and its
/// blocks.
#[cfg(target_arch = "x86_64")]
struct Panel {
    pm: *const f32,
    ps: *const f32,
    pe: *const i8,
    nfma: usize,
}

/// One pass: a row (`a`: its codes) over the `nblk` blocks of the panel's outputs [j0, j0 + HALF), from and into
/// its accumulators `c`, under rounding toward zero, from the maximum `e` of its first block; returns the maximum
/// of the first block of the `next` pass (row and outputs), made with the last block's terms.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn half_over(
    panel: &Panel,
    (a, j0, nblk): (*const u8, usize, usize),
    c: *mut f32,
    mut e: __m256i,
    next: Option<(*const u8, usize)>,
    la: &crate::tables::Lut,
    p: &Params,
) -> __m256i {
    let (nfma, zero) = (panel.nfma, _mm256_setzero_ps());
    let (keep, two) = (_mm256_set1_epi32(p.mask32 as i32), _mm256_set1_ps(2.0));
    let (floor, field) = (_mm256_set1_epi8(p.efloor as i8), _mm256_set1_epi8((150 - p.frac) as u8 as i8));
    let (magnitude, grid) = (_mm256_set1_epi32(0x7FFF_FFFF), _mm256_set1_epi32(23 - p.frac));
    let mut cv = [zero; 4];
    for (q, cv) in cv.iter_mut().enumerate() {
        *cv = _mm256_loadu_ps(c.add(8 * q));
    }
    for blk in 0..nblk {
        let o = blk * nfma;
        // E = max(products, floor, exponent of c) per chain, the bias's exponent field E + 127 + 23 - frac made in
        // the bytes of the maximum (as in `panel_blocks`) and widened; both accumulators start at the bias, with
        // c's magnitude added toward zero (to the positive one only where c is positive).
        let fe = _mm256_add_epi8(_mm256_max_epi8(e, floor), field);
        let quarters = [
            _mm256_castsi256_si128(fe),
            _mm_srli_si128::<8>(_mm256_castsi256_si128(fe)),
            _mm256_extracti128_si256::<1>(fe),
            _mm_srli_si128::<8>(_mm256_extracti128_si256::<1>(fe)),
        ];
        let (mut tot, mut pos, mut bias) = ([zero; 4], [zero; 4], [zero; 4]);
        for q in 0..4 {
            let mag = _mm256_and_si256(_mm256_castps_si256(cv[q]), magnitude);
            let fc = _mm256_add_epi32(_mm256_srli_epi32::<23>(mag), grid);
            let f = _mm256_max_epi32(_mm256_cvtepu8_epi32(quarters[q]), fc);
            bias[q] = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(f));
            tot[q] = _mm256_add_ps(bias[q], _mm256_castsi256_ps(mag));
            pos[q] = _mm256_add_ps(bias[q], _mm256_max_ps(cv[q], zero));
        }
        // This block's terms, and on the way the maximum of the next block: this row's, or after its last block
        // the next pass's first (none after the last pass).
        let (na, npe) = match (blk + 1 < nblk, next) {
            (true, _) => (a.add(o + nfma), panel.pe.add((o + nfma) * PANEL + j0)),
            (false, Some((na, nj0))) => (na, panel.pe.add(nj0)),
            (false, None) => (std::ptr::null(), std::ptr::null()),
        };
        let mut ne = _mm256_set1_epi8(i8::MIN);
        for k in 0..nfma {
            let at = o + k;
            let code = *a.add(at);
            let va = _mm256_set1_ps(la.m32[code as usize]);
            let b = panel.pm.add(at * PANEL + j0);
            // A term is positive where B's code has a's sign.
            let side = panel.ps.add(at * SIDED + (code >> 7) as usize * PANEL + j0);
            for q in 0..4 {
                tot[q] = _mm256_fmadd_ps(va, _mm256_loadu_ps(b.add(8 * q)), tot[q]);
                pos[q] = _mm256_fmadd_ps(va, _mm256_loadu_ps(side.add(8 * q)), pos[q]);
            }
            if !na.is_null() {
                let pe = _mm256_loadu_si256(npe.add(k * PANEL) as *const __m256i);
                let ea = _mm256_set1_epi32(la.e4[*na.add(k) as usize]);
                ne = _mm256_max_epi8(ne, _mm256_adds_epi8(ea, pe));
            }
        }
        e = ne;
        // The block sum P - N: (2 pos - tot) - bias, both exact (see `panel_blocks`), keeping frac_out bits.
        for q in 0..4 {
            let sum = _mm256_sub_ps(_mm256_fmsub_ps(two, pos[q], tot[q]), bias[q]);
            cv[q] = _mm256_and_ps(sum, _mm256_castsi256_ps(keep));
        }
    }
    for (q, cv) in cv.iter().enumerate() {
        _mm256_storeu_ps(c.add(8 * q), *cv);
    }
    e
}

/// The maximum over block `blk`'s positions of row `a`'s and the panel's operand exponents' sums, per output of
/// [j0, j0 + HALF), in bytes (saturating).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_max(panel: &Panel, a: *const u8, blk: usize, j0: usize, la: &crate::tables::Lut) -> __m256i {
    let mut e = _mm256_set1_epi8(i8::MIN);
    for k in blk * panel.nfma..(blk + 1) * panel.nfma {
        let pe = _mm256_loadu_si256(panel.pe.add(k * PANEL + j0) as *const __m256i);
        e = _mm256_max_epi8(e, _mm256_adds_epi8(_mm256_set1_epi32(la.e4[*a.add(k) as usize]), pe));
    }
    e
}
