//! The wide path's panel step in AVX2 instructions: rows of A against a panel of 32 rows of B held as f64
//! magnitudes split by B's sign, decoded from the panel's codes by byte arithmetic; each term truncated by a
//! multiply-add rounded toward zero (MXCSR, set for the step) onto biased accumulators, as `wide_panel_blocks` does.

#[cfg(target_arch = "x86_64")]
use super::*;
#[cfg(target_arch = "x86_64")]
use crate::fpstate::FpState;
#[cfg(target_arch = "x86_64")]
use crate::tables::{Lut, ZERO_EXP};

/// Outputs of a panel of the AVX2 level (the panel `crate::x86::wide_planes_avx2` reads), and of one half of it,
/// the lanes of [`wide_panel_blocks_avx2`]: its eight accumulators fill half the registers, and a half's planes of
/// 128 positions (blocks of 128 are whole in a piece) stay in the first-level cache.
pub const WIDE_PANEL_AVX2: usize = 32;
const HALF: usize = WIDE_PANEL_AVX2 / 2;

/// The power of two the step's sums are carried below their true scale: A's magnitudes are scaled up by
/// 2^(896 + packed_scale - UNSCALE) to meet B's packed ones (|b| 2^-(896 + packed_scale)), which keeps them below
/// 2^1024 (|a| < 2^16, packed_scale <= 117) and keeps the bias 2^(g + 52 - UNSCALE) a normal f64 for every grid g >=
/// efloor - frac >= -1022 (`Params::biased64`).
#[cfg(target_arch = "x86_64")]
const UNSCALE: i32 = 32;

/// The planes of [`wide_panel_blocks_avx2`] for half `half` (lanes 16 half .. 16 half + 16) of a panel piece's codes
/// `pc` ([`WIDE_PANEL_AVX2`] per position, position-major) of B's format (`lb`): per position, in `pm`, the f64
/// magnitudes of the half's codes whose sign bit is clear (zero in the other lanes), then those of the codes whose
/// sign bit is set (zero in the others), each |b| 2^-(896 + packed_scale): [`crate::tables::Lut::packed`]'s byte
/// (`Packing`) moved to bit packed_shift + 29 of an f64, a normal f64 or zero; in `pe` the codes' exponents, as
/// [`crate::tables::Lut::e`] gives them (16 per position). Returns whether a code was non-finite (its magnitude has no
/// meaning: the caller's results are then not used).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn wide_planes_avx2(pc: &[u8], half: usize, lb: &Lut, pm: &mut [f64], pe: &mut [i8]) -> bool {
    let len = pc.len() / WIDE_PANEL_AVX2;
    assert!(
        half < 2 && pm.len() >= 2 * len * HALF && pe.len() >= len * HALF,
        "wide_planes_avx2: planes shorter than the piece"
    );
    let f = lb.format();
    let packing = Packing::new(f == mmaemu_model::format::Format::E4m3);
    let (mb, bias) = (f.mbits() as i32, f.bias() as i8);
    let (mag_mask, field_mask) = (_mm256_set1_epi8(0x7F), _mm256_set1_epi8((0x7F >> mb) as i8));
    let (last, one, biased, zero_exp) = (
        _mm256_set1_epi8(lb.last_finite() as i8),
        _mm256_set1_epi8(1),
        _mm256_set1_epi8(bias),
        _mm256_set1_epi8(ZERO_EXP),
    );
    let (mb, shift) = (_mm_cvtsi32_si128(mb), _mm_cvtsi32_si128(lb.packed_shift() as i32 + 29));
    let zero = _mm256_setzero_si256();
    let mut most = zero;
    let (mut y, mut x) = ([0u8; 2 * HALF], [0u8; 2 * HALF]);
    // Two positions at a time (the half's codes of positions i and i + 1 in one vector), the last one alone.
    for i in (0..len).step_by(2) {
        let codes = |i: usize| pc.as_ptr().add(i * WIDE_PANEL_AVX2 + HALF * half) as *const __m128i;
        let two = i + 1 < len;
        let c = if two {
            _mm256_loadu2_m128i(codes(i + 1), codes(i))
        } else {
            _mm256_zextsi128_si256(_mm_loadu_si128(codes(i)))
        };
        let mag = _mm256_and_si256(c, mag_mask);
        most = _mm256_max_epu8(most, mag);
        // max(field, 1) - bias; zeros and the non-finite magnitudes get the zero exponent.
        let field = _mm256_and_si256(_mm256_srl_epi16(mag, mb), field_mask);
        let e = _mm256_sub_epi8(_mm256_max_epu8(field, one), biased);
        let none = _mm256_or_si256(_mm256_cmpeq_epi8(mag, zero), _mm256_cmpgt_epi8(mag, last));
        let e = _mm256_blendv_epi8(e, zero_exp, none);
        if two {
            _mm256_storeu_si256(pe.as_mut_ptr().add(i * HALF) as *mut __m256i, e);
        } else {
            _mm_storeu_si128(pe.as_mut_ptr().add(i * HALF) as *mut __m128i, _mm256_castsi256_si128(e));
        }
        _mm256_storeu_si256(y.as_mut_ptr() as *mut __m256i, packing.bytes(mag));
        _mm256_storeu_si256(x.as_mut_ptr() as *mut __m256i, c);
        for g in 0..if two { 8 } else { 4 } {
            // Four lanes: the packed bytes zero-extended, the codes sign-extended (every bit from 7 up, those of
            // the magnitude's f64 included, is the sign).
            let load =
                |t: &[u8; 2 * HALF]| _mm_cvtsi32_si128(std::ptr::read_unaligned(t.as_ptr().add(4 * g) as *const i32));
            let b = _mm256_sll_epi64(_mm256_cvtepu8_epi64(load(&y)), shift);
            let sq = _mm256_cvtepi8_epi64(load(&x));
            let at = pm.as_mut_ptr().add(2 * HALF * (i + g / 4) + 4 * (g % 4));
            _mm256_storeu_pd(at, _mm256_castsi256_pd(_mm256_andnot_si256(sq, b)));
            _mm256_storeu_pd(at.add(HALF), _mm256_castsi256_pd(_mm256_and_si256(sq, b)));
        }
    }
    _mm256_movemask_epi8(_mm256_cmpgt_epi8(most, last)) != 0
}

