//! The AVX-512 decode step over B's codes in fused form: each term scaled, truncated and summed by one multiply-add
//! rounded toward zero onto a biased accumulator, B's codes looked up in registers (AVX-512 VBMI).

use super::*;

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
