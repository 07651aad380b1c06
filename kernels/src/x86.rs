//! The block steps in x86 instructions. Product lanes ([`crate::kernel::product_blocks`]): in AVX2 over decoded rows
//! of B (the two x86 levels), eight chains at a time, each chain's products in the lanes of a vector, the per-block
//! work of the eight chains gathered into one vector; in AVX-512 over B's codes (one or two rows of A), sixteen chains
//! at a time, the codes transposed so that the lanes run across the chains, and in a fused form
//! ([`product_blocks_fused`]). Panels (AVX-512, [`panel_blocks`]): the scaling, truncation and sum of each term in
//! one fused multiply-add rounded toward zero. Exact in every step, and tested against the model like every level.

#[cfg(target_arch = "x86_64")]
use crate::kernel::Params;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

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

/// Bytes ahead of the block that [`product_blocks_codes`] asks the memory for in every row, into the second-level
/// cache: a tile's other groups of rows run before these rows' next piece, and lines asked into the first-level
/// cache were gone by then. `mmaemu bench gemm --m 1 --n 4096 --k 4096 --no-native`, hopper, 2 threads, three
/// alternating runs, into L1 against into L2: fast 7.0–7.8 vs 7.9–9.1, slow 5.4–6.3 vs 6.6–6.9 GMAC/s; 1024 bytes
/// ahead was no better.
const AHEAD: usize = 512;

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
unsafe fn block_codes<const NB: usize>(rows: &[*const u8; CODE_CHAINS], o: usize) -> [__m512i; 8] {
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

/// The 16 bytes at each of `pieces` in the four 128-bit lanes of a vector, in order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn lanes(pieces: [*const u8; 4]) -> __m512i {
    let p = pieces.map(|p| p as *const __m128i);
    let v = _mm512_inserti32x4::<1>(_mm512_castsi128_si512(_mm_loadu_si128(p[0])), _mm_loadu_si128(p[1]));
    let v = _mm512_inserti32x4::<2>(v, _mm_loadu_si128(p[2]));
    _mm512_inserti32x4::<3>(v, _mm_loadu_si128(p[3]))
}

/// The power of two by which [`product_blocks_fused`] takes A's magnitudes: 2^110 keeps every FP8 magnitude
/// (e5m2's largest is below 2^16) below f32's largest.
pub const FUSED_A_SCALE: f32 = f32::from_bits((127 + 110) << 23);

