//! The wide path's panel step in AVX-512 instructions: rows of A against a panel of 64 rows of B held as f64
//! magnitudes and sign masks, each term's truncation and sum in one f64 multiply-add rounded toward zero onto biased
//! accumulators, as `panel_blocks` does in f32 on the narrow path.

#[cfg(target_arch = "x86_64")]
use super::*;

/// The planes of [`wide_panel_blocks`] from a panel piece's decoded values `pv` ([`PANEL`] per position): each
/// value's magnitude as f64 in `pm` (as many), and per position in `sides` two masks of the panel's lanes, those
/// whose value's sign bit is clear, then those where it is set (a zero's side does not matter: its term is 0).
///
/// # Safety
/// The CPU must support AVX-512F/DQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub unsafe fn wide_planes(pv: &[f32], pm: &mut [f64], sides: &mut [u64]) {
    let len = pv.len() / PANEL;
    assert!(pm.len() >= len * PANEL && sides.len() >= 2 * len, "wide_planes: planes shorter than the piece");
    for i in 0..len {
        let mut neg = 0u64;
        for q in 0..4 {
            let at = i * PANEL + 16 * q;
            let v = _mm512_loadu_ps(pv.as_ptr().add(at));
            neg |= (_mm512_movepi32_mask(_mm512_castps_si512(v)) as u64) << (16 * q);
            let m = _mm512_abs_ps(v);
            _mm512_storeu_pd(pm.as_mut_ptr().add(at), _mm512_cvtps_pd(_mm512_castps512_ps256(m)));
            _mm512_storeu_pd(pm.as_mut_ptr().add(at + 8), _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(m)));
        }
        sides[2 * i] = !neg;
        sides[2 * i + 1] = neg;
    }
}

/// The planes of [`wide_panel_blocks`] for one piece of a panel, decoded from B's codes in place as [`panel_piece`]
/// decodes the narrow step's (`b`, `k`, `k0` and `len` as there): the exponents into `pe`, and per position the
/// magnitudes into `pm` and the sign masks into `sides` that `Lut::decode` and [`wide_planes`] make of the same codes,
/// bit for bit (a zero's side aside: here it is its code's sign bit). A magnitude's f64 is two bytes of
/// [`crate::tables::Lut::w16`], looked up by the code's low 7 bits, over six zero bytes: one byte permute per eight
/// lanes places them. Returns whether a code was non-finite (decoded as a zero).
///
/// # Safety
/// As for [`panel_piece`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi,avx2")]
#[inline]
pub unsafe fn wide_panel_piece(
    b: &[u8],
    (k, k0, len): (usize, usize, usize),
    lb: &crate::tables::Lut,
    (pm, sides, pe): (&mut [f64], &mut [u64], &mut [i8]),
) -> bool {
    // With `panel_positions`'s check, every store below stays inside these bounds.
    assert!(pm.len() >= len * PANEL && sides.len() >= 2 * len, "wide_panel_piece: planes shorter than the piece");
    let (lo, hi) = (halves(&lb.w16[0]), halves(&lb.w16[1]));
    // Vector g's qword i takes byte 8 g + i of the low bytes at its byte 6 and of the high bytes at its byte 7 (index
    // bit 6: the second source); its other bytes are cleared.
    let place: [__m512i; 8] = std::array::from_fn(|g| {
        let idx: [u8; 64] = std::array::from_fn(|j| ((j % 8 == 7) as u8) << 6 | (8 * g + j / 8) as u8);
        _mm512_loadu_si512(idx.as_ptr() as *const __m512i)
    });
    let top: __mmask64 = 0xC0C0_C0C0_C0C0_C0C0;
    let (pm, sides) = (pm.as_mut_ptr(), sides.as_mut_ptr());
    panel_positions(b, (k, k0, len), lb, pe, |at, code| {
        let (vl, vh) = (_mm512_permutex2var_epi8(lo.0, code, lo.1), _mm512_permutex2var_epi8(hi.0, code, hi.1));
        for (g, &place) in place.iter().enumerate() {
            let m = _mm512_maskz_permutex2var_epi8(top, vl, place, vh);
            _mm512_storeu_pd(pm.add(at * PANEL + 8 * g), _mm512_castsi512_pd(m));
        }
        let negative = _mm512_movepi8_mask(code);
        *sides.add(2 * at) = !negative;
        *sides.add(2 * at + 1) = negative;
    })
}

