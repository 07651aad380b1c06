//! The panel step of wide-path presets whose terms stay below 2^31 ([`crate::kernel::Params::int32`]): the terms
//! truncated and summed in i32 lanes, sixteen to a vector where f64 lanes hold eight, a group of products at a time
//! where the block's sum needs more bits; and the step of presets whose block result is their one product
//! ([`crate::kernel::Params::single`]).

// The arithmetic (docs/reference.md §2.2–§2.3; the notation of `crate::kernel`).
//
// A product p = a * b of two FP8 values is exact in f32, and so is p * s for s = 2^(frac - E): the scaling only
// moves the exponent (a result below 2^-126 is below 1, truncated to 0 however it rounds). |p| < 2^(ep + 2) with ep
// <= E, so |p * s| < 2^(frac + 2) <= 2^31 (frac <= 29): the conversion to i32 truncates it toward zero, exactly
// the model's aligned term. Early c: |c| < 2^(exp(c) + 1) with exp(c) <= E, so its term is below 2^(frac + 1). The
// block exponent is clamped below at frac - 126 as on the narrow path, so that s and 2^(E - frac) are normal f32;
// that changes E only when every product of the block is zero, and then every term is 0 whatever E is.
//
// The sum of a group of at most `int32_group` terms, and c's term in the first, is below 2^31: exact in i32. A block
// of one group keeps its sum in i32; a longer one adds its groups' sums in f64, exactly (below 2^53 on the wide
// path). Nearest even (frac_out 23): the conversion of the integer sum to f32 (from i32 or f64) rounds it once, to
// nearest even at 24 bits. Truncation: the sum is converted to f64 exactly and its mantissa bits below frac_out
// cleared (sign-magnitude: toward zero), which leaves at most 24 significant bits, exact in f32. The scaling back by
// 2^(E - frac) is exact (a nonzero result is at least 2^(E - frac) >= 2^-126, a normal f32). A zero sum gives +0.

use crate::kernel::{block_max_above, Params};
use crate::tables::Lut;