/// [`product_blocks_codes`] with the scaling, truncation and sum of each term in one fused multiply-add rounded
/// toward zero, for presets where [`Params::biased`] holds, on CPUs with AVX-512 VBMI: `am` holds the magnitudes of
/// A's row times [`FUSED_A_SCALE`], `ae` its exponents and `ac` its codes (for their signs), `bc` sixteen rows of B
/// as codes (`E4M3`: e4m3, else e5m2; `lb` their table), `nblk` the blocks, `c` the sixteen accumulators. With
/// `restart` > 0 a chain ends after every `restart` blocks: its result is added in fp32 (round to nearest even) into
/// `sum`, and it starts again from +0 (slow accumulation's chunks, in order). Returns whether a code of B was
/// non-finite (its results are then not used, as with [`product_blocks_codes`]).
///
/// The codes are transposed as there (dword r of step t: row r at positions 4t .. 4t + 4), and the f32 vector of
/// phase q holds the sixteen chains at position 4t + q, so that a's magnitude is one broadcast and the sixteen
/// chains' scales share the lanes. A byte lookup in registers (`vpermi2b`, the code's low 7 bits into a 128-byte
/// table) turns the codes into [`crate::tables::Lut::packed`] bytes, and phase q's byte moved to bit
/// [`crate::tables::Lut::packed_shift`] of its dword (a shift and a mask) is the f32 |b| 2^-D, D =
/// [`crate::tables::Lut::packed_scale`]: normal or zero, as the multiply-adds run slowly on subnormal inputs. With
/// A's scale a term comes out as |a| |b| 2^s, s = 110 - D. The operand exponents come the same way from
/// [`crate::tables::Lut::e_marked`]; its non-finite mark makes the block maximum of such a code's chain exceed every
/// real product's exponent, whatever A's code ([`crate::tables::ZERO_EXP`]), which is the report.
///
/// Each lane keeps the two accumulators of [`panel_blocks`] on the bias 2^(g + 23 + s) of its chain (g = E - frac):
/// one takes every term's magnitude, the other those of the negative terms only, by a lane mask (a term is negative
/// where the signs of a and b differ). Rounding toward zero adds the magnitude truncated to the grid 2^(g + s), so
/// with tot = bias + P + N and neg = bias + N, tot - 2 neg = P - N - bias (in (-2 bias, 0): one exact multiply-add)
/// and that plus the bias is the phase's part of the block sum times 2^s, a multiple of the grid below 2^(g + 23 + s)
/// in magnitude: the four parts add exactly, and times 2^-s they are on the true scale (f32 subnormals on the way
/// are exact too). c's magnitude truncated to the grid (rounded toward zero onto the true bias, then less it) takes
/// c's sign and is added last; the sum, exact and +0 when zero, keeps frac_out bits, as in [`panel_blocks`].
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/VBMI and AVX2 (the caller holds the AVX-512 level and saw
/// `is_x86_feature_detected!("avx512vbmi")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn product_blocks_fused<const NB: usize, const E4M3: bool>(
    am: &[f32],
    ae: &[i8],
    ac: &[u8],
    bc: [&[u8]; CODE_CHAINS],
    (nblk, restart): (usize, usize),
    (c, sum): (&mut [f32; CODE_CHAINS], &mut [f32; CODE_CHAINS]),
    lb: &crate::tables::Lut,
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
        "product_blocks_fused: a preset without room for the bias, or rows shorter than the blocks"
    );
    // The terms' scale 2^s, and the packed byte's bits in the f32 (see above).
    assert!(lb.packed_shift() == if E4M3 { 20 } else { 21 }, "product_blocks_fused: B's table is of the other format");
    let s = 110 - lb.packed_scale();
    let magnitude = _mm512_set1_epi32(0xFF << lb.packed_shift());
    let unscale = _mm512_set1_ps(f32::from_bits(((127 - s) as u32) << 23));
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid in both.
    let marked = &*(lb.e_marked.as_ptr() as *const [u8; 128]);
    let (ex, packed) = (halves(marked), halves(&lb.packed));
    let sign_of =
        [_mm512_set1_epi32(0x80), _mm512_set1_epi32(0x8000), _mm512_set1_epi32(0x80_0000), _mm512_set1_epi32(i32::MIN)];
    let mut rows = [std::ptr::null::<u8>(); CODE_CHAINS];
    for (r, b) in rows.iter_mut().zip(bc) {
        *r = b.as_ptr();
    }
    let two = _mm512_set1_ps(2.0);
    let (keep, sign) = (_mm512_set1_epi32(p.mask32 as i32), _mm512_set1_epi32(i32::MIN));
    let (floor, field) = (_mm512_set1_epi8(p.efloor as i8), _mm512_set1_epi8((150 - p.frac) as u8 as i8));
    let mut cv = _mm512_loadu_ps(c.as_ptr());
    let mut sums = _mm512_loadu_ps(sum.as_ptr());
    // The largest block maximum byte seen: above MAX_PRODUCT_EXP only where B held a non-finite code.
    let mut worst = _mm512_set1_epi8(i8::MIN);
    let steps = NB / 4;
    // (No closures below: see `product_blocks_codes`.)
    // Blocks left in the running chunk (no chunks: a count no piece reaches).
    let mut left = if restart > 0 { restart } else { usize::MAX };
    for o in (0..len).step_by(NB) {
        let x = block_codes::<NB>(&rows, o);
        // The block maximum: saturating i8 sums of the operand exponents, their maximum over the steps in each
        // byte, then over the four bytes of each dword (into its byte 0).
        let mut emax = _mm512_set1_epi8(i8::MIN);
        for (t, &x) in x.iter().enumerate().take(steps) {
            let ea = _mm512_set1_epi32(std::ptr::read_unaligned(ae.as_ptr().add(o + 4 * t) as *const i32));
            let eb = _mm512_permutex2var_epi8(ex.0, x, ex.1);
            emax = _mm512_max_epi8(emax, _mm512_adds_epi8(ea, eb));
        }
        worst = _mm512_max_epi8(worst, emax);
        let emax = _mm512_max_epi8(emax, _mm512_srli_epi32::<8>(emax));
        let emax = _mm512_max_epi8(emax, _mm512_srli_epi32::<16>(emax));
        // The bias's exponent field per chain, E + 127 + 23 - frac, as in `rows_over`: for the products' maximum and
        // the floor made in byte 0, for c from its own field; the terms' bias is 2^s times it.
        let fe = _mm512_and_si512(_mm512_add_epi8(_mm512_max_epi8(emax, floor), field), _mm512_set1_epi32(0xFF));
        let mag = _mm512_andnot_si512(sign, _mm512_castps_si512(cv));
        let fc = _mm512_add_epi32(_mm512_srli_epi32::<23>(mag), _mm512_set1_epi32(23 - p.frac));
        let f = _mm512_max_epi32(fe, fc);
        let bias = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(f));
        let lanes = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(f, _mm512_set1_epi32(s))));
        let (mut tot, mut neg) = ([lanes; 4], [lanes; 4]);
        for (t, &x) in x.iter().enumerate().take(steps) {
            // Sign bits set where a term is negative.
            let signs = _mm512_xor_si512(
                x,
                _mm512_set1_epi32(std::ptr::read_unaligned(ac.as_ptr().add(o + 4 * t) as *const i32)),
            );
            let y = _mm512_permutex2var_epi8(packed.0, x, packed.1);
            let b = [
                if E4M3 { _mm512_slli_epi32::<20>(y) } else { _mm512_slli_epi32::<21>(y) },
                if E4M3 { _mm512_slli_epi32::<12>(y) } else { _mm512_slli_epi32::<13>(y) },
                if E4M3 { _mm512_slli_epi32::<4>(y) } else { _mm512_slli_epi32::<5>(y) },
                if E4M3 { _mm512_srli_epi32::<4>(y) } else { _mm512_srli_epi32::<3>(y) },
            ];
            for q in 0..4 {
                let a = _mm512_set1_ps(*am.get_unchecked(o + 4 * t + q));
                let b = _mm512_castsi512_ps(_mm512_and_si512(b[q], magnitude));
                tot[q] = _mm512_fmadd_round_ps::<TOWARD_ZERO>(a, b, tot[q]);
                neg[q] = masked_fmadd_toward_zero(a, b, neg[q], _mm512_test_epi32_mask(signs, sign_of[q]));
            }
        }
        // Each phase's part, the four added, back on the true scale.
        let mut part = [_mm512_setzero_ps(); 4];
        for q in 0..4 {
            part[q] = _mm512_add_ps(_mm512_fnmadd_ps(two, neg[q], tot[q]), lanes);
        }
        let terms =
            _mm512_mul_ps(_mm512_add_ps(_mm512_add_ps(part[0], part[1]), _mm512_add_ps(part[2], part[3])), unscale);
        // c truncated to the grid, with its sign; the sum keeps frac_out bits.
        let mag = _mm512_castsi512_ps(mag);
        let ct = _mm512_sub_ps(_mm512_add_round_ps::<TOWARD_ZERO>(bias, mag), bias);
        let ct = _mm512_ternarylogic_epi32::<0xD8>(_mm512_castps_si512(ct), _mm512_castps_si512(cv), sign);
        let block = _mm512_add_ps(terms, _mm512_castsi512_ps(ct));
        cv = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(block), keep));
        // A chunk's last block: its chain's result joins the sum, and the next chain starts from +0.
        // (A count down rather than a remainder: no division per block.)
        left -= 1;
        if left == 0 {
            left = restart;
            sums = _mm512_add_ps(sums, cv);
            cv = _mm512_setzero_ps();
        }
    }
    _mm512_storeu_ps(c.as_mut_ptr(), cv);
    _mm512_storeu_ps(sum.as_mut_ptr(), sums);
    _mm512_cmpgt_epi8_mask(worst, _mm512_set1_epi8(crate::tables::MAX_PRODUCT_EXP)) != 0
}