/// The chains of one row of A (`a`, its codes; `la` their table) against a panel of [`PANEL`] rows of B over one
/// piece of `nblk` blocks, on the wide path where [`Params::biased64`] holds: `pm` and `sides` are the panel's planes
/// ([`wide_planes`]), `pe` its exponents (64 per position), `c` the 64 running accumulators. The arithmetic of
/// `crate::kernel::block_steps`, in f64 lanes, eight chains to a vector.
///
/// With the block exponent E and the grid g = E - frac, each chain keeps two accumulators that start at the bias
/// 2^(g + 52): one takes the magnitudes |a| |b| of all the terms, the other those of the positive terms (a term is
/// positive where B's sign bit equals a's: the side of `sides` a's sign picks masks the multiply-add). |a| |b| is exact
/// in the fused multiply-add; while an accumulator stays in [2^(g + 52), 2^(g + 53)) its spacing is 2^g, so rounding
/// acc + |a| |b| toward zero adds exactly |a| |b| truncated to the grid, the model's trunc(p / 2^g) 2^g. `biased64`
/// bounds the sums below 2^52 units of the grid (so they never leave that binade) and keeps the bias a normal f64.
/// Early c enters the same way (its magnitude rounded toward zero onto both biases, or onto the first only when it is
/// negative). With pos = bias + P and tot = bias + P + N, 2 pos - tot = bias + P - N is a multiple of 2^g in
/// (0, 2^(g + 53)), made exactly by one multiply-add, and less the bias it is the block sum P - N, exact too (+0 when
/// zero) and on its true scale. Its normalisation is the conversion to f32: exact after clearing the bits below
/// frac_out (truncation), or rounding to nearest even (`NE`). Late c (`LATE`) then adds it to c in fp32.
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/DQ and AVX2 (the caller holds the AVX-512 level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn wide_panel_blocks<const LATE: bool, const NE: bool>(
    a: &[u8],
    nblk: usize,
    la: &crate::tables::Lut,
    pm: &[f64],
    sides: &[u64],
    pe: &[i8],
    c: &mut [f32],
    p: &Params,
) {
    let (nfma, len) = (p.nfma, nblk * p.nfma);
    // Every load and store below is inside these bounds.
    assert!(
        p.biased64
            && c.len() == PANEL
            && a.len() >= len
            && pm.len() >= len * PANEL
            && sides.len() >= 2 * len
            && pe.len() >= len * PANEL,
        "wide_panel_blocks: a preset without room for the bias, or planes shorter than the piece"
    );
    let zero = _mm512_setzero_pd();
    let (floor, field) = (_mm512_set1_epi64(p.efloor as i64), _mm512_set1_epi64((1023 + 52 - p.frac) as i64));
    for blk in 0..nblk {
        let o = blk * nfma;
        // The products' maxima, in bytes (saturating: a zero's exponent stays below every real one).
        let m = block_max(a.as_ptr().add(o), la, pe.as_ptr().add(o * PANEL), nfma);
        let mut maxima = [0i8; PANEL];
        _mm512_storeu_si512(maxima.as_mut_ptr() as *mut _, m);
        // E = max(products, floor, c's exponent (early; +0's field reads -127, below the floor)) per chain, and the
        // bias 2^(E - frac + 52) made in its exponent field; both accumulators start there, c added (early).
        let (mut tot, mut pos, mut bias) = ([zero; 8], [zero; 8], [zero; 8]);
        for g in 0..8 {
            let mut e = _mm512_cvtepi8_epi64(_mm_loadl_epi64(maxima.as_ptr().add(8 * g) as *const _));
            e = _mm512_max_epi64(e, floor);
            let cv = _mm256_loadu_ps(c.as_ptr().add(8 * g));
            if !LATE {
                e = _mm512_max_epi64(e, _mm512_cvtepi32_epi64(exp_f32_lanes(cv)));
            }
            bias[g] = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_add_epi64(e, field)));
            if LATE {
                (tot[g], pos[g]) = (bias[g], bias[g]);
            } else {
                let cd = _mm512_cvtps_pd(cv);
                tot[g] = _mm512_add_round_pd::<TOWARD_ZERO>(bias[g], _mm512_abs_pd(cd));
                pos[g] = _mm512_add_round_pd::<TOWARD_ZERO>(bias[g], _mm512_max_pd(cd, zero));
            }
        }
        wide_terms(
            a.as_ptr().add(o),
            nfma,
            la,
            (pm.as_ptr().add(o * PANEL), sides.as_ptr().add(2 * o)),
            &mut tot,
            &mut pos,
        );
        // The block sum 2 pos - tot - bias, normalised by its conversion to f32.
        let (two, keep) = (_mm512_set1_pd(2.0), _mm512_set1_epi64(p.mask64 as i64));
        for g in 0..8 {
            let sum = _mm512_sub_pd(_mm512_fmsub_pd(two, pos[g], tot[g]), bias[g]);
            let d = if NE {
                _mm512_cvt_roundpd_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(sum)
            } else {
                _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(sum), keep)))
            };
            let at = c.as_mut_ptr().add(8 * g);
            _mm256_storeu_ps(at, if LATE { _mm256_add_ps(_mm256_loadu_ps(at), d) } else { d });
        }
    }
}