/// The chains of R rows side by side against a W-wide panel over one piece of `nblk` blocks for a preset with
/// [`Params::int32`] (`crate::kernel::block_steps`'s arguments, f32 values): their chains are independent, so one
/// row's latency (an early c's exponent feeds its next block) hides behind another's work. `LATE`: c out of the
/// maximum, added after the block with one fp32 RNE addition; `NE`: nearest-even blocks; `GROUPS`: the block has
/// more products than [`Params::int32_group`], whose i32 sums are added in f64.
#[inline(always)]
pub fn int32_steps<const W: usize, const LATE: bool, const NE: bool, const R: usize, const GROUPS: bool>(
    a: [&[u8]; R],
    nblk: usize,
    la: &Lut,
    pv: &[f32],
    pe: &[i8],
    c: [&mut [f32; W]; R],
    p: &Params,
) {
    let nfma = p.nfma;
    let efloor = p.efloor.max(p.frac - 126);
    // The floor in the bytes of the block maximum, 64 to a vector. A floor above a byte's range becomes 127, which
    // changes no result: E is then the floor (products are below 2^36, an accumulator of K < 2^31 of them below 2^67)
    // and every term, on a grid at or above 2^(127 - 29), is 0 under either.
    let floor8 = efloor.clamp(i8::MIN as i32, i8::MAX as i32) as i8;
    // s = 2^(frac - E) from its bits, (127 + frac - E) << 23, its exponent field made in the bytes of the block
    // maximum (1..=253 there: E in [frac - 126, 127]); 2^(E - frac) is then (254 << 23) - bits(s).
    let s_bias = 127 + p.frac;
    let c_bias = ((254 + p.frac) as u32) << 23;
    // The accumulators in a local, which the compiler keeps in registers across the blocks.
    let mut accs: [[f32; W]; R] = std::array::from_fn(|r| *c[r]);
    for blk in 0..nblk {
        let bv = &pv[blk * nfma * W..(blk + 1) * nfma * W];
        let pe = &pe[blk * nfma * W..(blk + 1) * nfma * W];
        for (a, acc) in a.iter().zip(accs.iter_mut()) {
            let ab = &a[blk * nfma..(blk + 1) * nfma];
            let e = block_max_above::<W>(ab, la, pe, floor8);
            // Block exponent E = max(products, c (early), floor); s = 2^(frac - E) and 2^(E - frac).
            let field: [u8; W] = std::array::from_fn(|j| (s_bias as u8).wrapping_sub(e[j] as u8));
            let mut s = [0f32; W];
            let mut inv = [0f32; W];
            for j in 0..W {
                let mut sb = (field[j] as u32) << 23;
                if !LATE {
                    // 2^(frac - exp(c)) from c's exponent field f: (254 + frac - f) << 23. The least of the two is
                    // 2^(frac - E). As integers: a zero c's, (254 + frac) << 23, lies above every valid one and below
                    // 2^32 (frac <= 29), and exp(c) <= frac + 126 keeps c's valid (see above).
                    sb = sb.min(c_bias - (acc[j].to_bits() & 0x7F80_0000));
                }
                s[j] = f32::from_bits(sb);
                inv[j] = f32::from_bits((254 << 23) - sb);
            }
            let mut t = [0i32; W];
            if !LATE {
                for j in 0..W {
                    let x = acc[j] * s[j];
                    debug_assert!(x.abs() < 2_147_483_648.0);
                    // SAFETY: finite and below 2^31 in magnitude (see the comment at the top of this file).
                    t[j] = unsafe { x.to_int_unchecked::<i32>() };
                }
            }
            // The groups' sums (`GROUPS`).
            let mut sum = [0f64; W];
            let group = if GROUPS { p.int32_group.max(1) } else { nfma };
            for (codes, rows) in ab.chunks(group).zip(bv.chunks(group * W)) {
                // SAFETY: every term is finite and below 2^31 in magnitude (see the comment at the top of this file).
                unsafe { add_i32_terms::<W>(codes, rows, la, &s, &mut t) };
                if GROUPS {
                    for j in 0..W {
                        sum[j] += f64::from(t[j]);
                        t[j] = 0;
                    }
                }
            }
            for j in 0..W {
                let d = match (GROUPS, NE) {
                    (true, true) => sum[j] as f32 * inv[j],
                    (true, false) => f64::from_bits(sum[j].to_bits() & p.mask64) as f32 * inv[j],
                    (false, true) => t[j] as f32 * inv[j],
                    (false, false) => f64::from_bits(f64::from(t[j]).to_bits() & p.mask64) as f32 * inv[j],
                };
                if LATE {
                    acc[j] += d;
                } else {
                    acc[j] = d;
                }
            }
        }
    }
    for (c, acc) in c.into_iter().zip(accs) {
        *c = acc;
    }
}

/// Adds to `t` the terms trunc(a · b · f) of a row's `codes` against a panel's values `rows` (W per position), each
/// computed in f32 and truncated toward zero by its conversion to i32 (exact where a · b · f only moves the exponent
/// of a · b, or is below 1).
///
/// # Safety
/// Every `a · b · f[j]` must be finite and below 2^31 in magnitude, and every sum in `t` stay inside i32.
#[inline(always)]
pub(crate) unsafe fn add_i32_terms<const W: usize>(
    codes: &[u8],
    rows: &[f32],
    la: &Lut,
    f: &[f32; W],
    t: &mut [i32; W],
) {
    for (&code, row) in codes.iter().zip(rows.chunks_exact(W)) {
        let va = la.v32[code as usize];
        let Ok(row) = <&[f32; W]>::try_from(row) else { break };
        for j in 0..W {
            let x = va * row[j] * f[j];
            debug_assert!(x.abs() < 2_147_483_648.0);
            // SAFETY: finite and below 2^31 in magnitude (the caller's promise).
            t[j] += unsafe { x.to_int_unchecked::<i32>() };
        }
    }
}

/// The chains of one row against a W-wide panel for a preset with [`Params::single`]: each block's result is its one
/// product (exact in f32), added to c with one fp32 round-to-nearest-even addition.
#[inline(always)]
pub fn single_product_steps<const W: usize>(a: &[u8], la: &Lut, pv: &[f32], c: &mut [f32; W]) {
    let zero = [0f32; W];
    for (&code, row) in a.iter().zip(pv.chunks_exact(W)) {
        let va = la.v32[code as usize];
        let row: &[f32; W] = row.try_into().unwrap_or(&zero);
        for j in 0..W {
            c[j] += va * row[j];
        }
    }
}
