//! The wide product-lane step in AVX-512 instructions (`kernel::wide_product_blocks` on the AVX-512 level), eight
//! chains at a time: each chain's two passes over a block (the block maximum of the product exponents in i8 lanes,
//! the sum of the truncated terms in f64 lanes, sixteen products at a time), then the eight chains' ends together.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The lanes of `max(ea[k] + eb[k])` (saturating i8) over one block, sixteen to a vector, before the horizontal step;
/// `i8::MIN` in every lane for an empty block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn max_lanes(ea: &[i8], eb: &[i8]) -> __m128i {
    let n = ea.len().min(eb.len());
    let mut m = _mm_set1_epi8(i8::MIN);
    let mut q = 0;
    while q + 16 <= n {
        let x = _mm_adds_epi8(_mm_loadu_si128(ea.as_ptr().add(q).cast()), _mm_loadu_si128(eb.as_ptr().add(q).cast()));
        m = _mm_max_epi8(m, x);
        q += 16;
    }
    if q < n {
        let k: __mmask16 = (1u16 << (n - q)) - 1;
        let x = _mm_adds_epi8(_mm_maskz_loadu_epi8(k, ea.as_ptr().add(q)), _mm_maskz_loadu_epi8(k, eb.as_ptr().add(q)));
        m = _mm_mask_max_epi8(m, k, m, x);
    }
    m
}

/// The lanes of `sum_k trunc(f64(a[k] * b[k]) * s)` over one block, eight to a vector, before the horizontal step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn sum_lanes(a: &[f32], b: &[f32], s: f64) -> __m512d {
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
    _mm512_add_pd(t0, t1)
}

/// The maxima of eight chains' lanes ([`max_lanes`]), chain j's in i32 lane j (sign-extended): halves, quarters,
/// then bytes are folded, two, four and eight chains to a vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn fold_maxima(m: [__m128i; 8]) -> __m256i {
    // Chain j's 16 lanes -> 8 (the 64-bit halves), two chains to a vector.
    let half = |x: __m128i, y: __m128i| _mm_max_epi8(_mm_unpacklo_epi64(x, y), _mm_unpackhi_epi64(x, y));
    let (h01, h23, h45, h67) = (half(m[0], m[1]), half(m[2], m[3]), half(m[4], m[5]), half(m[6], m[7]));
    // 8 -> 4 (the 32-bit quarters of each chain's half), four chains to a vector: dwords 0, 2 of x and of y against
    // dwords 1, 3.
    let quarter = |x: __m128i, y: __m128i| {
        let (x, y) = (_mm_castsi128_ps(x), _mm_castsi128_ps(y));
        let even = _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(x, y));
        let odd = _mm_castps_si128(_mm_shuffle_ps::<0b11_01_11_01>(x, y));
        _mm_max_epi8(even, odd)
    };
    let (q0, q1) = (quarter(h01, h23), quarter(h45, h67));
    // 4 -> 1 within each dword, then the low byte sign-extended.
    let bytes = |v: __m128i| {
        let v = _mm_max_epi8(v, _mm_srli_epi32::<16>(v));
        let v = _mm_max_epi8(v, _mm_srli_epi32::<8>(v));
        _mm_srai_epi32::<24>(_mm_slli_epi32::<24>(v))
    };
    _mm256_set_m128i(bytes(q1), bytes(q0))
}

/// The sums of eight chains' lanes ([`sum_lanes`]), chain j's in lane j: pairs of lanes, then pairs of 128-bit
/// chunks, then of 256-bit halves are added, two, four and eight chains to a vector (integers below 2^53: exact in
/// any order; a sum of +0 lanes is +0 in any order too).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn fold_sums(t: [__m512d; 8]) -> __m512d {
    let pair = |x: __m512d, y: __m512d| _mm512_add_pd(_mm512_unpacklo_pd(x, y), _mm512_unpackhi_pd(x, y));
    let (p01, p23, p45, p67) = (pair(t[0], t[1]), pair(t[2], t[3]), pair(t[4], t[5]), pair(t[6], t[7]));
    // Chunks 0, 2 of x and of y against chunks 1, 3.
    let chunks = |x: __m512d, y: __m512d| {
        _mm512_add_pd(_mm512_shuffle_f64x2::<0b10_00_10_00>(x, y), _mm512_shuffle_f64x2::<0b11_01_11_01>(x, y))
    };
    let (c0, c1) = (chunks(p01, p23), chunks(p45, p67));
    chunks(c0, c1)
}

