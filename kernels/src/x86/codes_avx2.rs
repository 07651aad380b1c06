//! The AVX2 decode step over B's codes: eight chains at a time with the lanes across the chains, the codes turned
//! into f32 magnitudes in registers (byte shuffles and the half-precision conversion), each term truncated by a
//! multiply-add rounded toward zero (MXCSR, set for the step's span) onto the biased accumulators of the chain.

use super::*;
#[cfg(target_arch = "x86_64")]
use crate::fpstate::FpState;

/// Rows of B per call of [`product_blocks_codes_avx2`]: one per lane of a vector of f32 accumulators.
pub const CODE_CHAINS_AVX2: usize = 8;

/// The factor by which [`product_blocks_codes_avx2`] takes A's magnitudes for B's format (`e4m3`: e4m3, else
/// e5m2): with B's magnitudes as the step makes them (e4m3's times 2^-8, e5m2's as they are) a term comes out as
/// |a| |b| 2^s with the scale s of [`product_blocks_fused`] (-7 and 0), so that the two steps carry the same sums.
pub fn avx2_a_scale(e4m3: bool) -> f32 {
    if e4m3 {
        2.0
    } else {
        1.0
    }
}

/// [`product_blocks_fused`] in AVX2, without chunks: the chains of one row of A against eight rows of B as codes
/// (`E4M3`: e4m3, else e5m2), for presets where [`Params::biased`] holds. `am` holds the magnitudes of A's row
/// times [`avx2_a_scale`], `ae` its exponents and `ac` its codes (for their signs), `bc` the eight rows of B,
/// `nblk` the blocks of `NB` (16 or 32), `c` the eight accumulators. Returns whether a code of B was non-finite
/// (its results are then not used, see [`crate::driver::Job::watching`]).
///
/// Per block the rows' codes are transposed by dwords (dword r of step t: row r at positions 4t .. 4t + 4). A's
/// sign bits are XORed onto them, so that a code's sign is its term's. A byte shuffle moves the codes of the
/// chains at two positions into the high bytes of eight 16-bit words, which are then binary16 bits: e5m2 is the
/// upper byte of the binary16 of the same value, and an e4m3 code's magnitude moved down one bit (exponent field
/// 0eeee) is the binary16 of its value times 2^-8, subnormals included; the hardware conversion makes them f32
/// (normal: no slow path in the multiply-adds). Lane 2j + i of a vector holds chain j (0..4, or 4..8) at position
/// 4t + 2h + i, so that A's magnitudes of positions 4t + 2h and + 1 are one 64-bit broadcast.
///
/// The arithmetic is that of [`product_blocks_fused`]: each lane keeps two accumulators on the bias 2^(g + 23 + s)
/// of its chain, one taking every term's magnitude, the other those of the negative terms (a multiply-subtract of
/// the term's negative part, zero for the positive terms), both rounded toward zero by MXCSR's rounding control,
/// which [`FpState::toward_zero`] sets for the step and puts back as the caller had it when the step ends,
/// returning or unwinding. Every other operation of the step is exact, so the rounding mode changes nothing else.
/// The block maximum comes from the exponent fields (a byte shuffle for e4m3, `max(field, 1) - 15` for e5m2,
/// [`crate::tables::ZERO_EXP`] for zeros); non-finite codes are found by the largest magnitude read.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C (the caller holds the AVX2 level and saw `is_x86_feature_detected!`
/// report FMA and F16C).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn product_blocks_codes_avx2<const NB: usize, const E4M3: bool>(
    am: &[f32],
    ae: &[i8],
    ac: &[u8],
    bc: [&[u8]; CODE_CHAINS_AVX2],
    nblk: usize,
    c: &mut [f32; CODE_CHAINS_AVX2],
    p: &Params,
) -> bool {
    let len = nblk * NB;
    // Every load below reads inside [0, len) of these slices.
    assert!(
        (NB == 16 || NB == 32)
            && p.biased
            && am.len() >= len
            && ae.len() >= len
            && ac.len() >= len
            && bc.iter().all(|x| x.len() >= len),
        "product_blocks_codes_avx2: a preset without room for the bias, or rows shorter than the blocks"
    );
    let _toward_zero = FpState::toward_zero();
    // The terms' scale 2^s (as in `product_blocks_fused`) and the format's constants.
    let s: i32 = if E4M3 { -7 } else { 0 };
    let unscale = _mm256_set1_ps(f32::from_bits(((127 - s) as u32) << 23));
    let last_finite = _mm256_set1_epi8(if E4M3 { 0x7E } else { 0x7B });
    let mag_mask = _mm256_set1_epi8(0x7F);
    let e4m3_exp = _mm256_setr_epi8(
        -6, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, -6, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8,
    );
    let (nibble, fifteen, one) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(15), _mm256_set1_epi8(1));
    let (field5, zero_exp) = (_mm256_set1_epi8(0x1F), _mm256_set1_epi8(crate::tables::ZERO_EXP));
    let half_mask = _mm256_set1_epi16(0xBFFFu16 as i16);
    // Byte q of each dword j of a 128-bit lane into the high byte of word 2j + q - q0 (q0 = 0, then 2).
    let pick = |q0: i8| {
        let mut b = [-128i8; 32];
        for l in 0..2 {
            for w in 0..8 {
                b[16 * l + 2 * w + 1] = (4 * (w / 2) + q0 as usize + w % 2) as i8;
            }
        }
        _mm256_loadu_si256(b.as_ptr() as *const __m256i)
    };
    let (pick01, pick23) = (pick(0), pick(2));
    // Lanes 2j, 2j + 1 of the vectors of chains 0..4 and 4..8: chain j's scale.
    let (low4, high4) = (_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3), _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
    let (abs, sign) = (_mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX)), _mm256_set1_epi32(i32::MIN));
    let (zero, two) = (_mm256_setzero_ps(), _mm256_set1_ps(2.0));
    let keep = _mm256_set1_epi32(p.mask32 as i32);
    let (floor, field) = (_mm256_set1_epi32(p.efloor), _mm256_set1_epi32(150 - p.frac));
    let mut rows = [std::ptr::null::<u8>(); CODE_CHAINS_AVX2];
    for (r, b) in rows.iter_mut().zip(bc) {
        *r = b.as_ptr();
    }
    let mut cv = _mm256_loadu_ps(c.as_ptr());
    let mut most = _mm256_setzero_si256();
    let steps = NB / 4;
    // (No closures called in the loop: see `product_blocks_codes`.)
    for o in (0..len).step_by(NB) {
        let x = block_codes_avx2::<NB>(&rows, o);
        // The block maximum: saturating i8 sums of the operand exponents, their maximum over the steps in each
        // byte, then over the four bytes of each dword (chain r in dword r).
        let mut emax = _mm256_set1_epi8(i8::MIN);
        for (t, &x) in x.iter().enumerate().take(steps) {
            let ea = _mm256_set1_epi32(std::ptr::read_unaligned(ae.as_ptr().add(o + 4 * t) as *const i32));
            let mag = _mm256_and_si256(x, mag_mask);
            most = _mm256_max_epu8(most, mag);
            let eb = if E4M3 {
                _mm256_shuffle_epi8(e4m3_exp, _mm256_and_si256(_mm256_srli_epi16::<3>(x), nibble))
            } else {
                let f = _mm256_and_si256(_mm256_srli_epi16::<2>(x), field5);
                _mm256_sub_epi8(_mm256_max_epu8(f, one), fifteen)
            };
            let eb = _mm256_blendv_epi8(eb, zero_exp, _mm256_cmpeq_epi8(mag, _mm256_setzero_si256()));
            emax = _mm256_max_epi8(emax, _mm256_adds_epi8(ea, eb));
        }
        let emax = _mm256_max_epi8(emax, _mm256_srli_epi32::<8>(emax));
        let emax = _mm256_max_epi8(emax, _mm256_srli_epi32::<16>(emax));
        let emax = _mm256_srai_epi32::<24>(_mm256_slli_epi32::<24>(emax));
        // The bias's exponent field per chain, E + 127 + 23 - frac, from the products' maximum and the floor, or
        // from c's own field; the terms' bias is 2^s times it.
        let fe = _mm256_add_epi32(_mm256_max_epi32(emax, floor), field);
        let mag = _mm256_andnot_si256(sign, _mm256_castps_si256(cv));
        let fc = _mm256_add_epi32(_mm256_srli_epi32::<23>(mag), _mm256_set1_epi32(23 - p.frac));
        let f = _mm256_max_epi32(fe, fc);
        let bias = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(f));
        let lanes = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(f, _mm256_set1_epi32(s))));
        let (lo, hi) = (_mm256_permutevar8x32_ps(lanes, low4), _mm256_permutevar8x32_ps(lanes, high4));
        // Accumulators: chains 0..4 at positions 4t, 4t + 1 and at 4t + 2, 4t + 3, then chains 4..8 the same.
        let mut tot = [lo, lo, hi, hi];
        let mut neg = tot;
        for (t, &x) in x.iter().enumerate().take(steps) {
            // The codes with their terms' signs, as binary16 bits in 16-bit words.
            let a_signs = std::ptr::read_unaligned(ac.as_ptr().add(o + 4 * t) as *const u32) & 0x8080_8080;
            let signed = _mm256_xor_si256(x, _mm256_set1_epi32(a_signs as i32));
            let mut y = [_mm256_shuffle_epi8(signed, pick01), _mm256_shuffle_epi8(signed, pick23)];
            if E4M3 {
                for y in y.iter_mut() {
                    *y = _mm256_and_si256(_mm256_srai_epi16::<1>(*y), half_mask);
                }
            }
            let a = [
                _mm256_castpd_ps(_mm256_set1_pd(std::ptr::read_unaligned(am.as_ptr().add(o + 4 * t) as *const f64))),
                _mm256_castpd_ps(_mm256_set1_pd(
                    std::ptr::read_unaligned(am.as_ptr().add(o + 4 * t + 2) as *const f64),
                )),
            ];
            let halves = [
                _mm256_castsi256_si128(y[0]),
                _mm256_castsi256_si128(y[1]),
                _mm256_extracti128_si256::<1>(y[0]),
                _mm256_extracti128_si256::<1>(y[1]),
            ];
            for i in 0..4 {
                let b = _mm256_cvtph_ps(halves[i]);
                tot[i] = _mm256_fmadd_ps(a[i % 2], _mm256_and_ps(b, abs), tot[i]);
                neg[i] = _mm256_fnmadd_ps(a[i % 2], _mm256_min_ps(b, zero), neg[i]);
            }
        }
        // Each lane's part (tot - 2 neg + bias: exact), the phases of each chain added, then chain r into lane r:
        // the pairs of lanes into [c0 c1 c4 c5 | c2 c3 c6 c7], then the 64-bit pieces in order.
        let mut part = [zero; 4];
        for i in 0..4 {
            part[i] = _mm256_add_ps(_mm256_fnmadd_ps(two, neg[i], tot[i]), if i < 2 { lo } else { hi });
        }
        let h = _mm256_hadd_ps(_mm256_add_ps(part[0], part[1]), _mm256_add_ps(part[2], part[3]));
        let sums = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(h)));
        let terms = _mm256_mul_ps(sums, unscale);
        // c truncated to the grid (rounded toward zero onto the bias, then less it), with its sign; the sum keeps
        // frac_out bits.
        let ct = _mm256_sub_ps(_mm256_add_ps(bias, _mm256_castsi256_ps(mag)), bias);
        let ct = _mm256_or_ps(ct, _mm256_and_ps(cv, _mm256_castsi256_ps(sign)));
        let block = _mm256_add_ps(terms, ct);
        cv = _mm256_and_ps(block, _mm256_castsi256_ps(keep));
    }
    _mm256_storeu_ps(c.as_mut_ptr(), cv);
    _mm256_movemask_epi8(_mm256_cmpgt_epi8(most, last_finite)) != 0
}