/// The chains of one row of A (`a`, its codes; `la` their table) against a half panel of 16 rows of B (`lb`, their
/// table) over one piece of `nblk` blocks, on the wide path where [`Params::biased64`] holds: `pm` and `pe` are the
/// half's planes ([`wide_planes_avx2`]), `c` its 16 running accumulators, `ends` scratch for late c (`LATE`: 16 per
/// block). The arithmetic of `crate::kernel::block_steps`, in f64 lanes, four chains to a vector.
///
/// With the block exponent E and the grid g = E - frac, each chain keeps two accumulators that start at the bias
/// 2^(g + 52) (all of it carried 2^-UNSCALE below the true scale, a power of two that changes no rounding): one takes
/// the positive terms, the other the magnitudes of the negative ones. A term is positive where B's sign bit is a's:
/// the side of the planes a's sign picks goes to the first, the other side to the second. |a| |b| is exact in the
/// fused multiply-add; while an accumulator stays in [2^(g + 52), 2^(g + 53)) its spacing is 2^g, so rounding
/// acc + |a| |b| toward zero (MXCSR's rounding control, which [`FpState::toward_zero`] sets for the step) adds
/// exactly |a| |b| truncated to the grid, the model's trunc(p / 2^g) 2^g. `biased64` bounds the sums below 2^52
/// units of the grid. Early c enters the same way, onto the side of its sign. The difference of the two is the block
/// sum, exact (+0 when zero: rounding toward zero makes x - x +0). Its normalisation is made on its bits
/// (`crate::kernel`'s keep_frac_out: cleared below frac_out, or rounded to nearest even there), which leaves a normal
/// f32 of at most 24 significant bits or a value c already had, so that its conversion is exact: every operation of
/// the step but the multiply-adds is exact whatever the rounding. Late c then adds each block's result to c in fp32
/// after the step, in the caller's rounding.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn wide_panel_blocks_avx2<const LATE: bool>(
    a: &[u8],
    nblk: usize,
    (la, lb): (&Lut, &Lut),
    (pm, pe): (&[f64], &[i8]),
    c: &mut [f32],
    ends: &mut [f32],
    p: &Params,
) {
    const W: usize = HALF;
    let (nfma, len) = (p.nfma, nblk * p.nfma);
    // Every load and store below is inside these bounds.
    assert!(
        p.biased64
            && c.len() == W
            && a.len() >= len
            && pm.len() >= 2 * len * W
            && pe.len() >= len * W
            && (!LATE || ends.len() >= nblk * W),
        "wide_panel_blocks_avx2: a preset without room for the bias, or planes shorter than the piece"
    );
    let pow2 = <f64 as crate::kernel::Lane>::pow2;
    let (sa, up, down) = (pow2(896 + lb.packed_scale() - UNSCALE), _mm256_set1_pd(pow2(UNSCALE)), pow2(-UNSCALE));
    let zero = _mm256_setzero_pd();
    let (floor, field) = (_mm256_set1_epi32(p.efloor), _mm256_set1_epi32(1023 + 52 - UNSCALE - p.frac));
    let (half, tie, keep) =
        (_mm256_set1_epi64x(p.half64 as i64), _mm256_set1_epi64x(p.tie64 as i64), _mm256_set1_epi64x(p.mask64 as i64));
    let shift = _mm_cvtsi32_si128(p.shift64 as i32);
    {
        // Every multiply-add and addition below rounds toward zero; every load comes after this and every store
        // before its end (MXCSR is set and put back by instructions the compiler orders with memory accesses).
        let _toward_zero = FpState::toward_zero();
        for blk in 0..nblk {
            let o = blk * nfma;
            // The products' maxima, in bytes (saturating: a zero's exponent stays below every real one).
            let mut m = _mm_set1_epi8(i8::MIN);
            for k in 0..nfma {
                let ea = _mm_set1_epi32(la.e4[*a.get_unchecked(o + k) as usize]);
                m = _mm_max_epi8(m, _mm_adds_epi8(ea, _mm_loadu_si128(pe.as_ptr().add((o + k) * W) as *const _)));
            }
            // E = max(products, floor, c's exponent (early; +0's field reads -127)) per chain, and the bias
            // 2^(E - frac + 52 - UNSCALE) made in its exponent field; both accumulators start there, c added
            // (early).
            let (mut plus, mut minus) = ([zero; W / 4], [zero; W / 4]);
            for h in 0..W / 8 {
                let mut e = _mm256_cvtepi8_epi32(if h == 0 { m } else { _mm_unpackhi_epi64(m, m) });
                e = _mm256_max_epi32(e, floor);
                if !LATE {
                    e = _mm256_max_epi32(e, exp_f32_lanes(_mm256_loadu_ps(c.as_ptr().add(8 * h))));
                }
                let f = _mm256_add_epi32(e, field);
                let bias = [_mm256_castsi256_si128(f), _mm256_extracti128_si256::<1>(f)]
                    .map(|f| _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_cvtepi32_epi64(f))));
                for (v, bias) in bias.into_iter().enumerate() {
                    let g = 2 * h + v;
                    if LATE {
                        (plus[g], minus[g]) = (bias, bias);
                    } else {
                        let cd =
                            _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(c.as_ptr().add(4 * g))), _mm256_set1_pd(down));
                        plus[g] = _mm256_add_pd(bias, _mm256_max_pd(cd, zero));
                        minus[g] = _mm256_add_pd(bias, _mm256_max_pd(_mm256_sub_pd(zero, cd), zero));
                    }
                }
            }
            for k in 0..nfma {
                let code = *a.get_unchecked(o + k);
                let va = _mm256_set1_pd(la.m64[code as usize] * sa);
                let row = pm.as_ptr().add((o + k) * 2 * W);
                let s = (code >> 7) as usize * W;
                let (same, other) = (row.add(s), row.add(W - s));
                for v in 0..W / 4 {
                    plus[v] = _mm256_fmadd_pd(va, _mm256_loadu_pd(same.add(4 * v)), plus[v]);
                    minus[v] = _mm256_fmadd_pd(va, _mm256_loadu_pd(other.add(4 * v)), minus[v]);
                }
            }
            // The block sums on their true scale, normalised on their bits, then converted (exact).
            let normalise = |v: usize| {
                let x = _mm256_castpd_si256(_mm256_mul_pd(_mm256_sub_pd(plus[v], minus[v]), up));
                let x = _mm256_add_epi64(_mm256_add_epi64(x, half), _mm256_and_si256(_mm256_srl_epi64(x, shift), tie));
                _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_and_si256(x, keep)))
            };
            let out = if LATE { ends.as_mut_ptr().add(blk * W) } else { c.as_mut_ptr() };
            for h in 0..W / 8 {
                _mm256_storeu_ps(out.add(8 * h), _mm256_set_m128(normalise(2 * h + 1), normalise(2 * h)));
            }
        }
    }
    if LATE {
        // d, then one fp32 addition each, in the caller's rounding.
        for blk in 0..nblk {
            for h in 0..W / 8 {
                let at = c.as_mut_ptr().add(8 * h);
                _mm256_storeu_ps(
                    at,
                    _mm256_add_ps(_mm256_loadu_ps(at), _mm256_loadu_ps(ends.as_ptr().add(blk * W + 8 * h))),
                );
            }
        }
    }
}