/// [`product_blocks_fused`] for blocks of `nb` products (16 or 32; other sizes panic in the step's check) and B's
/// format as `lb` gives it.
///
/// # Safety
/// As for [`product_blocks_fused`].
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fused_blocks(
    nb: usize,
    am: &[f32],
    ae: &[i8],
    ac: &[u8],
    bc: [&[u8]; CODE_CHAINS],
    chains: (usize, usize),
    acc: (&mut [f32; CODE_CHAINS], &mut [f32; CODE_CHAINS]),
    lb: &crate::tables::Lut,
    p: &Params,
) -> bool {
    match (nb, lb.format() == mmaemu_model::Format::E4m3) {
        (16, true) => product_blocks_fused::<16, true>(am, ae, ac, bc, chains, acc, lb, p),
        (16, false) => product_blocks_fused::<16, false>(am, ae, ac, bc, chains, acc, lb, p),
        (_, true) => product_blocks_fused::<32, true>(am, ae, ac, bc, chains, acc, lb, p),
        _ => product_blocks_fused::<32, false>(am, ae, ac, bc, chains, acc, lb, p),
    }
}

/// `_mm512_mask3_fmadd_round_ps::<TOWARD_ZERO>(a, b, c, k)` as the one instruction it names: the optimiser otherwise
/// makes it an unmasked multiply-add and a masked move, one more operation on the vector ports.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn masked_fmadd_toward_zero(a: __m512, b: __m512, c: __m512, k: __mmask16) -> __m512 {
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

/// A 128-byte table in two vectors (the sources of a two-source byte permute).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn halves(t: &[u8; 128]) -> (__m512i, __m512i) {
    (_mm512_loadu_si512(t.as_ptr() as *const __m512i), _mm512_loadu_si512(t.as_ptr().add(64) as *const __m512i))
}

/// Outputs of a panel of [`panel_blocks`]: four vectors of sixteen f32 lanes.
pub const PANEL: usize = 64;

/// The rounding of [`panel_blocks`]'s additions: toward zero, exceptions suppressed (none can occur: every sum
/// stays in its binade).
#[cfg(target_arch = "x86_64")]
const TOWARD_ZERO: i32 = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