/// The codes of eight rows at block offset `o`, transposed by dwords: vector t holds positions o + 4t .. o + 4t + 4
/// of every row, row r in dword r (NB / 4 vectors; the rest are zero), after asking at every 64 bytes for each row's
/// line [`AHEAD`] bytes on, into the second-level cache (see [`block_codes`]).
///
/// Sixteen positions at a time: rows j and j + 4 in the two 128-bit lanes of vector j, then a 4 x 4 transpose of
/// dwords in each lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_codes_avx2<const NB: usize>(rows: &[*const u8; CODE_CHAINS_AVX2], o: usize) -> [__m256i; 8] {
    if o.is_multiple_of(64) {
        for r in rows {
            _mm_prefetch::<_MM_HINT_T1>(r.wrapping_add(o + AHEAD) as *const i8);
        }
    }
    let mut x = [_mm256_setzero_si256(); 8];
    for (h, x) in x.chunks_exact_mut(4).take(NB / 16).enumerate() {
        let mut z = [_mm256_setzero_si256(); 4];
        for (j, z) in z.iter_mut().enumerate() {
            *z = _mm256_loadu2_m128i(
                rows[j + 4].add(o + 16 * h) as *const __m128i,
                rows[j].add(o + 16 * h) as *const __m128i,
            );
        }
        let (t0, t1) = (_mm256_unpacklo_epi32(z[0], z[1]), _mm256_unpackhi_epi32(z[0], z[1]));
        let (t2, t3) = (_mm256_unpacklo_epi32(z[2], z[3]), _mm256_unpackhi_epi32(z[2], z[3]));
        x[0] = _mm256_unpacklo_epi64(t0, t2);
        x[1] = _mm256_unpackhi_epi64(t0, t2);
        x[2] = _mm256_unpacklo_epi64(t1, t3);
        x[3] = _mm256_unpackhi_epi64(t1, t3);
    }
    x
}
