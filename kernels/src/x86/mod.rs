//! The block steps in x86 instructions, one file per step and level: product lanes over decoded rows of B (AVX2),
//! the decode step over B's codes (AVX2; AVX-512, plain and fused), the panel step and its planes (AVX-512, AVX2),
//! the wide panel step (AVX-512, AVX2), the decoding of rows (AVX-512 VBMI), and the register helpers they share
//! here. Exact in every step, and tested against the model like every level.

#[cfg(target_arch = "x86_64")]
use crate::kernel::Params;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

mod codes;
mod codes_avx2;
mod decode;
mod fused;
mod lanes_avx2;
mod panel;
mod panel_avx2;
mod planes;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;
mod wide;
mod wide_panel;
mod wide_panel_avx2;

pub use codes::*;
pub use codes_avx2::*;
pub use decode::*;
pub use fused::*;
pub use lanes_avx2::*;
pub use panel::*;
pub use panel_avx2::*;
pub use planes::*;
pub use wide::*;
pub use wide_panel::*;
pub use wide_panel_avx2::*;

/// The 16 bytes at each of `pieces` in the four 128-bit lanes of a vector, in order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
pub(super) unsafe fn lanes(pieces: [*const u8; 4]) -> __m512i {
    let p = pieces.map(|p| p as *const __m128i);
    let v = _mm512_inserti32x4::<1>(_mm512_castsi128_si512(_mm_loadu_si128(p[0])), _mm_loadu_si128(p[1]));
    let v = _mm512_inserti32x4::<2>(v, _mm_loadu_si128(p[2]));
    _mm512_inserti32x4::<3>(v, _mm_loadu_si128(p[3]))
}

/// A 128-byte table in two vectors (the sources of a two-source byte permute).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn halves(t: &[u8; 128]) -> (__m512i, __m512i) {
    (_mm512_loadu_si512(t.as_ptr() as *const __m512i), _mm512_loadu_si512(t.as_ptr().add(64) as *const __m512i))
}

/// The rounding of [`panel_blocks`]'s additions: toward zero, exceptions suppressed (none can occur: every sum
/// stays in its binade).
#[cfg(target_arch = "x86_64")]
pub(super) const TOWARD_ZERO: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

/// The 16 bytes of quarter `q` (0..4) of a vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
pub(super) unsafe fn lane_quarter(x: __m512i, q: usize) -> __m128i {
    match q {
        0 => _mm512_extracti32x4_epi32::<0>(x),
        1 => _mm512_extracti32x4_epi32::<1>(x),
        2 => _mm512_extracti32x4_epi32::<2>(x),
        _ => _mm512_extracti32x4_epi32::<3>(x),
    }
}

/// `crate::kernel::exp_f32` of eight f32 lanes: the biased exponent field less 127 (+0 reads -127).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn exp_f32_lanes(c: __m256) -> __m256i {
    let field = _mm256_and_si256(_mm256_srli_epi32::<23>(_mm256_castps_si256(c)), _mm256_set1_epi32(0xFF));
    _mm256_sub_epi32(field, _mm256_set1_epi32(127))
}

/// `_mm512_mask3_fmadd_round_ps::<TOWARD_ZERO>(a, b, c, k)` as the one instruction it names: the optimiser otherwise
/// makes it an unmasked multiply-add and a masked move, one more operation on the vector ports.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn masked_fmadd_toward_zero(a: __m512, b: __m512, c: __m512, k: __mmask16) -> __m512 {
    let mut c = c;
    // SAFETY: a register-only instruction of AVX-512F, which the caller's features include.
    std::arch::asm!(
        "vfmadd231ps {c}{{{k}}}, {a}, {b}, {{rz-sae}}",
        c = inout(zmm_reg) c,
        a = in(zmm_reg) a,
        b = in(zmm_reg) b,
        k = in(kreg) k,
        options(pure, nomem, nostack),
    );
    c
}

/// [`masked_fmadd_toward_zero`] in f64 lanes: `_mm512_mask3_fmadd_round_pd::<TOWARD_ZERO>(a, b, c, k)` as one
/// instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn masked_fmadd_toward_zero_pd(a: __m512d, b: __m512d, c: __m512d, k: __mmask8) -> __m512d {
    let mut c = c;
    // SAFETY: a register-only instruction of AVX-512F, which the caller's features include.
    std::arch::asm!(
        "vfmadd231pd {c}{{{k}}}, {a}, {b}, {{rz-sae}}",
        c = inout(zmm_reg) c,
        a = in(zmm_reg) a,
        b = in(zmm_reg) b,
        k = in(kreg) k,
        options(pure, nomem, nostack),
    );
    c
}
