//! The wide product-lane step in AVX-512 instructions (`kernel::wide_product_blocks` on the AVX-512 level), eight
//! chains at a time: the block maxima of the product exponents in i8 lanes (blocks of 16: four blocks to a vector,
//! a batch at a time), the sums of the terms (scaled in f32, truncated into i64 lanes) sixteen products at a time,
//! then the eight chains' ends together.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The bounds of the exponent x of a term's f32 scale 2^x, x = frac - E clamped to them: 2^x is a normal f32. In
/// the i64 step ([`wide_product_blocks8`]) the term `trunc(a * b * 2^x)` is computed in f32 and
/// truncated by its conversion to i64, which gives the model's term:
/// - `a * b` is exact (two FP8 values, at most 8 significant bits) and below 2^32;
/// - where frac - E is inside the bounds, `a * b * 2^x` is exact wherever it reaches 1 (below 2^(frac + 2) <= 2^50:
///   no overflow; at or above 1: no underflow), and below 1 truncates to 0 whatever its rounding;
/// - where it is clamped, the term is 0 both ways: frac - E > 127 means E < frac - 127 <= -79, below every nonzero
///   product's exponent (>= -28), so every product is 0; frac - E < -126 means every product times the true scale is
///   below 2^32 * 2^-126 < 1, and so is it times 2^-126;
/// - every value is finite (non-finite codes decode to 0), so the conversion is defined, and below 2^50 it is inside
///   i64's range. The terms' sum stays below 2^53 (`Params`'s bound of the wide path): the i64 additions and the
///   conversion to f64 are exact.
#[cfg(target_arch = "x86_64")]
pub(crate) const SCALE_EXPONENTS: (i32, i32) = (-126, 127);

/// The mask of the sixteen positions of a block from `q` on (all sixteen, or the block's last ones).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn positions(nb: usize, q: usize) -> u16 {
    if nb - q >= 16 {
        u16::MAX
    } else {
        (1u16 << (nb - q)) - 1
    }
}

/// Eight chains' lanes of `max(ea[k] + eb[k])` (saturating i8) over the block of `nb` positions at `o`, sixteen to a
/// vector, before the horizontal step; `i8::MIN` in every lane for an empty block. A's exponents are loaded once
/// for the eight chains.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn max_lanes(ea: &[i8], eb: &[&[i8]; 8], o: usize, nb: usize) -> [__m128i; 8] {
    let mut m = [_mm_set1_epi8(i8::MIN); 8];
    let mut q = 0;
    while q < nb {
        let k = positions(nb, q);
        let x = _mm_maskz_loadu_epi8(k, ea.as_ptr().add(o + q));
        for (m, eb) in m.iter_mut().zip(eb) {
            *m = _mm_mask_max_epi8(*m, k, *m, _mm_adds_epi8(x, _mm_maskz_loadu_epi8(k, eb.as_ptr().add(o + q))));
        }
        q += 16;
    }
    m
}

/// Eight chains' lanes of `sum_k trunc(a[k] * b[k] * s)` over the block of `nb` positions at `o`, eight to a vector,
/// before the horizontal step: each term scaled in f32 and truncated by its conversion to i64, the terms added in i64
/// lanes; chain j's scale `s` from [`scale32`] (exact: [`SCALE_EXPONENTS`]). The integers add exactly in
/// any order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
#[inline]
unsafe fn sum_lanes(a: &[f32], b: &[&[f32]; 8], o: usize, nb: usize, s: &[f32; 8]) -> [__m512i; 8] {
    let s: [__m512; 8] = std::array::from_fn(|j| _mm512_set1_ps(s[j]));
    let mut t = [_mm512_setzero_si512(); 8];
    let mut q = 0;
    while q < nb {
        let k = positions(nb, q);
        let x = _mm512_maskz_loadu_ps(k, a.as_ptr().add(o + q));
        for j in 0..8 {
            let y = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_maskz_loadu_ps(k, b[j].as_ptr().add(o + q))), s[j]);
            let lo = _mm512_cvttps_epi64(_mm512_castps512_ps256(y));
            t[j] = _mm512_add_epi64(t[j], _mm512_add_epi64(lo, _mm512_cvttps_epi64(_mm512_extractf32x8_ps::<1>(y))));
        }
        q += 16;
    }
    t
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

