//! The product-lane block step ([`crate::kernel::product_blocks`]) in x86 instructions, eight chains at a time:
//! each chain's products in the lanes of a vector, and the per-block work of the eight chains (block maximum,
//! scales, sums, normalisation) gathered into the eight lanes of one vector. In AVX2 over decoded rows of B (the
//! two x86 levels), and in AVX-512 over B's codes (one or two rows of A). Same arithmetic as the portable source,
//! exact in every step; tested against the model like every level.

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

/// [`product_blocks`] for the AVX-512 level with B's codes decoded in registers: `bc` holds the eight rows of B as
/// FP8 codes (`E4M3`: e4m3, else e5m2), `av`/`ae` the row of A decoded as before. A code of B becomes its value
/// through the hardware half-precision conversion: e5m2 is the upper byte of the binary16 of the same value, and
/// an e4m3 code's magnitude moved down one bit (exponent field 0eeee, same mantissa) is the binary16 of its value
/// times 2^-8, subnormals included, so A's values are multiplied by 2^8 first (exact: |a| * 2^8 < 2^17). The
/// operand exponents come from the exponent field (`max(field, 1) - bias`), with [`crate::tables::ZERO_EXP`] for
/// zeros; non-finite codes are read as zeros, as [`crate::tables::Lut::decode`] reads them, and the step returns
/// whether it met one (the largest magnitude it read, kept in a running maximum). The rest is
/// [`product_blocks`]'s arithmetic, sixteen products per vector.
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
    bc: [&[u8]; 8],
    nblk: usize,
    c: &mut [f32; 8],
    p: &Params,
) -> bool {
    let len = nblk * NB;
    // Every load below reads inside [0, len) of these slices.
    assert!(
        (NB == 16 || NB == 32) && av.len() >= len && ae.len() >= len && bc.iter().all(|x| x.len() >= len),
        "product_blocks_codes: the rows are shorter than the blocks"
    );
    // The format's constants: exponent-field mask, bias, first non-finite magnitude.
    let (field_mask, bias, nonfinite) = if E4M3 { (0x0F, 7, 0x7F) } else { (0x1F, 15, 0x7C) };
    let (mag_mask, one, last_finite) = (_mm512_set1_epi8(0x7F), _mm512_set1_epi8(1), _mm512_set1_epi8(nonfinite - 1));
    let (field_mask, bias, zero_exp) =
        (_mm512_set1_epi8(field_mask), _mm512_set1_epi8(bias), _mm512_set1_epi8(crate::tables::ZERO_EXP));
    // e4m3's operand exponent of each exponent field, max(field, 1) - 7, looked up in every 128-bit lane.
    let e4m3_exp = _mm512_broadcast_i32x4(_mm_setr_epi8(-6, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8));
    let half_mask = _mm512_set1_epi16(if E4M3 { 0xBFFFu16 as i16 } else { -1 });
    let a_scale = _mm512_set1_ps(if E4M3 { 256.0 } else { 1.0 });
    let rows = bc.map(|r| r.as_ptr());
    let mut cv = _mm256_loadu_ps(c.as_ptr());
    let mut most = _mm512_setzero_si512();
    let lane: [__m512i; 8] = std::array::from_fn(|j| _mm512_set1_epi32(j as i32));
    // Chains per vector of 64 codes.
    let per = 64 / NB;
    for o in (0..len).step_by(NB) {
        // A's exponents in every block-sized part of a vector.
        let ea = if NB == 32 {
            _mm512_broadcast_i64x4(_mm256_loadu_si256(ae.as_ptr().add(o) as *const __m256i))
        } else {
            _mm512_broadcast_i32x4(_mm_loadu_si128(ae.as_ptr().add(o) as *const __m128i))
        };
        // `per` chains at a time: the codes with non-finite ones made zeros, and the saturating i8 sums of the
        // operand exponents reduced to 16 lanes per chain.
        let mut codes = [_mm512_setzero_si512(); 4];
        let mut x = [_mm_setzero_si128(); 8];
        for (g, codes) in codes.iter_mut().take(8 / per).enumerate() {
            let j0 = g * per;
            let raw = gather_group::<NB>(rows, j0, o);
            // Zero or non-finite: magnitude - 1 (wrapping) at or above the last finite magnitude.
            let mag = _mm512_and_si512(raw, mag_mask);
            most = _mm512_max_epu8(most, mag);
            let zero = _mm512_cmpge_epu8_mask(_mm512_sub_epi8(mag, one), last_finite);
            *codes = _mm512_maskz_mov_epi8(!zero, raw);
            let field = if E4M3 { _mm512_srli_epi16::<3>(raw) } else { _mm512_srli_epi16::<2>(raw) };
            let field = _mm512_and_si512(field, field_mask);
            let eb = if E4M3 {
                _mm512_shuffle_epi8(e4m3_exp, field)
            } else {
                _mm512_sub_epi8(_mm512_max_epu8(field, one), bias)
            };
            let m = _mm512_adds_epi8(ea, _mm512_mask_mov_epi8(eb, zero, zero_exp));
            if NB == 32 {
                // Each chain's two halves folded: its maximum in 128-bit lanes 0 (chain j0) and 2 (j0 + 1).
                let m = _mm512_max_epi8(m, _mm512_shuffle_i64x2::<0b10_11_00_01>(m, m));
                x[j0] = _mm512_castsi512_si128(m);
                x[j0 + 1] = _mm512_extracti32x4_epi32::<2>(m);
            } else {
                x[j0] = _mm512_castsi512_si128(m);
                x[j0 + 1] = _mm512_extracti32x4_epi32::<1>(m);
                x[j0 + 2] = _mm512_extracti32x4_epi32::<2>(m);
                x[j0 + 3] = _mm512_extracti32x4_epi32::<3>(m);
            }
        }
        let (s, inv) = scales(x, cv, p);
        // Aligned, truncated terms of each chain, sixteen per vector (integers below 2^24: exact), the sixteen
        // lanes added into eight.
        let a0 = _mm512_mul_ps(_mm512_loadu_ps(av.as_ptr().add(o)), a_scale);
        let a1 = if NB == 32 { _mm512_mul_ps(_mm512_loadu_ps(av.as_ptr().add(o + 16)), a_scale) } else { a0 };
        let s16 = _mm512_castps256_ps512(s);
        let mut acc = [_mm256_setzero_ps(); 8];
        for (j, accj) in acc.iter_mut().enumerate() {
            let sj = _mm512_permutexvar_ps(lane[j], s16);
            let term = |a: __m512, h: __m256i| {
                let t = _mm512_mul_ps(_mm512_mul_ps(a, _mm512_cvtph_ps(h)), sj);
                _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(t)
            };
            // The codes as binary16 bits (sign-extended bytes: the sign lands in bit 15).
            let t = if NB == 32 {
                let own = match j % 2 {
                    0 => _mm512_castsi512_si256(codes[j / 2]),
                    _ => _mm512_extracti64x4_epi64::<1>(codes[j / 2]),
                };
                let wide = _mm512_cvtepi8_epi16(own);
                let halves = if E4M3 {
                    _mm512_and_si512(_mm512_slli_epi16::<7>(wide), half_mask)
                } else {
                    _mm512_slli_epi16::<8>(wide)
                };
                let t = term(a0, _mm512_castsi512_si256(halves));
                _mm512_add_ps(t, term(a1, _mm512_extracti64x4_epi64::<1>(halves)))
            } else {
                let own = match j % 4 {
                    0 => _mm512_castsi512_si128(codes[j / 4]),
                    1 => _mm512_extracti32x4_epi32::<1>(codes[j / 4]),
                    2 => _mm512_extracti32x4_epi32::<2>(codes[j / 4]),
                    _ => _mm512_extracti32x4_epi32::<3>(codes[j / 4]),
                };
                let wide = _mm256_cvtepi8_epi16(own);
                let halves = if E4M3 {
                    _mm256_and_si256(_mm256_slli_epi16::<7>(wide), _mm512_castsi512_si256(half_mask))
                } else {
                    _mm256_slli_epi16::<8>(wide)
                };
                term(a0, halves)
            };
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(t)));
            *accj = _mm256_add_ps(_mm512_castps512_ps256(t), hi);
        }
        cv = normalised(acc, cv, s, inv, p);
    }
    _mm256_storeu_ps(c.as_mut_ptr(), cv);
    _mm512_cmpgt_epu8_mask(most, last_finite) != 0
}

