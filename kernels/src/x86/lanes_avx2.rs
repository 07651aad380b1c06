//! The AVX2 product-lane step over decoded rows of B: eight chains at a time, each chain's products in the lanes of
//! a vector, the per-block work of the eight chains (scales, normalisation) gathered into one vector.

use super::*;

/// The chains of one row of A against eight rows of B over `nblk` blocks of `NB` (16 or 32) products: see
/// [`crate::kernel::product_blocks`] for the arguments and the arithmetic.
///
/// # Safety
/// The CPU must support AVX2 (the caller holds a level made after `is_x86_feature_detected!("avx2")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn product_blocks<const NB: usize>(
    av: &[f32],
    ae: &[i8],
    bv: [&[f32]; 8],
    be: [&[i8]; 8],
    nblk: usize,
    c: &mut [f32; 8],
    p: &Params,
) {
    let len = nblk * NB;
    // Every load below reads inside [0, len) of these slices.
    assert!(
        NB.is_multiple_of(16)
            && av.len() >= len
            && ae.len() >= len
            && bv.iter().all(|x| x.len() >= len)
            && be.iter().all(|x| x.len() >= len),
        "product_blocks: the decoded rows are shorter than the blocks"
    );
    let mut cv = _mm256_loadu_ps(c.as_ptr());
    let lane: [__m256i; 8] = std::array::from_fn(|j| _mm256_set1_epi32(j as i32));
    for o in (0..len).step_by(NB) {
        // Saturating i8 sums of the operand exponents, reduced to 16 lanes per chain.
        let mut x = [_mm_setzero_si128(); 8];
        for (j, xj) in x.iter_mut().enumerate() {
            let mut m = _mm_set1_epi8(i8::MIN);
            for q in (0..NB).step_by(16) {
                let ea = _mm_loadu_si128(ae.as_ptr().add(o + q) as *const __m128i);
                let eb = _mm_loadu_si128(be[j].as_ptr().add(o + q) as *const __m128i);
                m = _mm_max_epi8(m, _mm_adds_epi8(ea, eb));
            }
            *xj = m;
        }
        let (s, inv) = scales(x, cv, p);
        // Aligned, truncated terms of each chain, summed in eight lanes (integers below 2^24: exact).
        let mut acc = [_mm256_setzero_ps(); 8];
        for (j, accj) in acc.iter_mut().enumerate() {
            let sj = _mm256_permutevar8x32_ps(s, lane[j]);
            for q in (0..NB).step_by(8) {
                let a = _mm256_loadu_ps(av.as_ptr().add(o + q));
                let b = _mm256_loadu_ps(bv[j].as_ptr().add(o + q));
                let t = _mm256_mul_ps(_mm256_mul_ps(a, b), sj);
                *accj = _mm256_add_ps(*accj, _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(t));
            }
        }
        cv = normalised(acc, cv, s, inv, p);
    }
    _mm256_storeu_ps(c.as_mut_ptr(), cv);
}

/// The scales of a block of eight chains: `x[j]` holds chain j's saturating i8 sums of operand exponents,
/// reduced to 16 lanes, `cv` the eight accumulators. The block exponent is E = max(products, floor, exponent of
/// c); returns s = 2^(frac - E) and inv = 2^(E - frac), lane j for chain j.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn scales(x: [__m128i; 8], cv: __m256, p: &Params) -> (__m256, __m256) {
    // The eight chains' maxima, by interleaving pairs of chains and halving: bytes, words, dwords, halves.
    let pair8 = |a: __m128i, b: __m128i| _mm_max_epi8(_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
    let pair16 = |a: __m128i, b: __m128i| _mm_max_epi8(_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b));
    let y = [pair8(x[0], x[1]), pair8(x[2], x[3]), pair8(x[4], x[5]), pair8(x[6], x[7])];
    let z = [pair16(y[0], y[1]), pair16(y[2], y[3])];
    let w = _mm_max_epi8(_mm_unpacklo_epi32(z[0], z[1]), _mm_unpackhi_epi32(z[0], z[1]));
    let emax = _mm256_cvtepi8_epi32(_mm_max_epi8(w, _mm_srli_si128::<8>(w)));
    // The accumulators' exponents (a nonzero accumulator is normal; +0 reads as -127).
    let ec = _mm256_sub_epi32(
        _mm256_and_si256(_mm256_srli_epi32::<23>(_mm256_castps_si256(cv)), _mm256_set1_epi32(0xFF)),
        _mm256_set1_epi32(127),
    );
    let e = _mm256_max_epi32(_mm256_max_epi32(emax, _mm256_set1_epi32(p.efloor)), ec);
    let s = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_sub_epi32(_mm256_set1_epi32(127 + p.frac), e)));
    let inv = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_set1_epi32(127 - p.frac), e)));
    (s, inv)
}

/// The accumulators of eight chains after a block: `acc[j]` holds chain j's truncated terms in eight lanes,
/// `cv` the accumulators before it, `s` and `inv` the block's scales ([`scales`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn normalised(acc: [__m256; 8], cv: __m256, s: __m256, inv: __m256, p: &Params) -> __m256 {
    // The eight sums into the lanes of one vector (pairwise additions of integers: exact).
    let h0 = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    let h1 = _mm256_hadd_ps(_mm256_hadd_ps(acc[4], acc[5]), _mm256_hadd_ps(acc[6], acc[7]));
    let sums = _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(h0, h1), _mm256_permute2f128_ps::<0x31>(h0, h1));
    // c enters like a term; the sum keeps frac_out bits and is scaled back.
    let ct = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(cv, s));
    let sum = _mm256_add_ps(sums, ct);
    _mm256_mul_ps(_mm256_and_ps(sum, _mm256_castsi256_ps(_mm256_set1_epi32(p.mask32 as i32))), inv)
}
