//! The AVX2 panel step: [`panel_blocks`]'s results in eight-lane vectors, each term scaled to its chain's grid and
//! rounded toward zero to an integer, the block's integer counts summed exactly in f32.

use super::*;

/// Outputs of one step of [`panel_blocks_avx2`]: half a panel, four vectors of eight lanes, whose counts and grid
/// scales the sixteen vector registers hold beside a's value.
const HALF: usize = PANEL / 2;

/// [`panel_blocks`] on the AVX2 level: the same rows (`a` their codes a `stride` apart, `la` their table), the
/// panel piece's values `pv` and exponents `pe` ([`crate::tables::Lut::decode`]: 64 of each per position), `acc`
/// the rows' 64 accumulators each, `end` the chunk's sums where the piece ends the chains; the same results, bit
/// for bit.
///
/// With the block exponent E, c's exponent ec and the grid g = max(E, ec) - frac (as in [`panel_blocks`], made in
/// the bytes of the block maximum), a chain's block sum is an integer count of 2^g: c and each term a b are scaled
/// by 2^-g, a power of two, and rounded toward zero to an integer (`vroundps`, its rounding in the instruction),
/// which is the model's trunc(p / 2^g) for either sign, and the counts are added in f32. Every operation is exact
/// whatever MXCSR says, so the step leaves it alone: a b is exact (eight significant bits, far from f32's range
/// ends); (a b) 2^-g and c 2^-g are exact unless below 1, where any rounding still truncates to 0 (the products are
/// at least 2^-32 and g >= -126, so under flush-to-zero too); `biased` bounds the counts below 2^23, so their sums
/// are exact, and times 2^g they stay normal (g >= -126). A zero count may be -0 (c's truncation and the terms all
/// -0, or any zero sum when rounding down): a count of -0 (its bits compared) is made +0, the model's zero.
/// Clearing the mantissa bits below frac_out gives the new c. With `end`, each chain's result is added into its
/// `end` in fp32, in the caller's rounding as the executor adds a chunk's results, and the chain restarts at +0.
///
/// A step is one row over one block of [`HALF`] outputs, and it makes the block maximum of the next step in the
/// same pass over the positions as its terms (the maximum does not depend on them: only c links the blocks).
///
/// # Safety
/// The CPU must support AVX2 (the caller holds the AVX2 level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn panel_blocks_avx2(
    a: &[u8],
    stride: usize,
    nblk: usize,
    la: &crate::tables::Lut,
    pv: &[f32],
    pe: &[i8],
    acc: &mut [f32],
    end: Option<&mut [f32]>,
    p: &Params,
) {
    let (nfma, rows) = (p.nfma, acc.len() / PANEL);
    let len = nblk * nfma;
    // Every load below reads inside these bounds.
    assert!(
        super::panel::panel_bounds((a, stride, len), &[(pv.len(), PANEL), (pe.len(), PANEL)], (acc, end.as_deref()), p),
        "panel_blocks_avx2: a preset without room for the bias, or rows or a piece shorter than its blocks"
    );
    if nblk == 0 || rows == 0 {
        return;
    }
    let panel = Panel { pv: pv.as_ptr(), pe: pe.as_ptr(), nfma };
    // The steps in order: each block of every row over the first half of the panel, then over the second, block
    // after block. Steps in a row are independent, so that one step's last terms overlap the next one's first
    // (within a chain, a block's scale waits for the last block's sum); each step makes the block maximum of the
    // next.
    let row = |r: usize| a.as_ptr().add(r * stride);
    let mut e = first_max(&panel, row(0), la);
    for blk in 0..nblk {
        for j0 in [0, HALF] {
            for r in 0..rows {
                // The codes of the row ROWS_AHEAD on, asked for in the first block (see `panel_blocks`).
                if blk == 0 && j0 == 0 && r + ROWS_AHEAD < rows {
                    let ahead = row(r + ROWS_AHEAD);
                    _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(ahead.add(len - 1) as *const i8);
                }
                let next = match (r + 1 < rows, j0 == 0, blk + 1 < nblk) {
                    (true, _, _) => Some((row(r + 1), j0, blk)),
                    (false, true, _) => Some((row(0), HALF, blk)),
                    (false, false, true) => Some((row(0), 0, blk + 1)),
                    (false, false, false) => None,
                };
                let c = acc.as_mut_ptr().add(r * PANEL + j0);
                e = block_over(&panel, (row(r), j0, blk), c, e, next, la, p);
            }
        }
    }
    // The chains' results into the chunk's sums, in the caller's rounding; the chains restart at +0.
    if let Some(end) = end {
        for (s, c) in end.iter_mut().zip(acc.iter_mut()) {
            *s += *c;
            *c = 0.0;
        }
    }
}

/// Rounding toward zero to an integer, exceptions suppressed: a term's count of the grid.
const TRUNCATE: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

/// How many rows ahead [`panel_blocks_avx2`] asks for A's codes.
const ROWS_AHEAD: usize = 4;