/// The terms of one block of `nfma` positions onto the accumulators of [`wide_panel_blocks`]: for the row's codes
/// `a` and the panel's planes `pm` and `sides` from the block's first position, |a| |b| rounded toward zero onto `tot`
/// for every lane and onto `pos` for the lanes whose B has a's sign bit.
///
/// # Safety
/// The CPU must support AVX-512F; `a` must hold `nfma` codes, `pm` `nfma * PANEL` values and `sides` `2 * nfma` masks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn wide_terms(
    a: *const u8,
    nfma: usize,
    la: &crate::tables::Lut,
    (pm, sides): (*const f64, *const u64),
    tot: &mut [__m512d; 8],
    pos: &mut [__m512d; 8],
) {
    for k in 0..nfma {
        let code = *a.add(k);
        let va = _mm512_set1_pd(la.m64[code as usize]);
        let b = pm.add(k * PANEL);
        // The lanes whose B has a's sign bit, a byte per vector of eight.
        let side = sides.add(2 * k + (code >> 7) as usize) as *const u8;
        for g in 0..8 {
            let bv = _mm512_loadu_pd(b.add(8 * g));
            tot[g] = _mm512_fmadd_round_pd::<TOWARD_ZERO>(va, bv, tot[g]);
            pos[g] = masked_fmadd_toward_zero_pd(va, bv, pos[g], *side.add(g));
        }
    }
}