/// The codes of a whole panel piece moved into position-major order, as `crate::driver::panel_codes` moves them:
/// rows 0 .. W of B (`b` from the panel's first row, rows `k` apart; `W` a multiple of 32), positions `k0 .. k0 +
/// len` of each (`len` a multiple of 16), into `pc` (W per position).
///
/// Sixteen positions of 32 rows at a time: vector i holds rows i and 16 + i in its two 128-bit lanes, and a transpose
/// of 16 by 16 bytes in both lanes ([`transposed_16_avx2`]) leaves position p of the 32 rows in vector p.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn panel_positions_avx2<const W: usize>(b: &[u8], (k, k0, len): (usize, usize, usize), pc: &mut [u8]) {
    // Every load and store below stays inside these bounds.
    assert!(
        W.is_multiple_of(32) && len.is_multiple_of(16) && b.len() >= (W - 1) * k + k0 + len && pc.len() >= len * W,
        "panel_positions_avx2: rows of B or the piece's codes shorter than the piece"
    );
    for g in (0..W).step_by(32) {
        for h in (0..len).step_by(16) {
            let row = |r: usize| b.as_ptr().add((g + r) * k + k0 + h) as *const __m128i;
            let mut z = [_mm256_setzero_si256(); 16];
            for (i, z) in z.iter_mut().enumerate() {
                *z = _mm256_loadu2_m128i(row(16 + i), row(i));
            }
            for (p, x) in transposed_16_avx2(z).into_iter().enumerate() {
                _mm256_storeu_si256(pc.as_mut_ptr().add((h + p) * W + g) as *mut __m256i, x);
            }
        }
    }
}