/// A panel piece of [`panel_blocks_avx2`]: values and exponents per position, and its blocks.
#[cfg(target_arch = "x86_64")]
struct Panel {
    pv: *const f32,
    pe: *const i8,
    nfma: usize,
}

/// One step: a row (`a`: its codes) over block `blk` of the panel's outputs [j0, j0 + HALF), from and into its
/// accumulators `c`, from the block's maximum `e`; returns the block maximum of the `next` step (row, outputs and
/// block), made with this block's terms.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_over(
    panel: &Panel,
    (a, j0, blk): (*const u8, usize, usize),
    c: *mut f32,
    e: __m256i,
    next: Option<(*const u8, usize, usize)>,
    la: &crate::tables::Lut,
    p: &Params,
) -> __m256i {
    let nfma = panel.nfma;
    let o = blk * nfma;
    let keep = _mm256_set1_epi32(p.mask32 as i32);
    let (floor, field) = (_mm256_set1_epi8(p.efloor as i8), _mm256_set1_epi8((150 - p.frac) as u8 as i8));
    let (magnitude, grid) = (_mm256_set1_epi32(0x7FFF_FFFF), _mm256_set1_epi32(23 - p.frac));
    // 2^-g's exponent field is 277 - f and 2^g's 254 minus that, where f = g + 150 is the field made below.
    let (down, up) = (_mm256_set1_epi32(277), _mm256_set1_epi32(254 << 23));
    let negative_zero = _mm256_set1_epi32(i32::MIN);
    // f = max(E, floor) + 150 - frac per chain made in the bytes of the maximum (as in `panel_blocks`) and widened,
    // then raised to c's exponent field + 23 - frac: the field of 2^(g + 23). The count starts at c's, truncated.
    let fe = _mm256_add_epi8(_mm256_max_epi8(e, floor), field);
    let quarters = [
        _mm256_castsi256_si128(fe),
        _mm_srli_si128::<8>(_mm256_castsi256_si128(fe)),
        _mm256_extracti128_si256::<1>(fe),
        _mm_srli_si128::<8>(_mm256_extracti128_si256::<1>(fe)),
    ];
    let (mut count, mut scale) = ([_mm256_setzero_ps(); 4], [_mm256_setzero_ps(); 4]);
    for q in 0..4 {
        let cv = _mm256_loadu_ps(c.add(8 * q));
        let mag = _mm256_and_si256(_mm256_castps_si256(cv), magnitude);
        let fc = _mm256_add_epi32(_mm256_srli_epi32::<23>(mag), grid);
        let f = _mm256_max_epi32(_mm256_cvtepu8_epi32(quarters[q]), fc);
        scale[q] = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_sub_epi32(down, f)));
        count[q] = _mm256_round_ps::<TRUNCATE>(_mm256_mul_ps(cv, scale[q]));
    }
    // This block's terms, and on the way the maximum of the next step's block (none after the last step).
    let (na, npe) = match next {
        Some((na, nj0, nblk)) => (na.add(nblk * nfma), panel.pe.add(nblk * nfma * PANEL + nj0)),
        None => (std::ptr::null(), std::ptr::null()),
    };
    let mut ne = _mm256_set1_epi8(i8::MIN);
    for k in 0..nfma {
        let at = o + k;
        let va = _mm256_set1_ps(la.v32[*a.add(at) as usize]);
        let b = panel.pv.add(at * PANEL + j0);
        for q in 0..4 {
            let term = _mm256_mul_ps(_mm256_mul_ps(va, _mm256_loadu_ps(b.add(8 * q))), scale[q]);
            count[q] = _mm256_add_ps(count[q], _mm256_round_ps::<TRUNCATE>(term));
        }
        if !na.is_null() {
            let pe = _mm256_loadu_si256(npe.add(k * PANEL) as *const __m256i);
            let ea = _mm256_set1_epi32(la.e4[*na.add(k) as usize]);
            ne = _mm256_max_epi8(ne, _mm256_adds_epi8(ea, pe));
        }
    }
    // The block sum, count 2^g, keeping frac_out bits.
    for q in 0..4 {
        let unit = _mm256_sub_epi32(up, _mm256_castps_si256(scale[q]));
        let bits = _mm256_castps_si256(count[q]);
        let count = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpeq_epi32(bits, negative_zero), bits));
        let sum = _mm256_mul_ps(count, _mm256_castsi256_ps(unit));
        _mm256_storeu_ps(c.add(8 * q), _mm256_and_ps(sum, _mm256_castsi256_ps(keep)));
    }
    ne
}

/// The block maximum of the first step: over the first block's positions, the sums of row `a`'s and the panel's
/// operand exponents per output of [0, HALF), in bytes (saturating). Every later step's is made by the step before.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn first_max(panel: &Panel, a: *const u8, la: &crate::tables::Lut) -> __m256i {
    let mut e = _mm256_set1_epi8(i8::MIN);
    for k in 0..panel.nfma {
        let pe = _mm256_loadu_si256(panel.pe.add(k * PANEL) as *const __m256i);
        e = _mm256_max_epi8(e, _mm256_adds_epi8(_mm256_set1_epi32(la.e4[*a.add(k) as usize]), pe));
    }
    e
}
