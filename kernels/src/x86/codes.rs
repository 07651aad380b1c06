//! The AVX-512 decode step over B's codes: sixteen chains at a time, the codes of sixteen rows transposed so that
//! the lanes run across the chains and turned into values in registers (the hardware half-precision conversion).

use super::*;

/// Bytes ahead of the block that [`product_blocks_codes`] asks the memory for in every row, into the second-level
/// cache: a tile's other groups of rows run before these rows' next piece, and lines asked into the first-level
/// cache were gone by then. `mmaemu bench gemm --m 1 --n 4096 --k 4096 --no-native`, hopper, 2 threads, three
/// alternating runs, into L1 against into L2: fast 7.0–7.8 vs 7.9–9.1, slow 5.4–6.3 vs 6.6–6.9 GMAC/s; 1024 bytes
/// ahead was no better.
pub(super) const AHEAD: usize = 512;

/// Rows of B per call of [`product_blocks_codes`]: one per lane of a vector of f32 accumulators.
pub const CODE_CHAINS: usize = 16;

/// [`product_blocks`] for the AVX-512 level over B's codes, sixteen chains at a time with the lanes across the
/// chains: `bc` holds sixteen rows of B as FP8 codes (`E4M3`: e4m3, else e5m2), `av`/`ae` the row of A decoded as
/// before, `c` the sixteen accumulators. Returns whether a code of B was non-finite.
///
/// Per block, the rows' codes are transposed by dwords, so that one vector holds four consecutive positions of
/// every row (lane r: row r). A code of B becomes its value through the hardware half-precision conversion: e5m2
/// is the upper byte of the binary16 of the same value, and an e4m3 code's magnitude moved down one bit (exponent
/// field 0eeee, same mantissa) is the binary16 of its value times 2^-8, subnormals included, so A's values are
/// multiplied by 2^8 (exact: |a| * 2^8 < 2^17). The operand exponent comes from the exponent field
/// (`max(field, 1) - bias`), with [`crate::tables::ZERO_EXP`] for zeros. Each f32 lane then holds one chain at
/// one of four phases of the position: the block maximum is taken over the steps and then over the four bytes of
/// each dword, the truncated terms (integers below 2^24: exact in any order) are summed over the steps and then
/// over the four phases, and the sixteen chains' scales and normalisations share the lanes of one vector.
///
/// Non-finite codes of B are not made zeros: the step only reports them (the largest magnitude it read), and its
/// results are then discarded by its caller, which runs it on finite codes or watches B (see
/// [`crate::driver::Job::watching`]).
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL, AVX2 and F16C (the caller holds the AVX-512 level, made after
/// `is_x86_feature_detected!` reported them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,f16c")]
#[inline]
pub unsafe fn product_blocks_codes<const NB: usize, const E4M3: bool>(
    av: &[f32],
    ae: &[i8],
    bc: [&[u8]; CODE_CHAINS],
    nblk: usize,
    c: &mut [f32; CODE_CHAINS],
    p: &Params,
) -> bool {
    let len = nblk * NB;
    // Every load below reads inside [0, len) of these slices.
    assert!(
        (NB == 16 || NB == 32) && av.len() >= len && ae.len() >= len && bc.iter().all(|x| x.len() >= len),
        "product_blocks_codes: the rows are shorter than the blocks"
    );
    // The format's constants: exponent-field mask and bias, the last finite magnitude.
    let (field_mask, bias, last_finite) = if E4M3 { (0x0F, 7, 0x7E) } else { (0x1F, 15, 0x7B) };
    let (mag_mask, one) = (_mm512_set1_epi8(0x7F), _mm512_set1_epi8(1));
    let (field_mask, bias, zero_exp) =
        (_mm512_set1_epi8(field_mask), _mm512_set1_epi8(bias), _mm512_set1_epi8(crate::tables::ZERO_EXP));
    // e4m3's operand exponent of each exponent field, max(field, 1) - 7, looked up in every 128-bit lane.
    let e4m3_exp = _mm512_broadcast_i32x4(_mm_setr_epi8(-6, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8));
    let half_mask = _mm512_set1_epi16(if E4M3 { 0xBFFFu16 as i16 } else { -1 });
    let a_scale = _mm512_set1_ps(if E4M3 { 256.0 } else { 1.0 });
    // Lane l of the f32 vector q holds chain 4q + l / 4: the index of its scale.
    let mut spread = [_mm512_setzero_si512(); 4];
    for (q, v) in spread.iter_mut().enumerate() {
        let mut i = [0i32; 16];
        for (l, x) in i.iter_mut().enumerate() {
            *x = (4 * q + l / 4) as i32;
        }
        *v = _mm512_loadu_si512(i.as_ptr() as *const __m512i);
    }
    // Lanes 0, 4, 8, 12 of two vectors, into lanes 0..8.
    let firsts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
    let mut rows = [std::ptr::null::<u8>(); CODE_CHAINS];
    for (r, b) in rows.iter_mut().zip(bc) {
        *r = b.as_ptr();
    }
    let mut cv = _mm512_loadu_ps(c.as_ptr());
    let mut most = _mm512_setzero_si512();
    let steps = NB / 4;
    // (No closures or array maps below: they are not compiled with this function's target features, and calls
    // to them ran the step four times slower.)
    for o in (0..len).step_by(NB) {
        let x = block_codes::<NB>(&rows, o);
        // The block maximum: saturating i8 sums of the operand exponents, their maximum over the steps in each
        // byte, then over the four bytes of each dword.
        let mut emax = _mm512_set1_epi8(i8::MIN);
        for (t, &x) in x.iter().enumerate().take(steps) {
            let ea = _mm512_set1_epi32(std::ptr::read_unaligned(ae.as_ptr().add(o + 4 * t) as *const i32));
            most = _mm512_max_epu8(most, _mm512_and_si512(x, mag_mask));
            let zero = _mm512_testn_epi8_mask(x, mag_mask);
            let eb = if E4M3 {
                _mm512_shuffle_epi8(e4m3_exp, _mm512_and_si512(_mm512_srli_epi16::<3>(x), field_mask))
            } else {
                let field = _mm512_and_si512(_mm512_srli_epi16::<2>(x), field_mask);
                _mm512_sub_epi8(_mm512_max_epu8(field, one), bias)
            };
            emax = _mm512_max_epi8(emax, _mm512_adds_epi8(ea, _mm512_mask_mov_epi8(eb, zero, zero_exp)));
        }
        let emax = _mm512_max_epi8(emax, _mm512_srli_epi32::<8>(emax));
        let emax = _mm512_max_epi8(emax, _mm512_srli_epi32::<16>(emax));
        let emax = _mm512_srai_epi32::<24>(_mm512_slli_epi32::<24>(emax));
        // E = max(products, floor, exponent of c) (a nonzero accumulator is normal; +0 reads as -127).
        let ec = _mm512_sub_epi32(
            _mm512_and_si512(_mm512_srli_epi32::<23>(_mm512_castps_si512(cv)), _mm512_set1_epi32(0xFF)),
            _mm512_set1_epi32(127),
        );
        let e = _mm512_max_epi32(_mm512_max_epi32(emax, _mm512_set1_epi32(p.efloor)), ec);
        let s = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_sub_epi32(_mm512_set1_epi32(127 + p.frac), e)));
        let inv = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(_mm512_set1_epi32(127 - p.frac), e)));
        let mut sq = [_mm512_setzero_ps(); 4];
        for q in 0..4 {
            sq[q] = _mm512_permutexvar_ps(spread[q], s);
        }
        // Aligned, truncated terms: lane l of vector q is chain 4q + l / 4 at positions 4t + l % 4.
        let mut acc = [_mm512_setzero_ps(); 4];
        for (t, &x) in x.iter().enumerate().take(steps) {
            let a = _mm512_mul_ps(_mm512_broadcast_f32x4(_mm_loadu_ps(av.as_ptr().add(o + 4 * t))), a_scale);
            // The codes as binary16 bits (sign-extended bytes: the sign lands in bit 15), chains 0..8 and 8..16.
            let mut halves = [
                _mm512_cvtepi8_epi16(_mm512_castsi512_si256(x)),
                _mm512_cvtepi8_epi16(_mm512_extracti64x4_epi64::<1>(x)),
            ];
            for h in halves.iter_mut() {
                *h = if E4M3 {
                    _mm512_and_si512(_mm512_slli_epi16::<7>(*h), half_mask)
                } else {
                    _mm512_slli_epi16::<8>(*h)
                };
            }
            for (q, acc) in acc.iter_mut().enumerate() {
                let h = halves[q / 2];
                let h = if q % 2 == 0 { _mm512_castsi512_si256(h) } else { _mm512_extracti64x4_epi64::<1>(h) };
                let term = _mm512_mul_ps(_mm512_mul_ps(a, _mm512_cvtph_ps(h)), sq[q]);
                *acc = _mm512_add_ps(*acc, _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(term));
            }
        }
        // Each chain's four phases added (pairs, then pairs of pairs), then chain r into lane r.
        for v in acc.iter_mut() {
            *v = _mm512_add_ps(*v, _mm512_permute_ps::<0b10_11_00_01>(*v));
            *v = _mm512_add_ps(*v, _mm512_permute_ps::<0b01_00_11_10>(*v));
        }
        let lo = _mm512_permutex2var_ps(acc[0], firsts, acc[1]);
        let hi = _mm512_permutex2var_ps(acc[2], firsts, acc[3]);
        let sums = _mm512_shuffle_f32x4::<0b01_00_01_00>(lo, hi);
        // c enters like a term; the sum keeps frac_out bits and is scaled back.
        let ct = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(cv, s));
        let sum = _mm512_add_ps(sums, ct);
        let kept = _mm512_and_si512(_mm512_castps_si512(sum), _mm512_set1_epi32(p.mask32 as i32));
        cv = _mm512_mul_ps(_mm512_castsi512_ps(kept), inv);
    }
    _mm512_storeu_ps(c.as_mut_ptr(), cv);
    _mm512_cmpgt_epu8_mask(most, _mm512_set1_epi8(last_finite)) != 0
}

