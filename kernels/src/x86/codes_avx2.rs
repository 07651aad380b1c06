//! The AVX2 decode step over B's codes: eight chains at a time with the lanes across the chains, the codes turned
//! into f32 magnitudes in registers (byte shuffles, shifts and masks), each term truncated by a
//! multiply-add rounded toward zero (MXCSR, set for the step's span) onto the biased accumulators of the chain.

use super::*;
#[cfg(target_arch = "x86_64")]
use crate::fpstate::FpState;

/// Rows of B per call of [`product_blocks_codes_avx2`]: one per lane of a vector of f32 accumulators.
pub const CODE_CHAINS_AVX2: usize = 8;

/// [`product_blocks_fused`] in AVX2: the chains of one row of A against eight rows of B as codes (`E4M3`: e4m3,
/// else e5m2), for presets where [`Params::biased`] holds. `am` holds the magnitudes of A's row times
/// [`FUSED_A_SCALE`], `ae` its exponents and `ac` its codes (for their signs), `bc` the eight rows of B, `nblk` the
/// blocks of `NB` (16 or 32), `c` the eight accumulators. With `restart` > 0 a chain ends after every `restart`
/// blocks: its result is stored in `ends` (one row of eight per chunk, in order; the caller adds them into the
/// split's sums, rounded to nearest even, which this step's rounding mode cannot do) and it starts again from +0.
/// Returns whether a code of B was non-finite (its results are then not used, see
/// [`crate::driver::Job::watching`]).
///
/// Per block the rows' codes are transposed by dwords (dword r of step t: row r at positions 4t .. 4t + 4), and the
/// f32 vector of phase q holds the eight chains at position 4t + q, so that a's magnitude is one broadcast and the
/// chains' biases share the lanes. A code becomes an f32 by integer arithmetic alone: its magnitude plus a byte
/// looked up by `min(magnitude, 8)` (e4m3; e5m2: 4) is, at bit 20 (e4m3) or 21 (e5m2) of its dword, the f32 of
/// |b| 2^-117 or |b| 2^-110 — the bytes of [`crate::tables::Lut::packed`], normal f32s even for subnormal codes,
/// so that no multiply-add meets a subnormal input —, moved there by a shift and a mask per phase. A's sign bits
/// XORed onto the codes give each term's sign, which picks (a blend) the negative terms' magnitudes.
///
/// The arithmetic is that of [`product_blocks_fused`]: each lane keeps two accumulators on the bias 2^(g + 23 + s)
/// of its chain, one taking every term's magnitude, the other the negative terms', both rounded toward zero by
/// MXCSR's rounding control, which [`FpState::toward_zero`] sets for the step and puts back as the caller had it
/// when the step ends, returning or unwinding. Every other operation of the step is exact, so the rounding mode
/// changes nothing else. The block maximum comes from the exponent fields, in bytes biased by 96: a byte shuffle
/// (e4m3) or `max(field, 1) + 81` (e5m2), made 0 for zero codes by their magnitude's sign (`vpsignb`), so that a
/// product with a zero operand ranks as [`crate::tables::ZERO_EXP`] gives it; non-finite codes are found by the
/// largest magnitude read.
///
/// # Safety
/// The CPU must support AVX2 and FMA (the caller holds the AVX2 level and saw `is_x86_feature_detected!` report
/// FMA).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn product_blocks_codes_avx2<const NB: usize, const E4M3: bool>(
    am: &[f32],
    ae: &[i8],
    ac: &[u8],
    bc: [&[u8]; CODE_CHAINS_AVX2],
    (nblk, restart): (usize, usize),
    (c, ends): (&mut [f32; CODE_CHAINS_AVX2], &mut [[f32; CODE_CHAINS_AVX2]]),
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
            && bc.iter().all(|x| x.len() >= len)
            && (restart == 0 || ends.len() >= nblk / restart),
        "product_blocks_codes_avx2: a preset without room for the bias, rows shorter than the blocks or too few ends"
    );
    let _toward_zero = FpState::toward_zero();
    // The terms' scale 2^s (as in `product_blocks_fused`) and the format's constants.
    let s: i32 = if E4M3 { -7 } else { 0 };
    let unscale = _mm256_set1_ps(f32::from_bits(((127 - s) as u32) << 23));
    let last_finite = _mm256_set1_epi8(if E4M3 { 0x7E } else { 0x7B });
    let mag_mask = _mm256_set1_epi8(0x7F);
    // Exponents biased by 96: e4m3's by its field (a zero field is the subnormals' exponent, -6).
    let e4m3_exp = _mm256_setr_epi8(
        90, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 90, 90, 91, 92, 93, 94, 95, 96, 97, 98,
        99, 100, 101, 102, 103, 104,
    );
    let (nibble, field5, one, e5m2_bias) =
        (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x1F), _mm256_set1_epi8(1), _mm256_set1_epi8(81));
    let packing = Packing::new(E4M3);
    let packed = _mm256_set1_epi32(if E4M3 { 0x0FF0_0000 } else { 0x1FE0_0000 });
    let zero = _mm256_setzero_ps();
    let keep = _mm256_set1_epi32(p.mask32 as i32);
    let sign = _mm256_set1_epi32(i32::MIN);
    let (floor, field) = (_mm256_set1_epi32(p.efloor + 96), _mm256_set1_epi32(150 - p.frac - 96));
    let mut rows = [std::ptr::null::<u8>(); CODE_CHAINS_AVX2];
    for (r, b) in rows.iter_mut().zip(bc) {
        *r = b.as_ptr();
    }
    let mut cv = _mm256_loadu_ps(c.as_ptr());
    let mut most = _mm256_setzero_si256();
    let steps = NB / 4;
    let accumulators: usize = if NB == 16 { 2 } else { 4 };
    let (mut left, mut chunk) = (if restart > 0 { restart } else { usize::MAX }, 0);
    // (No closures called in the loop: see `product_blocks_codes`.)
    for o in (0..len).step_by(NB) {
        let x = block_codes_avx2::<NB>(&rows, o);
        // The block maximum: saturating i8 sums of the operand exponents, their maximum over the steps in each
        // byte, then over the four bytes of each dword (chain r in dword r). The packed bytes and the terms'
        // signs are made on the way.
        let mut emax = _mm256_set1_epi8(i8::MIN);
        let (mut bytes, mut signs) = ([_mm256_setzero_si256(); 8], [_mm256_setzero_si256(); 8]);
        for t in 0..steps {
            let ea = _mm256_set1_epi32(std::ptr::read_unaligned(ae.as_ptr().add(o + 4 * t) as *const i32));
            let mag = _mm256_and_si256(x[t], mag_mask);
            most = _mm256_max_epu8(most, mag);
            let eb = if E4M3 {
                _mm256_shuffle_epi8(e4m3_exp, _mm256_and_si256(_mm256_srli_epi16::<3>(mag), nibble))
            } else {
                let f = _mm256_and_si256(_mm256_srli_epi16::<2>(mag), field5);
                _mm256_add_epi8(_mm256_max_epu8(f, one), e5m2_bias)
            };
            emax = _mm256_max_epi8(emax, _mm256_adds_epi8(ea, _mm256_sign_epi8(eb, mag)));
            bytes[t] = packing.bytes(mag);
            // A's codes XORed on: each byte's top bit is its term's sign (only that bit is read).
            let a_codes = std::ptr::read_unaligned(ac.as_ptr().add(o + 4 * t) as *const i32);
            signs[t] = _mm256_xor_si256(x[t], _mm256_set1_epi32(a_codes));
        }
        let emax = _mm256_max_epi8(emax, _mm256_srli_epi32::<8>(emax));
        let emax = _mm256_max_epi8(emax, _mm256_srli_epi32::<16>(emax));
        let emax = _mm256_srai_epi32::<24>(_mm256_slli_epi32::<24>(emax));
        // The bias's exponent field per chain, E + 127 + 23 - frac, from the products' maximum and the floor (both
        // biased by 96 here), or from c's own field; the terms' bias is 2^s times it.
        let fe = _mm256_add_epi32(_mm256_max_epi32(emax, floor), field);
        let mag = _mm256_andnot_si256(sign, _mm256_castps_si256(cv));
        let fc = _mm256_add_epi32(_mm256_srli_epi32::<23>(mag), _mm256_set1_epi32(23 - p.frac));
        let f = _mm256_max_epi32(fe, fc);
        let bias = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(f));
        let lanes = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(f, _mm256_set1_epi32(s))));
        // Accumulators of the four phases (blocks of 16: of two phases each, which the registers can hold):
        // every term's magnitude, and the negative terms'.
        let (mut tot, mut neg) = ([lanes; 4], [lanes; 4]);
        for t in 0..steps {
            let (y, sg) = (bytes[t], signs[t]);
            let b = if E4M3 {
                [
                    _mm256_slli_epi32::<20>(y),
                    _mm256_slli_epi32::<12>(y),
                    _mm256_slli_epi32::<4>(y),
                    _mm256_srli_epi32::<4>(y),
                ]
            } else {
                [
                    _mm256_slli_epi32::<21>(y),
                    _mm256_slli_epi32::<13>(y),
                    _mm256_slli_epi32::<5>(y),
                    _mm256_srli_epi32::<3>(y),
                ]
            };
            let negative = [_mm256_slli_epi32::<24>(sg), _mm256_slli_epi32::<16>(sg), _mm256_slli_epi32::<8>(sg), sg];
            for q in 0..4 {
                let a = _mm256_broadcast_ss(&*am.as_ptr().add(o + 4 * t + q));
                let b = _mm256_castsi256_ps(_mm256_and_si256(b[q], packed));
                let j = q % accumulators;
                tot[j] = _mm256_fmadd_ps(a, b, tot[j]);
                neg[j] = _mm256_fmadd_ps(a, negative_part(b, negative[q]), neg[j]);
            }
        }
        // Each accumulator's part less its bias (tot - 2 neg, from -bias - tot to tot - bias), and their sum: the
        // bias added back to one part of each pair before the other is added, so that every value is on the grid
        // below 2^24 of it (exact).
        let two = _mm256_set1_ps(2.0);
        let mut part = [zero; 4];
        for q in 0..accumulators {
            part[q] = _mm256_fnmadd_ps(two, neg[q], tot[q]);
        }
        let mut sums = _mm256_add_ps(_mm256_fmadd_ps(lanes, two, part[0]), part[1]);
        if accumulators == 4 {
            sums = _mm256_add_ps(sums, _mm256_add_ps(_mm256_fmadd_ps(lanes, two, part[2]), part[3]));
        }
        // c truncated to the grid (rounded toward zero onto the bias, then less it), with its sign; the sum keeps
        // frac_out bits.
        let ct = _mm256_sub_ps(_mm256_add_ps(bias, _mm256_castsi256_ps(mag)), bias);
        let ct = _mm256_or_ps(ct, _mm256_and_ps(cv, _mm256_castsi256_ps(sign)));
        let block = _mm256_fmadd_ps(sums, unscale, ct);
        cv = _mm256_and_ps(block, _mm256_castsi256_ps(keep));
        // A chunk's last block: its chain's result is stored, and the next chain starts from +0.
        left -= 1;
        if left == 0 {
            left = restart;
            _mm256_storeu_ps(ends[chunk].as_mut_ptr(), cv);
            chunk += 1;
            cv = zero;
        }
    }
    _mm256_storeu_ps(c.as_mut_ptr(), cv);
    _mm256_movemask_epi8(_mm256_cmpgt_epi8(most, last_finite)) != 0
}

