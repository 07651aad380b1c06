//! The wide product-lane step's two passes over a block in AVX-512 instructions (`kernel::wide_product_blocks` on the
//! AVX-512 level): the block maximum of the product exponents in i8 lanes and the sum of the truncated terms in f64
//! lanes, sixteen products at a time, the block's last ones under a mask.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// `max_k ea[k] + eb[k]` (saturating i8) over one block; `i8::MIN` for an empty one.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
pub unsafe fn wide_max(ea: &[i8], eb: &[i8]) -> i8 {
    let n = ea.len().min(eb.len());
    let (pa, pb) = (ea.as_ptr() as *const __m128i, eb.as_ptr() as *const __m128i);
    let mut m = _mm_set1_epi8(i8::MIN);
    let mut q = 0;
    while q + 16 <= n {
        let x = _mm_adds_epi8(_mm_loadu_si128(pa.byte_add(q)), _mm_loadu_si128(pb.byte_add(q)));
        m = _mm_max_epi8(m, x);
        q += 16;
    }
    if q < n {
        let k: __mmask16 = (1u16 << (n - q)) - 1;
        let x = _mm_adds_epi8(_mm_maskz_loadu_epi8(k, ea.as_ptr().add(q)), _mm_maskz_loadu_epi8(k, eb.as_ptr().add(q)));
        m = _mm_mask_max_epi8(m, k, m, x);
    }
    m = _mm_max_epi8(m, _mm_srli_si128::<8>(m));
    m = _mm_max_epi8(m, _mm_srli_si128::<4>(m));
    m = _mm_max_epi8(m, _mm_srli_si128::<2>(m));
    m = _mm_max_epi8(m, _mm_srli_si128::<1>(m));
    _mm_extract_epi8::<0>(m) as i8
}

/// `sum_k trunc(f64(a[k] * b[k]) * s)` over one block (integers below 2^53 in all: exact in any order; +0 for an
/// empty block or one of zero terms).
///
/// # Safety
/// The CPU must have AVX-512F/BW/VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
pub unsafe fn wide_sum(a: &[f32], b: &[f32], s: f64) -> f64 {
    let n = a.len().min(b.len());
    let vs = _mm512_set1_pd(s);
    let (mut t0, mut t1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let mut add = |p: __m512| {
        let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(p));
        let hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(p))));
        t0 = _mm512_add_pd(t0, _mm512_roundscale_pd::<{ super::TOWARD_ZERO }>(_mm512_mul_pd(lo, vs)));
        t1 = _mm512_add_pd(t1, _mm512_roundscale_pd::<{ super::TOWARD_ZERO }>(_mm512_mul_pd(hi, vs)));
    };
    let mut q = 0;
    while q + 16 <= n {
        add(_mm512_mul_ps(_mm512_loadu_ps(a.as_ptr().add(q)), _mm512_loadu_ps(b.as_ptr().add(q))));
        q += 16;
    }
    if q < n {
        let k: __mmask16 = (1u16 << (n - q)) - 1;
        add(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, a.as_ptr().add(q)), _mm512_maskz_loadu_ps(k, b.as_ptr().add(q))));
    }
    _mm512_reduce_add_pd(_mm512_add_pd(t0, t1))
}