/// One block of the e8m0 block-scaled chains of one row against a panel of [`PANEL`] rows of B, where
/// [`Params::biased64`] holds, as [`wide_panel_blocks`] sums a block: `a` holds the row's `nfma` codes of the block,
/// `pm` and `sides` the panel's planes over it ([`wide_planes`]), and per chain `e` its block exponent E, `s` its scale
/// exponent and `marked` whether the block marks it; `c` the 64 accumulators, early c or late (`LATE`).
///
/// The model's term trunc(a · b · 2^(frac - E + s)) is a · b truncated to the grid 2^g with g = E - s - frac, so the
/// accumulators start at the bias 2^(g + 52) and take the unscaled magnitudes |a| |b| exactly as there, and c enters
/// as c · 2^-s (exact: a power of two within f64's normal range). The block sum P - N, on the unscaled scale, times
/// 2^s (exact) is the model's block sum on its true scale; its rounding to frac_out bits is the conversion to f32 (after
/// clearing the bits below frac_out, or by rounding to nearest even, `NE`), and the result is NaN, marking the output
/// for the model, where it is not zero or a normal fp32 (with `NE`: where the sum lies below 2^-126 or its rounding
/// overflows, conservatively) or where `marked` or a NaN c marks it. A late c takes no part in the sums: the result is
/// added to it in fp32 (nearest even; an overflow is the model's infinity, `crate::scaled`'s step).
///
/// # Safety
/// The CPU must support AVX-512F/BW/VL/DQ and AVX2; `a` must hold `nfma` codes, `pm` `nfma * PANEL` values and
/// `sides` `2 * nfma` masks; every `e - s` and `s` must keep the factors normal (`crate::scaled`'s step bounds them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn scaled_wide_block<const LATE: bool, const NE: bool>(
    a: &[u8],
    la: &crate::tables::Lut,
    (pm, sides): (&[f64], &[u64]),
    (e, s, marked): (&[i32; PANEL], &[i32; PANEL], &[bool; PANEL]),
    c: &mut [f32; PANEL],
    p: &Params,
) {
    let nfma = p.nfma;
    // Every load below is inside these bounds.
    assert!(
        p.biased64 && a.len() >= nfma && pm.len() >= nfma * PANEL && sides.len() >= 2 * nfma,
        "scaled_wide_block: a preset without room for the bias, or planes shorter than the block"
    );
    // The marked chains, a bit each (a bool is the byte 0 or 1).
    let marked = _mm512_test_epi8_mask(_mm512_loadu_si512(marked.as_ptr() as *const _), _mm512_set1_epi8(1));
    let zero = _mm512_setzero_pd();
    let (field, one) = (_mm512_set1_epi64((1023 + 52 - p.frac) as i64), _mm512_set1_epi64(1023));
    let (mut tot, mut pos, mut bias, mut up) = ([zero; 8], [zero; 8], [zero; 8], [zero; 8]);
    for g in 0..8 {
        let eg = _mm512_cvtepi32_epi64(_mm256_loadu_si256(e.as_ptr().add(8 * g) as *const _));
        let sg = _mm512_cvtepi32_epi64(_mm256_loadu_si256(s.as_ptr().add(8 * g) as *const _));
        // The bias 2^(E - s - frac + 52), and the scales 2^s and 2^-s, made in their exponent fields.
        bias[g] = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_add_epi64(_mm512_sub_epi64(eg, sg), field)));
        up[g] = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_add_epi64(sg, one)));
        if LATE {
            (tot[g], pos[g]) = (bias[g], bias[g]);
            continue;
        }
        let down = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_sub_epi64(one, sg)));
        let cd = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(c.as_ptr().add(8 * g))), down);
        tot[g] = _mm512_add_round_pd::<TOWARD_ZERO>(bias[g], _mm512_abs_pd(cd));
        pos[g] = _mm512_add_round_pd::<TOWARD_ZERO>(bias[g], _mm512_max_pd(cd, zero));
    }
    wide_terms(a.as_ptr(), nfma, la, (pm.as_ptr(), sides.as_ptr()), &mut tot, &mut pos);
    let (two, keep) = (_mm512_set1_pd(2.0), _mm512_set1_epi64(p.mask64 as i64));
    let (least, most) = (_mm512_set1_pd(f64::from(f32::MIN_POSITIVE)), _mm512_set1_pd(f64::from(f32::MAX)));
    for g in 0..8 {
        // The block sum 2 pos - tot - bias on its true scale.
        let x = _mm512_mul_pd(_mm512_sub_pd(_mm512_fmsub_pd(two, pos[g], tot[g]), bias[g]), up[g]);
        let (d, ok) = if NE {
            let d = _mm512_cvt_roundpd_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
            let m = _mm512_abs_pd(x);
            let normal = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(m, least)
                & _mm256_cmp_ps_mask::<_CMP_LE_OQ>(_mm256_andnot_ps(_mm256_set1_ps(-0.0), d), _mm256_set1_ps(f32::MAX));
            (d, normal | _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(x, zero))
        } else {
            let x = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(x), keep));
            let m = _mm512_abs_pd(x);
            let normal = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(m, least) & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(m, most);
            (_mm512_cvtpd_ps(x), normal | _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(x, zero))
        };
        let ok = ok & !((marked >> (8 * g)) as u8);
        let at = c.as_mut_ptr().add(8 * g);
        // A late c takes c + d in fp32 (a NaN c stays NaN; an infinite one stays infinite, as the model's does).
        let r = if LATE { _mm256_add_ps(_mm256_loadu_ps(at), d) } else { d };
        _mm256_storeu_ps(at, _mm256_mask_mov_ps(_mm256_set1_ps(f32::NAN), ok, r));
    }
}