/// Two 16 x 16 transposes of bytes, one in each 128-bit lane: byte j of lane l of `z[i]` becomes byte i of lane l
/// of vector j. Four rounds of interleaving, of bytes, words, dwords and qwords, as `transposed_16` does on the
/// AVX-512 level.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transposed_16_avx2(z: [__m256i; 16]) -> [__m256i; 16] {
    // Each round interleaves vectors 2i and 2i + 1 into i (the low halves of their lanes) and 8 + i (the high
    // halves). With the row r and the byte j written in bits, an element at vector (r3 r2 r1 r0), byte (j3 j2 j1 j0)
    // goes to vector (j3 r3 r2 r1), byte (j2 j1 j0 r0); after four rounds it is at vector (j0 j1 j2 j3), byte r.
    let mut x = z;
    for round in 0..4 {
        let mut y = [_mm256_setzero_si256(); 16];
        for i in 0..8 {
            let (a, b) = (x[2 * i], x[2 * i + 1]);
            (y[i], y[8 + i]) = match round {
                0 => (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b)),
                1 => (_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b)),
                2 => (_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b)),
                _ => (_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b)),
            };
        }
        x = y;
    }
    // Vector j of the result is vector (j0 j1 j2 j3), j's bits reversed.
    // A loop rather than `REVERSED.map`: the array's `map` is a generic function compiled without this function's
    // features, which copied each vector through two 128-bit moves and a call (a fifth of one NVFP4 row).
    const REVERSED: [usize; 16] = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15];
    let mut t = x;
    for (t, &j) in t.iter_mut().zip(&REVERSED) {
        *t = x[j];
    }
    t
}