/// The chains of rows of A against a panel of [`PANEL`] rows of B over one piece of `nblk` blocks, for the
/// AVX-512 level on the narrow path where [`Params::biased`] holds: row r's codes are `a[r * stride..][..len]`
/// (`la` their table), `pm` holds the panel's magnitudes and `ps` its magnitudes by sign
/// ([`crate::tables::Lut::decode_magnitudes`]: 64 magnitudes, and [`SIDED`] by sign, per position), `pe` its
/// exponents (64 per position), and `acc` the rows' 64 running accumulators each, row after row.
///
/// The arithmetic of [`crate::kernel::block_steps`] with the scaling, the truncation and the sum of each term in
/// one fused multiply-add rounded toward zero. With the block exponent E and the grid g = E - frac, each chain
/// keeps two accumulators that start at the bias 2^(g + 23): one takes the magnitudes of all the terms, the other
/// those of the positive terms only. A term's magnitude |a| |b| is exact in the fused
/// multiply-add; while an accumulator stays in [2^(g + 23), 2^(g + 24)) its spacing is 2^g, so rounding
/// acc + |a| |b| toward zero adds exactly |a| |b| truncated to the grid, which is the model's trunc(p / 2^g) 2^g;
/// `biased` bounds the sums below 2^23 units of the grid, so the accumulators never leave that binade. A term is
/// positive where sign(a) = sign(b): the second accumulator multiplies |a| by the side of B that has a's sign
/// (its magnitudes there, zero elsewhere: a zero term leaves an accumulator unchanged), chosen by the address
/// the row's sign gives — a load, where a mask per 16 lanes would cost a vector port's operation. c enters the
/// same way (its magnitude rounded toward zero onto both biases, or the first only when negative). With pos =
/// bias + P and tot = bias + P + N, the block sum P - N is (2 pos - tot) - bias: 2 pos - tot = bias + P - N is a
/// multiple of 2^g in (0, 2^(g + 24)), made exactly by one multiply-add, and the difference is exact too
/// (multiples of 2^g below 2^(g + 23)), +0 when it is zero; clearing its mantissa bits below frac_out gives the new
/// c directly, the grid being already the true scale.
///
/// With `end` (as long as `acc`), the piece ends the rows' chains (slow accumulation's chunk): each chain's result is
/// added into its `end` in fp32, rounded to nearest even, as the executor adds a chunk's results, and its accumulator
/// restarts at +0.
///
/// Rows run in pairs, which share every load of the panel. The block maximum of the next block (the next pair's
/// first, after a pair's last) runs in the same pass over the positions as this block's terms: it does not depend
/// on them (only c links the blocks, and it enters after the maximum), and its integer work fills the lanes the
/// multiply-adds leave.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL and AVX2 (the caller holds the AVX-512 level, made after
/// `is_x86_feature_detected!` reported them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn panel_blocks(
    a: &[u8],
    stride: usize,
    nblk: usize,
    la: &crate::tables::Lut,
    pm: &[f32],
    ps: &[f32],
    pe: &[i8],
    acc: &mut [f32],
    mut end: Option<&mut [f32]>,
    p: &Params,
) {
    let (nfma, rows) = (p.nfma, acc.len() / PANEL);
    let len = nblk * nfma;
    // Every load below reads inside these bounds.
    assert!(
        p.biased
            && end.as_ref().is_none_or(|s| s.len() == acc.len())
            && stride >= len
            && (rows == 0 || a.len() >= (rows - 1) * stride + len)
            && pm.len() >= len * PANEL
            && ps.len() >= len * SIDED
            && pe.len() >= len * PANEL,
        "panel_blocks: a preset without room for the bias, or rows or a piece shorter than its blocks"
    );
    if nblk == 0 || rows == 0 {
        return;
    }
    let panel = Panel { pm: pm.as_ptr(), ps: ps.as_ptr(), pe: pe.as_ptr(), nfma, nblk };
    let row = |r: usize| a.as_ptr().add(r.min(rows - 1) * stride);
    let mut e = [block_max(row(0), la, pe.as_ptr(), nfma), block_max(row(1), la, pe.as_ptr(), nfma)];
    for r in (0..rows).step_by(2) {
        let c = acc.as_mut_ptr().add(r * PANEL);
        let s = end.as_mut().map(|s| s.as_mut_ptr().add(r * PANEL));
        let next = (r + 2 < rows).then(|| [row(r + 2), row(r + 3)]);
        // The codes of the rows ROWS_AHEAD on, asked for now: rows lie a stride apart, and where the stride is a
        // multiple of 4 KiB (K = 4096) they all fall into one set of the first-level cache and few of the second,
        // so without the hint the next rows' codes come late from the last level.
        for ahead in [r + ROWS_AHEAD, r + ROWS_AHEAD + 1] {
            let first = row(ahead);
            _mm_prefetch::<_MM_HINT_T0>(first as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(first.add(len - 1) as *const i8);
        }
        if r + 1 < rows {
            let s = s.map(|s| [s, s.add(PANEL)]);
            e = rows_over::<2>(&panel, [row(r), row(r + 1)], ([c, c.add(PANEL)], s), e, next, la, p);
        } else {
            rows_over::<1>(&panel, [row(r)], ([c], s.map(|s| [s])), [e[0]], None, la, p);
        }
    }
}

/// The planes of one piece of a panel of [`panel_blocks`], decoded from B's codes in place: `b` holds the panel's
/// [`PANEL`] rows of B, `k` apart, and the piece is positions `k0 .. k0 + len` of each (`len` a multiple of 16);
/// `pm`, `ps` and `pe` receive, per position, the magnitudes, the magnitudes by sign and the exponents that
/// [`crate::tables::Lut::decode_magnitudes`] makes of the same codes in position-major order, bit for bit.
///
/// Sixteen positions at a time: vector i holds rows i, 16 + i, 32 + i and 48 + i in its four 128-bit lanes, and a
/// transpose of 16 by 16 bytes in every lane (`transposed_16`) leaves position p of all 64 rows in vector p. Byte
/// permutes over the low 7 bits (the magnitude) look up the exponent ([`crate::tables::Lut::e`]) and the packed
/// byte ([`crate::tables::Lut::packed`]), which moved to its bit and scaled back by 2^packed_scale (exact: a power of
/// two on a normal f32, or +0) is the magnitude; the sign bits of the codes choose the side of each magnitude.
/// Returns whether a code was non-finite (decoded as a zero, as there: see [`crate::driver::Job::watching`]).
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/VBMI and AVX2 (the caller holds the AVX-512 level and saw
/// `is_x86_feature_detected!("avx512vbmi")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
#[inline]
pub unsafe fn panel_piece(
    b: &[u8],
    (k, k0, len): (usize, usize, usize),
    lb: &crate::tables::Lut,
    (pm, ps, pe): (&mut [f32], &mut [f32], &mut [i8]),
) -> bool {
    // Every load and store below stays inside these bounds.
    assert!(
        len.is_multiple_of(16)
            && b.len() >= (PANEL - 1) * k + k0 + len
            && pm.len() >= len * PANEL
            && ps.len() >= len * SIDED
            && pe.len() >= len * PANEL,
        "panel_piece: rows of B or planes shorter than the piece"
    );
    // SAFETY: i8 and u8 have the same size and alignment, and every bit pattern is valid in both.
    let exps = &*(lb.e.as_ptr() as *const [u8; 128]);
    let (ex, packed) = (halves(exps), halves(&lb.packed));
    let up = _mm512_set1_ps(f32::from_bits(((127 + lb.packed_scale()) as u32) << 23));
    let e4m3 = lb.packed_shift() == 20;
    let (pm, ps, pe) = (pm.as_mut_ptr(), ps.as_mut_ptr(), pe.as_mut_ptr());
    // The largest magnitude read.
    let (mut most, magnitude) = (_mm512_setzero_si512(), _mm512_set1_epi8(0x7F));
    for h in (0..len).step_by(16) {
        let mut z = [_mm512_setzero_si512(); 16];
        for (i, z) in z.iter_mut().enumerate() {
            *z = lanes([0, 1, 2, 3].map(|l| b.as_ptr().add((16 * l + i) * k + k0 + h)));
        }
        let x = transposed_16(z);
        for (p, &code) in x.iter().enumerate() {
            let at = h + p;
            _mm512_storeu_si512(pe.add(at * PANEL) as *mut __m512i, _mm512_permutex2var_epi8(ex.0, code, ex.1));
            let y = _mm512_permutex2var_epi8(packed.0, code, packed.1);
            let negative = _mm512_movepi8_mask(code);
            most = _mm512_max_epu8(most, _mm512_and_si512(code, magnitude));
            for q in 0..4 {
                let w = _mm512_cvtepu8_epi32(lane_quarter(y, q));
                let w = if e4m3 { _mm512_slli_epi32::<20>(w) } else { _mm512_slli_epi32::<21>(w) };
                let m = _mm512_mul_ps(_mm512_castsi512_ps(w), up);
                let minus = (negative >> (16 * q)) as u16;
                _mm512_storeu_ps(pm.add(at * PANEL + 16 * q), m);
                _mm512_storeu_ps(ps.add(at * SIDED + 16 * q), _mm512_maskz_mov_ps(!minus, m));
                _mm512_storeu_ps(ps.add(at * SIDED + PANEL + 16 * q), _mm512_maskz_mov_ps(minus, m));
            }
        }
    }
    _mm512_cmpgt_epu8_mask(most, _mm512_set1_epi8(lb.last_finite() as i8)) != 0
}

/// Four 16 x 16 transposes of bytes, one in each 128-bit lane: byte j of lane l of `z[i]` becomes byte i of lane l
/// of vector j. Four rounds of interleaving, of bytes, words, dwords and qwords.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn transposed_16(z: [__m512i; 16]) -> [__m512i; 16] {
    // Each round interleaves vectors 2i and 2i + 1 into i (the low halves of their lanes) and 8 + i (the high
    // halves). With the row r and the byte j written in bits, an element at vector (r3 r2 r1 r0), byte (j3 j2 j1 j0)
    // goes to vector (j3 r3 r2 r1), byte (j2 j1 j0 r0); after four rounds it is at vector (j0 j1 j2 j3), byte r.
    let mut x = z;
    for round in 0..4 {
        let mut y = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            (y[i], y[8 + i]) = match round {
                0 => (_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b)),
                1 => (_mm512_unpacklo_epi16(a, b), _mm512_unpackhi_epi16(a, b)),
                2 => (_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b)),
                _ => (_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)),
            };
        }
        x = y;
    }
    // Vector j of the result is vector (j0 j1 j2 j3), j's bits reversed.
    const REVERSED: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];
    let mut t = x;
    for (t, &j) in t.iter_mut().zip(&REVERSED) {
        *t = x[j];
    }
    t
}

/// How many rows ahead [`panel_blocks`] asks for A's codes: three pairs, about a thousand cycles of multiply-adds
/// at 32 positions, time enough for a line from the last-level cache.
const ROWS_AHEAD: usize = 6;