/// The blocks of 16 products ([`maxima16`]) whose maxima one call computes: a piece of the product-lane tiling
/// (512 positions) at most.
#[cfg(target_arch = "x86_64")]
const BATCH16: usize = 32;

/// The block maxima of eight chains over `nblk` (at most [`BATCH16`]) blocks of 16 products from `o`, as
/// [`max_lanes`] and [`fold_maxima`] give them, four blocks to a vector (one block in each 128-bit lane): chain j's
/// maximum of block b in byte `16 b + j` of the result (its bytes 8 to 15 of each block unused). The eight chains are
/// folded together as [`fold_maxima`] folds them, in every lane at once: halves, quarters, words, bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn maxima16(ea: &[i8], eb: &[&[i8]; 8], o: usize, nblk: usize) -> [__m512i; BATCH16 / 4] {
    let mut out = [_mm512_setzero_si512(); BATCH16 / 4];
    // Chains 0..3 in dwords 0..3 of a lane and 4..7 in their high words (level 3 below), then bytes 0, 4, 8, 12
    // (chains 0..3) and 2, 6, 10, 14 (4..7) moved to bytes 0..7.
    let order = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 2, 6, 10, 14, -1, -1, -1, -1, -1, -1, -1, -1));
    let low = _mm512_set1_epi8(i8::MIN);
    for (v, out) in out.iter_mut().enumerate().take(nblk.div_ceil(4)) {
        let q = o + 64 * v;
        // The positions of this vector's blocks (whole blocks; the lanes past the last are not used).
        let k: __mmask64 = if nblk - 4 * v >= 4 { u64::MAX } else { (1u64 << (16 * (nblk - 4 * v))) - 1 };
        let x = _mm512_mask_loadu_epi8(low, k, ea.as_ptr().add(q));
        let s: [__m512i; 8] =
            std::array::from_fn(|j| _mm512_adds_epi8(x, _mm512_mask_loadu_epi8(low, k, eb[j].as_ptr().add(q))));
        // Halves: chain 2i in bytes 0..7, 2i + 1 in 8..15.
        let half = |x: __m512i, y: __m512i| _mm512_max_epi8(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
        let (h01, h23, h45, h67) = (half(s[0], s[1]), half(s[2], s[3]), half(s[4], s[5]), half(s[6], s[7]));
        // Quarters: chain i of four in dword i.
        let quarter = |x: __m512i, y: __m512i| {
            let (x, y) = (_mm512_castsi512_ps(x), _mm512_castsi512_ps(y));
            let even = _mm512_castps_si512(_mm512_shuffle_ps::<0b10_00_10_00>(x, y));
            let odd = _mm512_castps_si512(_mm512_shuffle_ps::<0b11_01_11_01>(x, y));
            _mm512_max_epi8(even, odd)
        };
        let (q0, q1) = (quarter(h01, h23), quarter(h45, h67));
        // Words: chain i (0..3) in the low word of dword i, chain i + 4 in its high word.
        let lo = _mm512_max_epi8(q0, _mm512_srli_epi32::<16>(q0));
        let hi = _mm512_max_epi8(q1, _mm512_slli_epi32::<16>(q1));
        let w = _mm512_mask_blend_epi16(0xAAAA_AAAA, lo, hi);
        // Bytes: each word's maximum in its low byte.
        *out = _mm512_shuffle_epi8(_mm512_max_epi8(w, _mm512_srli_epi16::<8>(w)), order);
    }
    out
}