/// The codes of sixteen rows at block offset `o`, transposed ([`transposed`]), after asking at every 64 bytes for
/// each row's line `AHEAD` bytes on, into the second-level cache (past the slice at its end, where it reads the rows'
/// next piece: a hint reads nothing architecturally, and `wrapping_add` makes no claim on the address).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
pub(super) unsafe fn block_codes<const NB: usize>(rows: &[*const u8; CODE_CHAINS], o: usize) -> [__m512i; 8] {
    if o.is_multiple_of(64) {
        for r in rows {
            _mm_prefetch::<_MM_HINT_T1>(r.wrapping_add(o + AHEAD) as *const i8);
        }
    }
    transposed::<NB>(rows, o)
}

/// The codes of sixteen rows at block offset `o`, transposed by dwords: vector t holds positions o + 4t .. o + 4t + 4
/// of every row, row r in dword r (NB / 4 vectors: 8 for blocks of 32, 4 for blocks of 16; the rest are zero).
///
/// Sixteen positions at a time: rows c, c + 4, c + 8 and c + 12 in the 128-bit lanes of vector c, then a 4 x 4
/// transpose of dwords in each lane. (Loading 32 positions of rows c and c + 8 into the halves of a vector saves
/// loads but needs a permute across the lanes for every vector of the result; on the vector port that the byte
/// permutes and mask tests of the steps also use, that made the AVX-512 product-lane step slower: `mmaemu bench
/// gemm --m 1 --n 4096 --k 4096 --threads 1 --reps 100 --no-native`, paired, 1.05 to 1.08 faster this way.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn transposed<const NB: usize>(rows: &[*const u8; CODE_CHAINS], o: usize) -> [__m512i; 8] {
    let mut x = [_mm512_setzero_si512(); 8];
    for (h, x) in x.chunks_exact_mut(4).take(NB / 16).enumerate() {
        let mut z = [_mm512_setzero_si512(); 4];
        for (c, z) in z.iter_mut().enumerate() {
            *z = lanes([0, 1, 2, 3].map(|l| rows[c + 4 * l].add(o + 16 * h)));
        }
        let (t0, t1) = (_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
        let (t2, t3) = (_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
        x[0] = _mm512_unpacklo_epi64(t0, t2);
        x[1] = _mm512_unpackhi_epi64(t0, t2);
        x[2] = _mm512_unpacklo_epi64(t1, t3);
        x[3] = _mm512_unpackhi_epi64(t1, t3);
    }
    x
}