/// Magnitudes by sign per position of [`panel_blocks`]'s panel: those of B's positive codes (zero in the lanes
/// of its negative codes), then those of its negative codes.
pub const SIDED: usize = 2 * PANEL;

/// A panel piece of [`panel_blocks`]: magnitudes, magnitudes by sign and exponents per position, and its blocks.
#[cfg(target_arch = "x86_64")]
struct Panel {
    pm: *const f32,
    ps: *const f32,
    pe: *const i8,
    nfma: usize,
    nblk: usize,
}

/// R rows (`a`: their codes, `c`: their accumulators) over every block of the panel, from the maxima `e` of their
/// first blocks, their chains ended into `end` where given (see [`panel_blocks`]); returns the maxima of the first
/// blocks of the rows `next` (two rows, the second repeated where there is one), or of nothing.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
// (Index loops over rows and quarters, several arrays at a time, read plainest here.)
#[allow(clippy::needless_range_loop)]
unsafe fn rows_over<const R: usize>(
    panel: &Panel,
    a: [*const u8; R],
    (c, end): ([*mut f32; R], Option<[*mut f32; R]>),
    mut e: [__m512i; R],
    next: Option<[*const u8; 2]>,
    la: &crate::tables::Lut,
    p: &Params,
) -> [__m512i; 2] {
    let (nfma, zero) = (panel.nfma, _mm512_setzero_ps());
    let (keep, two) = (_mm512_set1_epi32(p.mask32 as i32), _mm512_set1_ps(2.0));
    let mut cv = [[zero; 4]; R];
    for r in 0..R {
        for q in 0..4 {
            cv[r][q] = _mm512_loadu_ps(c[r].add(16 * q));
        }
    }
    let mut after = [_mm512_setzero_si512(); 2];
    for blk in 0..panel.nblk {
        let o = blk * nfma;
        // E = max(products, floor, exponent of c) per chain; both accumulators start at the bias 2^(g + 23), with
        // c's magnitude added toward zero (to the positive one only where c is positive).
        // The bias's exponent field is E + 127 + 23 - frac: for the products' maximum and the floor it is made in
        // the bytes of the maximum (`biased` keeps it below 256, and the floor above 0) and widened, for c it is
        // c's own field plus 23 - frac (+0's field is 0, below the floor's).
        let (mut tot, mut pos, mut bias) = ([[zero; 4]; R], [[zero; 4]; R], [[zero; 4]; R]);
        let (floor, field) = (_mm512_set1_epi8(p.efloor as i8), _mm512_set1_epi8((150 - p.frac) as u8 as i8));
        for r in 0..R {
            let fe = _mm512_add_epi8(_mm512_max_epi8(e[r], floor), field);
            for q in 0..4 {
                let mag = _mm512_and_si512(_mm512_castps_si512(cv[r][q]), _mm512_set1_epi32(0x7FFF_FFFF));
                let fc = _mm512_add_epi32(_mm512_srli_epi32::<23>(mag), _mm512_set1_epi32(23 - p.frac));
                let f = _mm512_max_epi32(_mm512_cvtepu8_epi32(lane_quarter(fe, q)), fc);
                bias[r][q] = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(f));
                let mag = _mm512_castsi512_ps(mag);
                tot[r][q] = _mm512_add_round_ps::<TOWARD_ZERO>(bias[r][q], mag);
                pos[r][q] = _mm512_add_round_ps::<TOWARD_ZERO>(bias[r][q], _mm512_max_ps(cv[r][q], zero));
            }
        }
        // The next block's maxima: these rows', or after their last block the next rows' first.
        let o2 = o + nfma;
        if blk + 1 < panel.nblk {
            let mut na = [a[0]; 2];
            for r in 0..R {
                na[r] = a[r].add(o2);
            }
            let m = terms::<R, true>(panel, o, a, la, &mut tot, &mut pos, na, panel.pe.add(o2 * PANEL));
            e.copy_from_slice(&m[..R]);
        } else if let Some(na) = next {
            after = terms::<R, true>(panel, o, a, la, &mut tot, &mut pos, na, panel.pe);
        } else {
            terms::<R, false>(panel, o, a, la, &mut tot, &mut pos, [a[0]; 2], panel.pe);
        }
        // The block sum P - (T - P), truncated to frac_out bits relative to its own exponent. With the bias B, pos =
        // B + P and tot = B + P + N: 2 pos - tot = B + P - N lies in (0, 2 B), a multiple of 2^g below 2^(g + 24),
        // so one multiply-add makes it exactly; less B it is P - N, exact too (+0 when zero).
        for r in 0..R {
            for q in 0..4 {
                let sum = _mm512_sub_ps(_mm512_fmsub_ps(two, pos[r][q], tot[r][q]), bias[r][q]);
                cv[r][q] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(sum), keep));
            }
        }
    }
    for r in 0..R {
        for q in 0..4 {
            match end {
                Some(s) => {
                    let sum = _mm512_add_ps(_mm512_loadu_ps(s[r].add(16 * q)), cv[r][q]);
                    _mm512_storeu_ps(s[r].add(16 * q), sum);
                    _mm512_storeu_ps(c[r].add(16 * q), zero);
                }
                None => _mm512_storeu_ps(c[r].add(16 * q), cv[r][q]),
            }
        }
    }
    after
}

/// The 16 bytes of quarter `q` (0..4) of a vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn lane_quarter(x: __m512i, q: usize) -> __m128i {
    match q {
        0 => _mm512_extracti32x4_epi32::<0>(x),
        1 => _mm512_extracti32x4_epi32::<1>(x),
        2 => _mm512_extracti32x4_epi32::<2>(x),
        _ => _mm512_extracti32x4_epi32::<3>(x),
    }
}

/// The block maximum of the 64 chains over `nfma` positions: max of ea + eb in saturating i8 lanes (see the
/// comment at the top of `crate::kernel`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn block_max(a: *const u8, la: &crate::tables::Lut, pe: *const i8, nfma: usize) -> __m512i {
    let mut e = _mm512_set1_epi8(i8::MIN);
    for k in 0..nfma {
        let ea = _mm512_set1_epi32(la.e4[*a.add(k) as usize]);
        e = _mm512_max_epi8(e, _mm512_adds_epi8(ea, _mm512_loadu_si512(pe.add(k * PANEL) as *const _)));
    }
    e
}