/// [`crate::kernel::wide_product_blocks`] for eight chains: each chain's two passes as there, then the eight
/// maxima and the eight sums folded together ([`fold_maxima`], [`fold_sums`]) and the block exponent, the scales,
/// the rounding to frac_out and c's update in eight lanes, as the scalar step computes them one chain at a time.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VL; every slice must hold `nblk * p.nfma` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
pub unsafe fn wide_product_blocks8(
    av: &[f32],
    ae: &[i8],
    bv: &[&[f32]; 8],
    be: &[&[i8]; 8],
    nblk: usize,
    c: &mut [f32; 8],
    p: &crate::kernel::Params,
) {
    let nb = p.nfma;
    let efloor = _mm256_set1_epi32(p.efloor);
    let frac = _mm256_set1_epi32(p.frac);
    let bias = _mm256_set1_epi32(1023);
    let (half, mask, tie) =
        (_mm512_set1_epi64(p.half64 as i64), _mm512_set1_epi64(p.mask64 as i64), _mm512_set1_epi64(p.tie64 as i64));
    let shift = _mm_cvtsi32_si128(p.shift64 as i32);
    // 2^x for eight i32 exponents x, from their bits (the callers keep them normal, as `Lane::pow2`).
    let pow2 =
        |x: __m256i| _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_cvtepi32_epi64(_mm256_add_epi32(x, bias))));
    // `Lane::keep_frac_out` of f64 lanes.
    let keep = |x: __m512d| {
        let x = _mm512_castpd_si512(x);
        let odd = _mm512_and_si512(_mm512_srl_epi64(x, shift), tie);
        _mm512_castsi512_pd(_mm512_and_si512(_mm512_add_epi64(_mm512_add_epi64(x, half), odd), mask))
    };
    let mut acc = _mm256_loadu_ps(c.as_ptr());
    for blk in 0..nblk {
        let o = blk * nb;
        let (a, ea) = (&av[o..o + nb], &ae[o..o + nb]);
        let lanes: [__m128i; 8] = std::array::from_fn(|j| max_lanes(ea, &be[j][o..o + nb]));
        let mut e = _mm256_max_epi32(fold_maxima(lanes), efloor);
        if !p.late {
            // exp_f32(c): the biased exponent field less 127.
            let ec = _mm256_and_si256(_mm256_srli_epi32::<23>(_mm256_castps_si256(acc)), _mm256_set1_epi32(0xFF));
            e = _mm256_max_epi32(e, _mm256_sub_epi32(ec, _mm256_set1_epi32(127)));
        }
        let s = pow2(_mm256_sub_epi32(frac, e));
        let inv = pow2(_mm256_sub_epi32(e, frac));
        let mut scales = [0f64; 8];
        _mm512_storeu_pd(scales.as_mut_ptr(), s);
        let lanes: [__m512d; 8] = std::array::from_fn(|j| sum_lanes(a, &bv[j][o..o + nb], scales[j]));
        let sum = fold_sums(lanes);
        acc = if p.late {
            // d has at most 24 significant bits: the conversion is exact; then one fp32 RNE addition.
            _mm256_add_ps(acc, _mm512_cvtpd_ps(_mm512_mul_pd(keep(sum), inv)))
        } else {
            let cs = _mm512_roundscale_pd::<{ super::TOWARD_ZERO }>(_mm512_mul_pd(_mm512_cvtps_pd(acc), s));
            _mm512_cvtpd_ps(_mm512_mul_pd(keep(_mm512_add_pd(sum, cs)), inv))
        };
    }
    _mm256_storeu_ps(c.as_mut_ptr(), acc);
}