/// The codes of chains j0.. (64 / NB of them) at block offset `o` of `rows`, in one vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
#[inline]
unsafe fn gather_group<const NB: usize>(rows: [*const u8; 8], j0: usize, o: usize) -> __m512i {
    if NB == 32 {
        let lo = _mm256_loadu_si256(rows[j0].add(o) as *const __m256i);
        let hi = _mm256_loadu_si256(rows[j0 + 1].add(o) as *const __m256i);
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
    } else {
        let part = |t: usize| _mm_loadu_si128(rows[j0 + t].add(o) as *const __m128i);
        let v = _mm512_inserti32x4::<1>(_mm512_castsi128_si512(part(0)), part(1));
        _mm512_inserti32x4::<3>(_mm512_inserti32x4::<2>(v, part(2)), part(3))
    }
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

    /// The AVX-512 step over codes equals the portable step over the decoded rows, bit for bit, on every code of
    /// B's format, non-finite ones included (read as zeros like the decoding reads them, and reported), for blocks
    /// of 16 (ada) and 32 (hopper) and both formats of A and B.
    #[test]
    fn codes_step_equals_the_decoded_step() {
        if crate::SimdLevel::by_name("avx512").is_none() {
            eprintln!("this CPU has no AVX-512: the step is not run");
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_C0DE);
        for preset in [Preset::ada(), Preset::hopper()] {
            let p = Params::new(&preset);
            for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3), (Format::E4m3, Format::E5m2)] {
                let (la, lb) = (Lut::new(fa), Lut::new(fb));
                for round in 0..50 {
                    // Eight rows of B holding every code, shuffled, over 1024 positions (4 of every code per
                    // row); A's codes random and finite, a tenth of them zeros, the magnitudes of a round drawn
                    // from a narrower range every other round so that the block maxima vary. One round in four,
                    // B holds only zeros and subnormals: the block maximum is then a subnormal's exponent (the
                    // format's lowest) plus A's largest, and the terms of A's small codes fall below the grid.
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
                    let b: Vec<Vec<u8>> = (0..8)
                        .map(|_| {
                            if subnormal {
                                return (0..len)
                                    .map(|_| rng.random_range(0..below_normal) | (rng.random::<u8>() & 0x80))
                                    .collect();
                            }
                            let mut r: Vec<u8> = (0..len).map(|i| i as u8).collect();
                            for i in (1..len).rev() {
                                r.swap(i, rng.random_range(0..=i));
                            }
                            r
                        })
                        .collect();
                    let (mut av, mut ae) = (vec![0f32; len], vec![0i8; len]);
                    la.decode(&a, &mut av, &mut ae);
                    let decoded: Vec<(Vec<f32>, Vec<i8>)> = b
                        .iter()
                        .map(|r| {
                            let (mut v, mut e) = (vec![0f32; len], vec![0i8; len]);
                            lb.decode(r, &mut v, &mut e);
                            (v, e)
                        })
                        .collect();
                    // The chains over positions [o, o + nblk * nb) from +0, by both steps.
                    let nb = preset.nfma();
                    let run = |o: usize, nblk: usize| {
                        let bv: [&[f32]; 8] = std::array::from_fn(|j| &decoded[j].0[o..]);
                        let be: [&[i8]; 8] = std::array::from_fn(|j| &decoded[j].1[o..]);
                        let bc: [&[u8]; 8] = std::array::from_fn(|j| &b[j][o..]);
                        let (av, ae) = (&av[o..], &ae[o..]);
                        let (mut want, mut got) = ([0f32; 8], [0f32; 8]);
                        // SAFETY: the AVX-512 level exists, so the CPU has the step's features.
                        let nonfinite = unsafe {
                            if nb == 16 {
                                product_blocks::<16, 8, true>(av, ae, bv, be, nblk, &mut want, &p);
                                match fb {
                                    Format::E4m3 => product_blocks_codes::<16, true>(av, ae, bc, nblk, &mut got, &p),
                                    Format::E5m2 => product_blocks_codes::<16, false>(av, ae, bc, nblk, &mut got, &p),
                                }
                            } else {
                                product_blocks::<32, 8, true>(av, ae, bv, be, nblk, &mut want, &p);
                                match fb {
                                    Format::E4m3 => product_blocks_codes::<32, true>(av, ae, bc, nblk, &mut got, &p),
                                    Format::E5m2 => product_blocks_codes::<32, false>(av, ae, bc, nblk, &mut got, &p),
                                }
                            }
                        };
                        // The step tells whether it met a non-finite code.
                        let held = b.iter().any(|r| r[o..o + nblk * nb].iter().any(|&x| fb.is_nonfinite(x)));
                        assert_eq!(nonfinite, held, "{} {fa} x {fb} round {round}, positions from {o}", preset.name());
                        (want, got)
                    };
                    // The whole rows; for B's subnormals also every block alone, whose maximum then comes from
                    // its products (over whole rows the accumulator's exponent soon wins it).
                    let blocks = if subnormal { len / nb } else { 0 };
                    let runs = std::iter::once((0, len / nb)).chain((0..blocks).map(|blk| (blk * nb, 1)));
                    for (o, nblk) in runs {
                        let (want, got) = run(o, nblk);
                        assert_eq!(
                            got.map(f32::to_bits),
                            want.map(f32::to_bits),
                            "{} {fa} x {fb} round {round}, positions from {o}",
                            preset.name()
                        );
                    }
                    let (want, _) = run(0, len / nb);
                    assert!(want.iter().any(|&c| c != 0.0), "the chains are all zero: the test would show nothing");
                }
            }
        }
    }
}