/// One block's terms of [`rows_over`] at positions [o, o + nfma) for R rows (`a`: their codes) into their
/// accumulators, and with `NEXT` the block maxima of two rows (`na`: their codes of that block, `npe`: its
/// exponents), which are returned.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn terms<const R: usize, const NEXT: bool>(
    panel: &Panel,
    o: usize,
    a: [*const u8; R],
    la: &crate::tables::Lut,
    tot: &mut [[__m512; 4]; R],
    pos: &mut [[__m512; 4]; R],
    na: [*const u8; 2],
    npe: *const i8,
) -> [__m512i; 2] {
    let mut e = [_mm512_set1_epi8(i8::MIN); 2];
    for k in 0..panel.nfma {
        let b = panel.pm.add((o + k) * PANEL);
        let mut bq = [_mm512_setzero_ps(); 4];
        for (q, bq) in bq.iter_mut().enumerate() {
            *bq = _mm512_loadu_ps(b.add(16 * q));
        }
        for r in 0..R {
            let code = *a[r].add(o + k);
            let va = _mm512_set1_ps(la.m32[code as usize]);
            // A term is positive where B's code has a's sign.
            let side = panel.ps.add((o + k) * SIDED + (code >> 7) as usize * PANEL);
            for q in 0..4 {
                tot[r][q] = _mm512_fmadd_round_ps::<TOWARD_ZERO>(va, bq[q], tot[r][q]);
                let bs = _mm512_loadu_ps(side.add(16 * q));
                pos[r][q] = _mm512_fmadd_round_ps::<TOWARD_ZERO>(va, bs, pos[r][q]);
            }
        }
        if NEXT {
            let pe = _mm512_loadu_si512(npe.add(k * PANEL) as *const _);
            for (e, na) in e.iter_mut().zip(na) {
                let ea = _mm512_set1_epi32(la.e4[*na.add(k) as usize]);
                *e = _mm512_max_epi8(*e, _mm512_adds_epi8(ea, pe));
            }
        }
    }
    e
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

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::kernel::product_blocks;
    use crate::tables::Lut;
    use mmaemu_model::{Format, Preset};
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    /// The format pairs of the steps' tests: all four (e5m2 by e5m2 has the largest product exponents).
    const PAIRS: [(Format, Format); 4] = [
        (Format::E4m3, Format::E4m3),
        (Format::E5m2, Format::E4m3),
        (Format::E4m3, Format::E5m2),
        (Format::E5m2, Format::E5m2),
    ];

    /// Whether this CPU runs the AVX-512 steps (said on stderr where it does not).
    fn avx512() -> bool {
        let there = crate::SimdLevel::by_name("avx512").is_some();
        if !there {
            eprintln!("this CPU has no AVX-512: the step is not run");
        }
        there
    }

    /// A panel's piece decoded in place equals the same codes moved into position-major order and decoded by
    /// `Lut::decode_magnitudes`, bit for bit, and reports a non-finite code where there is one: both formats, all
    /// 256 codes (non-finite ones and both zeros included) in the first piece, random codes after it and finite
    /// ones only in the last, pieces of 16, 32 and 48 positions at an offset into rows of odd length.
    #[test]
    fn panel_piece_equals_the_decoded_codes() {
        if !avx512() || !crate::driver::vbmi() {
            eprintln!("this CPU has no AVX-512 VBMI: the decoding in place is not run");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0xDEC0DE);
        for f in [Format::E4m3, Format::E5m2] {
            let lb = Lut::new(f);
            for (round, len) in [16, 32, 48, 32].into_iter().enumerate() {
                let (k, k0) = (len + 2 * round + 7, 2 * round + 3);
                // Every code somewhere in the first round, random codes after it, finite ones only in the last.
                let b: Vec<u8> = (0..PANEL * k)
                    .map(|i| match (round, rng.random::<u8>()) {
                        (0, _) => (i * 37 % 256) as u8,
                        (3, c) if f.is_nonfinite(c) => c & 0xBF,
                        (_, c) => c,
                    })
                    .collect();
                let mut pc = vec![0u8; len * PANEL];
                for (p, codes) in pc.chunks_exact_mut(PANEL).enumerate() {
                    for (j, c) in codes.iter_mut().enumerate() {
                        *c = b[j * k + k0 + p];
                    }
                }
                if round == 0 {
                    assert!((0..=255u8).all(|c| pc.contains(&c)), "the first piece holds every code");
                }
                let (mut wm, mut ws, mut we) =
                    (vec![0f32; len * PANEL], vec![0f32; len * SIDED], vec![0i8; len * PANEL]);
                lb.decode_magnitudes::<PANEL>(&pc, &mut wm, &mut ws, &mut we);
                let (mut m, mut s, mut e) = (vec![1f32; len * PANEL], vec![1f32; len * SIDED], vec![1i8; len * PANEL]);
                let seen = unsafe { panel_piece(&b, (k, k0, len), &lb, (&mut m, &mut s, &mut e)) };
                assert_eq!(seen, f.any_nonfinite(&pc), "{f:?}, {len} positions: the non-finite report");
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(e, we, "{f:?}, {len} positions: exponents");
                assert_eq!(bits(&m), bits(&wm), "{f:?}, {len} positions: magnitudes");
                assert_eq!(bits(&s), bits(&ws), "{f:?}, {len} positions: magnitudes by sign");
            }
        }
    }

    /// The fused panel step equals the portable panel step, bit for bit: both formats of A and B, blocks of 16 and
    /// 32, rows of random finite codes (a tenth +0) against a panel of random finite codes (a tenth -0), five or
    /// six rows (pairs and a single row) of six blocks each, so that c grows, changes sign and enters the block
    /// maximum; rows read in place with a stride, and accumulators that start from earlier pieces' values.
    #[test]
    fn fused_panel_step_equals_the_panel_step() {
        if !avx512() {
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_FA57);
        for preset in [Preset::ada(), Preset::hopper()] {
            let p = Params::new(&preset);
            assert!(p.biased);
            for (fa, fb) in PAIRS {
                let (la, lb) = (Lut::new(fa), Lut::new(fb));
                let finite = |f: Format, rng: &mut ChaCha8Rng, top: u8| loop {
                    let c = rng.random_range(0..=top) | (rng.random::<u8>() & 0x80);
                    if !f.is_nonfinite(c) {
                        break c;
                    }
                };
                for round in 0..20 {
                    let (rows, nblk) = (5 + round % 2, 6);
                    let len = nblk * p.nfma;
                    let stride = len + 3;
                    // Narrower magnitudes every other round, so that the block maxima vary.
                    let top = if round % 2 == 0 { 0x7F } else { 0x3F };
                    let a: Vec<u8> = (0..rows * stride)
                        .map(|_| if rng.random_ratio(1, 10) { 0 } else { finite(fa, &mut rng, top) })
                        .collect();
                    let pc: Vec<u8> = (0..len * PANEL)
                        .map(|_| if rng.random_ratio(1, 10) { 0x80 } else { finite(fb, &mut rng, 0x7F) })
                        .collect();
                    let (mut pv, mut pe) = (vec![0f32; len * PANEL], vec![0i8; len * PANEL]);
                    lb.decode(&pc, &mut pv, &mut pe);
                    let (mut pm, mut ps) = (vec![0f32; len * PANEL], vec![0f32; len * SIDED]);
                    let mut pe2 = vec![0i8; len * PANEL];
                    lb.decode_magnitudes::<PANEL>(&pc, &mut pm, &mut ps, &mut pe2);
                    assert_eq!(pe, pe2);
                    // Accumulators from an earlier piece: results of the portable step over random codes.
                    let mut want = vec![0f32; rows * PANEL];
                    for (r, c) in want.chunks_exact_mut(PANEL).enumerate() {
                        let c: &mut [f32; PANEL] = c.try_into().unwrap();
                        if r % 2 == 1 {
                            crate::kernel::block_steps::<PANEL, f32, false, true>(
                                &a[r * stride..],
                                1,
                                &la,
                                &pv[PANEL * p.nfma..],
                                &pe[PANEL * p.nfma..],
                                c,
                                &p,
                            );
                        }
                    }
                    let mut got = want.clone();
                    for (r, c) in want.chunks_exact_mut(PANEL).enumerate() {
                        let c: &mut [f32; PANEL] = c.try_into().unwrap();
                        crate::kernel::block_steps::<PANEL, f32, false, true>(
                            &a[r * stride..r * stride + len],
                            nblk,
                            &la,
                            &pv,
                            &pe,
                            c,
                            &p,
                        );
                    }
                    // The same piece ending the chains (slow accumulation's chunk) into sums of earlier chunks:
                    // each sum gains the chain's result in fp32, and the chain restarts at +0.
                    let mut ended = got.clone();
                    let earlier: Vec<f32> =
                        (0..rows * PANEL).map(|_| lb.v32[finite(fb, &mut rng, 0x7F) as usize] * 1024.0).collect();
                    let mut sums = earlier.clone();
                    // SAFETY: the AVX-512 level exists, so the CPU has the step's features.
                    unsafe { panel_blocks(&a, stride, nblk, &la, &pm, &ps, &pe2, &mut got, None, &p) };
                    // SAFETY: as above.
                    unsafe { panel_blocks(&a, stride, nblk, &la, &pm, &ps, &pe2, &mut ended, Some(&mut sums), &p) };
                    for i in 0..want.len() {
                        // (Made only for a failure's message.)
                        let what = || {
                            format!(
                                "{} {fa} x {fb} round {round}: row {} output {}",
                                preset.name(),
                                i / PANEL,
                                i % PANEL
                            )
                        };
                        assert_eq!(got[i].to_bits(), want[i].to_bits(), "{}", what());
                        assert_eq!(sums[i].to_bits(), (earlier[i] + want[i]).to_bits(), "{}: the chunk's sum", what());
                        assert_eq!(ended[i].to_bits(), 0, "{}: the chain does not restart at +0", what());
                    }
                }
            }
        }
    }

    /// The AVX-512 steps over codes (the fused one where the CPU has VBMI) equal the portable step over the decoded
    /// rows, bit for bit, on every finite code of B's format, for blocks of 16 (ada) and 32 (hopper) and both formats
    /// of A and B, the fused one also over chunks of 128 positions added in fp32; and they report a non-finite code
    /// of B wherever one is planted (their results are then not used).
    #[test]
    fn codes_step_equals_the_decoded_step() {
        if !avx512() {
            return;
        }
        let vbmi = crate::driver::vbmi();
        if !vbmi {
            eprintln!("this CPU has no AVX-512 VBMI: the fused step over codes is not run");
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_C0DE);
        for preset in [Preset::ada(), Preset::hopper()] {
            let p = Params::new(&preset);
            for (fa, fb) in PAIRS {
                let (la, lb) = (Lut::new(fa), Lut::new(fb));
                let finite: Vec<u8> = (0..=255u8).filter(|&c| !fb.is_nonfinite(c)).collect();
                for round in 0..50 {
                    // Sixteen rows of B holding every finite code, 4 times each, shuffled, then padded with random
                    // finite codes to 1024 positions; A's codes random and finite, a tenth of them zeros, the
                    // magnitudes of a round drawn from a narrower range every other round so that the block maxima
                    // vary. One round in four, B holds only zeros and subnormals: the block maximum is then a
                    // subnormal's exponent (the format's lowest) plus A's largest, and the terms of A's small codes
                    // fall below the grid.
                    let len = 1024;
                    let subnormal = round % 4 == 2;
                    let top = if round % 2 == 0 { 0x7F } else { 0x3F };
                    let below_normal = if fb == Format::E4m3 { 8 } else { 4 };
                    let a: Vec<u8> = (0..len)
                        .map(|_| match rng.random_range(0..10) {
                            0 => 0,
                            _ => loop {
                                let c = rng.random_range(0..=top) | (rng.random::<u8>() & 0x80);
                                if !fa.is_nonfinite(c) {
                                    break c;
                                }
                            },
                        })
                        .collect();
                    let b: Vec<Vec<u8>> = (0..CODE_CHAINS)
                        .map(|_| {
                            if subnormal {
                                return (0..len)
                                    .map(|_| rng.random_range(0..below_normal) | (rng.random::<u8>() & 0x80))
                                    .collect();
                            }
                            let mut r: Vec<u8> = finite.iter().cycle().take(4 * finite.len()).copied().collect();
                            r.extend((r.len()..len).map(|_| finite[rng.random_range(0..finite.len())]));
                            for i in (1..len).rev() {
                                r.swap(i, rng.random_range(0..=i));
                            }
                            r
                        })
                        .collect();
                    let (mut av, mut ae) = (vec![0f32; len], vec![0i8; len]);
                    la.decode(&a, &mut av, &mut ae);
                    let am: Vec<f32> = av.iter().map(|v| v.abs() * FUSED_A_SCALE).collect();
                    let decoded: Vec<(Vec<f32>, Vec<i8>)> = b
                        .iter()
                        .map(|r| {
                            let (mut v, mut e) = (vec![0f32; len], vec![0i8; len]);
                            lb.decode(r, &mut v, &mut e);
                            (v, e)
                        })
                        .collect();
                    let nb = preset.nfma();
                    // A step over codes (`fused`: the fused one) on rows `b` at positions [o, o + nblk * nb): its
                    // accumulators and report.
                    let codes = |fused: bool, b: &[Vec<u8>], o: usize, nblk: usize| {
                        let bc: [&[u8]; CODE_CHAINS] = std::array::from_fn(|j| &b[j][o..]);
                        let mut got = [0f32; CODE_CHAINS];
                        // SAFETY: the AVX-512 level exists, so the CPU has the steps' features; the fused step runs
                        // only where VBMI was detected too.
                        let nonfinite = unsafe {
                            match (nb, fb) {
                                _ if fused => fused_blocks(
                                    nb,
                                    &am[o..],
                                    &ae[o..],
                                    &a[o..],
                                    bc,
                                    (nblk, 0),
                                    (&mut got, &mut [0.0; CODE_CHAINS]),
                                    &lb,
                                    &p,
                                ),
                                (16, Format::E4m3) => {
                                    product_blocks_codes::<16, true>(&av[o..], &ae[o..], bc, nblk, &mut got, &p)
                                }
                                (16, _) => {
                                    product_blocks_codes::<16, false>(&av[o..], &ae[o..], bc, nblk, &mut got, &p)
                                }
                                (_, Format::E4m3) => {
                                    product_blocks_codes::<32, true>(&av[o..], &ae[o..], bc, nblk, &mut got, &p)
                                }
                                _ => product_blocks_codes::<32, false>(&av[o..], &ae[o..], bc, nblk, &mut got, &p),
                            }
                        };
                        (got, nonfinite)
                    };
                    // The portable step over the decoded rows.
                    let portable = |o: usize, nblk: usize| {
                        let bv: [&[f32]; CODE_CHAINS] = std::array::from_fn(|j| &decoded[j].0[o..]);
                        let be: [&[i8]; CODE_CHAINS] = std::array::from_fn(|j| &decoded[j].1[o..]);
                        let mut want = [0f32; CODE_CHAINS];
                        match nb {
                            16 => {
                                product_blocks::<16, CODE_CHAINS, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p)
                            }
                            _ => {
                                product_blocks::<32, CODE_CHAINS, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p)
                            }
                        }
                        want
                    };
                    // The whole rows; for B's subnormals also every block alone, whose maximum then comes from
                    // its products (over whole rows the accumulator's exponent soon wins it).
                    let blocks = if subnormal { len / nb } else { 0 };
                    let runs = std::iter::once((0, len / nb)).chain((0..blocks).map(|blk| (blk * nb, 1)));
                    let steps: &[bool] = if vbmi { &[false, true] } else { &[false] };
                    for (o, nblk) in runs {
                        let want = portable(o, nblk);
                        for &fused in steps {
                            let (got, nonfinite) = codes(fused, &b, o, nblk);
                            let what = format!(
                                "{} {fa} x {fb} round {round}, positions from {o}, fused {fused}",
                                preset.name()
                            );
                            assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{what}");
                            assert!(!nonfinite, "{what}: a non-finite code reported among finite ones");
                        }
                    }
                    let want = portable(0, len / nb);
                    assert!(want.iter().any(|&c| c != 0.0), "the chains are all zero: the test would show nothing");
                    if vbmi {
                        // The fused step over chunks of 128 positions, each from +0, their results added in fp32:
                        // the portable step per chunk, added in order.
                        let restart = 128 / nb;
                        let mut want = [0f32; CODE_CHAINS];
                        for o in (0..len).step_by(128) {
                            let chunk = portable(o, restart);
                            for (w, x) in want.iter_mut().zip(chunk) {
                                *w += x;
                            }
                        }
                        let bc: [&[u8]; CODE_CHAINS] = std::array::from_fn(|j| &b[j][..]);
                        let (mut c, mut sum) = ([0f32; CODE_CHAINS], [0f32; CODE_CHAINS]);
                        let chains = (len / nb, restart);
                        // SAFETY: as above, where VBMI was detected.
                        unsafe { fused_blocks(nb, &am, &ae, &a, bc, chains, (&mut c, &mut sum), &lb, &p) };
                        let what = format!("{} {fa} x {fb} round {round}, chunks of 128", preset.name());
                        assert_eq!(sum.map(f32::to_bits), want.map(f32::to_bits), "{what}");
                        assert_eq!(c.map(f32::to_bits), [0; CODE_CHAINS], "{what}: the chains do not end at +0");
                    }
                    // One non-finite code (any of the format's, either sign) in one row at one position: a random
                    // one, and one where A's code is a zero (the lowest operand exponent).
                    let zero_at = a.iter().position(|&c| c & 0x7F == 0);
                    for at in [Some(rng.random_range(0..len)), zero_at].into_iter().flatten() {
                        let mut planted = b.clone();
                        let row = rng.random_range(0..CODE_CHAINS);
                        let nonfinite: Vec<u8> = (0..=255u8).filter(|&c| fb.is_nonfinite(c)).collect();
                        planted[row][at] = nonfinite[rng.random_range(0..nonfinite.len())];
                        for &fused in steps {
                            let (_, told) = codes(fused, &planted, 0, len / nb);
                            assert!(
                                told,
                                "{} {fa} x {fb}, fused {fused}: the code {:#04x} at row {row}, position {at} (A's code \
                                 {:#04x}), was not reported",
                                preset.name(),
                                planted[row][at],
                                a[at]
                            );
                        }
                    }
                    // B's largest finite magnitude in every row where A's exponent is its largest: the largest real
                    // products (e5m2 by e5m2: exponent 30, the report's bound) are not reported.
                    let top_at = (0..len).max_by_key(|&k| ae[k]).unwrap_or(0);
                    let largest = finite.iter().copied().max_by_key(|&c| (lb.e[c as usize], c & 0x7F)).unwrap_or(0);
                    let mut edge = b.clone();
                    edge.iter_mut().for_each(|r| r[top_at] = largest);
                    for &fused in steps {
                        let (_, told) = codes(fused, &edge, 0, len / nb);
                        assert!(!told, "{} {fa} x {fb}, fused {fused}: finite codes reported", preset.name());
                    }
                }
            }
        }
    }
}