/// The sums of eight chains' lanes ([`sum_lanes`]), chain j's in lane j: pairs of lanes, then pairs of 128-bit
/// chunks, then of 256-bit halves are added, two, four and eight chains to a vector (integers: exact in any order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn fold_sums(t: [__m512i; 8]) -> __m512i {
    let pair = |x: __m512i, y: __m512i| _mm512_add_epi64(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
    let (p01, p23, p45, p67) = (pair(t[0], t[1]), pair(t[2], t[3]), pair(t[4], t[5]), pair(t[6], t[7]));
    // Chunks 0, 2 of x and of y against chunks 1, 3.
    let chunks = |x: __m512i, y: __m512i| {
        _mm512_add_epi64(_mm512_shuffle_i64x2::<0b10_00_10_00>(x, y), _mm512_shuffle_i64x2::<0b11_01_11_01>(x, y))
    };
    let (c0, c1) = (chunks(p01, p23), chunks(p45, p67));
    chunks(c0, c1)
}

/// 2^x in f32 lanes for eight i32 exponents x clamped to [`SCALE_EXPONENTS`] (normal): the scale of
/// [`sum_lanes`]; the clamp changes x only where every term is 0 either way.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn scale32(x: __m256i) -> __m256 {
    let (lo, hi) = SCALE_EXPONENTS;
    let x = _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
    _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(x, _mm256_set1_epi32(127))))
}

/// [`crate::kernel::wide_product_blocks`] for eight chains: each chain's two passes as there, then the eight
/// maxima and the eight sums folded together ([`fold_maxima`], [`fold_sums`]) and the block exponent, the scales,
/// the rounding to frac_out and c's update in eight lanes, as the scalar step computes them one chain at a time.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VL/DQ; every slice must hold `nblk * p.nfma` elements (the loads read inside them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
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
    // Blocks of 16 take their maxima a batch at a time ([`maxima16`]), the others one block at a time.
    let mut maxima = [_mm512_setzero_si512(); BATCH16 / 4];
    for blk in 0..nblk {
        let o = blk * nb;
        let at = blk % BATCH16;
        if nb == 16 && at == 0 {
            maxima = maxima16(ae, be, o, (nblk - blk).min(BATCH16));
        }
        let m = if nb == 16 {
            _mm256_cvtepi8_epi32(_mm_loadl_epi64((maxima.as_ptr() as *const i8).add(16 * at) as *const __m128i))
        } else {
            fold_maxima(max_lanes(ae, be, o, nb))
        };
        let mut e = _mm256_max_epi32(m, efloor);
        if !p.late {
            e = _mm256_max_epi32(e, super::exp_f32_lanes(acc));
        }
        let inv = pow2(_mm256_sub_epi32(e, frac));
        let mut scales = [0f32; 8];
        _mm256_storeu_ps(scales.as_mut_ptr(), scale32(_mm256_sub_epi32(frac, e)));
        // Below 2^53 (`Params`'s bound of the wide path): the conversion is exact.
        let sum = _mm512_cvtepi64_pd(fold_sums(sum_lanes(av, bv, o, nb, &scales)));
        acc = if p.late {
            // d has at most 24 significant bits: the conversion is exact; then one fp32 RNE addition.
            _mm256_add_ps(acc, _mm512_cvtpd_ps(_mm512_mul_pd(keep(sum), inv)))
        } else {
            // c's term, on the f64 scale 2^(frac - E) (the f32 one is clamped).
            let s = pow2(_mm256_sub_epi32(frac, e));
            let cs = _mm512_roundscale_pd::<{ super::TOWARD_ZERO }>(_mm512_mul_pd(_mm512_cvtps_pd(acc), s));
            _mm512_cvtpd_ps(_mm512_mul_pd(keep(_mm512_add_pd(sum, cs)), inv))
        };
    }
    _mm256_storeu_ps(c.as_mut_ptr(), acc);
}
