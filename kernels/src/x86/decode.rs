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
