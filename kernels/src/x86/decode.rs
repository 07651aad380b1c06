//! The decoding of rows of codes into values and exponents ([`crate::tables::Lut::decode`]) in AVX-512 VBMI
//! instructions: byte lookups in registers, sixty-four codes at a time.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// [`crate::tables::Lut::decode`] on CPUs with AVX-512 VBMI: the values and exponents of `codes` into `v` and `e`
/// (the first `codes.len()` of each). Equal to it code for code, the sign of a zero included: a code's exponent is
/// [`crate::tables::Lut::e`] of its magnitude (its low 7 bits, the index of a two-source byte permute); its value is
/// an f32 whose two low bytes are zero (every FP8 value has at most 4 significant bits), its two high bytes
/// [`crate::tables::Lut::v16`] of the magnitude with the code's sign bit or'ed into the top one, placed in each
/// dword by one more byte permute per sixteen codes (zeros in the two low bytes). Returns whether a code was
/// non-finite (its value and exponent are a zero's, as there): the largest magnitude read tells.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VBMI (`crate::driver::vbmi`).
///
/// # Panics
/// If `v` or `e` is shorter than `codes`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
pub unsafe fn decode_vbmi(l: &crate::tables::Lut, codes: &[u8], v: &mut [f32], e: &mut [i8]) -> bool {
    let n = codes.len();
    assert!(v.len() >= n && e.len() >= n, "decode_vbmi: output rows shorter than the codes");
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid in both.
    let ex = super::halves(&*(l.e.as_ptr() as *const [u8; 128]));
    let (lo, hi) = (super::halves(&l.v16[0]), super::halves(&l.v16[1]));
    let sign = _mm512_set1_epi8(i8::MIN);
    // Group g's dword i takes byte i of the sixteen at 16 g: the low value byte at byte 2, the high one at byte 3
    // (index bit 6: the second source).
    let place: [__m512i; 4] = std::array::from_fn(|g| {
        let idx: [u8; 64] = std::array::from_fn(|j| ((j % 4 == 3) as u8) << 6 | (16 * g + j / 4) as u8);
        _mm512_loadu_si512(idx.as_ptr() as *const __m512i)
    });
    let upper: __mmask64 = 0xCCCC_CCCC_CCCC_CCCC;
    // The exponents and the four groups' values of sixty-four codes.
    let lookup = |x: __m512i| {
        let vl = _mm512_permutex2var_epi8(lo.0, x, lo.1);
        // The high byte of the magnitude (sign bit clear) or the code's sign bit.
        let vh = _mm512_ternarylogic_epi32::<0xF8>(_mm512_permutex2var_epi8(hi.0, x, hi.1), x, sign);
        let values = place.map(|place| _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi8(upper, vl, place, vh)));
        (_mm512_permutex2var_epi8(ex.0, x, ex.1), values)
    };
    let mut largest = _mm512_setzero_si512();
    let mut o = 0;
    // Whole vectors, then the last codes under masks.
    while o + 64 <= n {
        let x = _mm512_loadu_si512(codes.as_ptr().add(o) as *const __m512i);
        largest = _mm512_max_epu8(largest, _mm512_andnot_si512(sign, x));
        let (ev, values) = lookup(x);
        _mm512_storeu_si512(e.as_mut_ptr().add(o) as *mut __m512i, ev);
        for (g, w) in values.into_iter().enumerate() {
            _mm512_storeu_ps(v.as_mut_ptr().add(o + 16 * g), w);
        }
        o += 64;
    }
    if o < n {
        let k: __mmask64 = (1u64 << (n - o)) - 1;
        let x = _mm512_maskz_loadu_epi8(k, codes.as_ptr().add(o) as *const i8);
        largest = _mm512_max_epu8(largest, _mm512_andnot_si512(sign, x));
        let (ev, values) = lookup(x);
        _mm512_mask_storeu_epi8(e.as_mut_ptr().add(o), k, ev);
        for (g, w) in values.into_iter().enumerate().take((n - o).div_ceil(16)) {
            _mm512_mask_storeu_ps(v.as_mut_ptr().add(o + 16 * g), (k >> (16 * g)) as u16, w);
        }
    }
    _mm512_cmpgt_epu8_mask(largest, _mm512_set1_epi8(l.last_finite() as i8)) != 0
}

/// The e2m1 codes of the low nibbles of `codes` decoded as `crate::scaled`'s group step takes them, on CPUs with
/// AVX-512F/BW: each value into `v` and 1 into `n` where it is nonzero, 0 where it is zero (the first `codes.len()` of
/// each). A zero comes out as +0, its code's sign aside: a group's sum starts at +0, so the sign of a zero product
/// never shows. One byte shuffle of a 16-entry table per 64 codes gives twice each value as a signed byte (0, 1, 2, 3,
/// 4, 6, 8, 12), widened and converted to f32 and halved, all exact.
///
/// # Safety
/// The CPU must have AVX-512F/BW/VL and AVX2 (the AVX-512 level).
///
/// # Panics
/// If `v` or `n` is shorter than `codes`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
pub unsafe fn decode_e2m1(codes: &[u8], v: &mut [f32], n: &mut [u8]) {
    let len = codes.len();
    assert!(v.len() >= len && n.len() >= len, "decode_e2m1: output rows shorter than the codes");
    let twice = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12));
    let (nibble, half, one) = (_mm512_set1_epi8(0x0F), _mm512_set1_ps(0.5), _mm512_set1_epi8(1));
    let mut o = 0;
    // Whole vectors, then the last codes under a mask.
    while o < len {
        let k: __mmask64 = if len - o >= 64 { u64::MAX } else { (1u64 << (len - o)) - 1 };
        let x = _mm512_and_si512(_mm512_maskz_loadu_epi8(k, codes.as_ptr().add(o) as *const i8), nibble);
        let t = _mm512_shuffle_epi8(twice, x);
        _mm512_mask_storeu_epi8(
            n.as_mut_ptr().add(o) as *mut i8,
            k,
            _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(t, t), one),
        );
        for q in (0..4).take_while(|q| (k >> (16 * q)) as u16 != 0) {
            let w = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(super::lane_quarter(t, q))), half);
            _mm512_mask_storeu_ps(v.as_mut_ptr().add(o + 16 * q), (k >> (16 * q)) as u16, w);
        }
        o += 64;
    }
}