/// [`crate::tables::Lut::packed`] in AVX2 registers, computed rather than looked up: a magnitude plus a byte looked up
/// by min(magnitude, cap), which normalises the subnormal codes, keeps zeros zero and moves the normal codes' exponent
/// by 3 (e4m3) or 2 (e5m2). The table's byte for every finite magnitude; the non-finite ones get bytes of no meaning
/// (the steps report those codes, and their results are not used).
#[cfg(target_arch = "x86_64")]
pub(super) struct Packing {
    cap: __m256i,
    norm: __m256i,
}

#[cfg(target_arch = "x86_64")]
impl Packing {
    /// The packing of e4m3 magnitudes (`e4m3`), else of e5m2's.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn new(e4m3: bool) -> Packing {
        let (cap, t) = if e4m3 {
            (8, [0i8, 7, 14, 17, 20, 21, 22, 23, 24, 24, 24, 24, 24, 24, 24, 24])
        } else {
            (4, [0i8, 3, 6, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8])
        };
        let norm = _mm256_loadu2_m128i(t.as_ptr() as *const __m128i, t.as_ptr() as *const __m128i);
        Packing { cap: _mm256_set1_epi8(cap), norm }
    }

    /// The packed bytes of 32 magnitudes (codes' low 7 bits).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn bytes(&self, mag: __m256i) -> __m256i {
        _mm256_add_epi8(mag, _mm256_shuffle_epi8(self.norm, _mm256_min_epu8(mag, self.cap)))
    }
}

/// The lanes of `b` whose `negative` has its top bit set, zeros elsewhere: one `vblendvps`, written out because
/// the compiler otherwise makes it a shift, an arithmetic shift and a mask (three operations of the vector ports
/// where the blend is one on the CPUs measured in `kernels/performance.md`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn negative_part(b: __m256, negative: __m256i) -> __m256 {
    let r: __m256;
    // SAFETY: a register-only AVX instruction; the caller's CPU has AVX2.
    std::arch::asm!(
        "vblendvps {r}, {z}, {b}, {m}",
        r = lateout(ymm_reg) r,
        z = in(ymm_reg) _mm256_setzero_ps(),
        b = in(ymm_reg) b,
        m = in(ymm_reg) negative,
        options(pure, nomem, nostack, preserves_flags),
    );
    r
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
