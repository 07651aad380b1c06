//! The group-scaled step (docs/reference.md §12.2): Blackwell's `tcgen05.mma kind::mxf4nvf4` on e2m1 operands
//! (NVFP4: ue4m3 scales per 16; MXFP4: ue8m0), as MMA-Sim models it, and its chain over K.

// MMA-Sim's `gst_fdpa` (microsoft/MMA-Sim, PyPI mmasim 2.1.1, mmasim/arithmetic/fdpa.py), term for term: the
// products of a group of `group` pairs are summed exactly (e2m1 products are multiples of 2^-2 below 36); a group
// whose products are all zero, or whose scale product is zero, counts at the preset's min_exp (MMA-Sim's e_zero);
// any other group counts at the sum of its two scales' exponents e(sa) + e(sb) (operand exponents, a subnormal
// ue4m3 scale at -6 with its denormal significand), whatever the size of its sum; c counts at its fp32 exponent, at
// least -126, or at min_exp when zero. E is the largest of these; each term, the group's exact
// `sum * scale_a * scale_b` and c, is truncated toward zero to the grid 2^(E - frac), the integers are added
// exactly, and the sum is truncated to fp32 (§2.2 step 7, frac_out = 23). Every quantity is an integer below 2^60.

use crate::chain::{c_exponent, canonical_f32, Chain, CANONICAL_NAN_F32};
use crate::error::{Error, Result};
use crate::format::{e2m1, ue4m3_decoded, Class, Format};
use crate::preset::{Preset, ScaleFormat};
use crate::round::f32_parts;

/// One scale code as `(sig, exp)` with `value = sig * 2^(exp - 3)`: ue8m0 as sig 8, ue4m3 as its e4m3 integer form;
/// Err(()) for a NaN code, sig 0 for a zero.
#[allow(clippy::result_unit_err)]
pub fn scale_parts(format: ScaleFormat, code: u8) -> std::result::Result<(u64, i32), ()> {
    match format {
        ScaleFormat::Ue8m0 => crate::block_scale::e8m0_exponent(code).map(|e| (8, e)).ok_or(()),
        ScaleFormat::Ue4m3 => {
            let d = ue4m3_decoded(code);
            match d.class {
                Class::Nan | Class::Inf => Err(()),
                Class::Zero => Ok((0, 0)),
                Class::Finite => Ok((d.sig as u64, d.exp as i32)),
            }
        }
    }
}

/// A chain evaluator for a group-scaled preset (one with a `group`).
#[derive(Clone, Debug)]
pub struct GroupChain {
    nfma: usize,
    group: usize,
    block: usize,
    frac: i32,
    min_exp: i32,
    scale_format: ScaleFormat,
    /// The FP8 chain of the same preset, for its final truncation (§2.2 steps 6-8), shared with every step.
    out: Chain,
}

impl GroupChain {
    /// The evaluator of `preset`; an invalid-value error for a preset without a group (the FP8 presets).
    pub fn new(preset: &Preset) -> Result<GroupChain> {
        let (Some(group), Some(block)) = (preset.group(), preset.scale_block()) else {
            return Err(Error::invalid_value(format!(
                "preset '{}' takes FP8 operands, not e2m1: the e2m1 preset is 'b200_tcgen05_mxf4nvf4' \
                 (tcgen05.mma kind::mxf4nvf4)",
                preset.name()
            )));
        };
        Ok(GroupChain {
            nfma: preset.nfma(),
            group,
            block,
            frac: preset.frac() as i32,
            min_exp: preset.min_exp(),
            scale_format: preset.scale_format(),
            out: Chain::new(preset, Format::E4m3, Format::E4m3),
        })
    }

    /// Elements per scale.
    pub fn scale_block(&self) -> usize {
        self.block
    }

    /// Run the chain over e2m1 codes `a[k] * b[k]` (one per byte, low nibble) from `c`: one instruction per nfma
    /// elements, the last holding the rest; scale `i` covers elements [i block, (i + 1) block). The scales need
    /// ceil(K / block) codes each (checked by [`dot_group_scaled`]). NaN results are canonical.
    pub fn run(&self, a: &[u8], b: &[u8], scale_a: &[u8], scale_b: &[u8], c: f32) -> f32 {
        let per = self.nfma / self.block;
        let mut acc = c;
        for (i, (ia, ib)) in a.chunks(self.nfma).zip(b.chunks(self.nfma)).enumerate() {
            let s = i * per;
            let n = ia.len().div_ceil(self.block);
            acc = self.step(ia, ib, &scale_a[s..s + n], &scale_b[s..s + n], acc);
        }
        canonical_f32(acc)
    }

    /// One instruction over up to nfma pairs with their scales (see the comment at the top of this file).
    pub fn step(&self, a: &[u8], b: &[u8], scale_a: &[u8], scale_b: &[u8], c: f32) -> f32 {
        // (exact group sum in units of 2^-2 times the scales' significands, its exponent) per group; None: zero.
        let mut terms: Vec<(i128, i32)> = Vec::with_capacity(a.len().div_ceil(self.group));
        let mut zero_group = false;
        for (j, (ga, gb)) in a.chunks(self.group).zip(b.chunks(self.group)).enumerate() {
            let s = j * self.group / self.block;
            let (Ok((sa, ea)), Ok((sb, eb))) =
                (scale_parts(self.scale_format, scale_a[s]), scale_parts(self.scale_format, scale_b[s]))
            else {
                return f32::from_bits(CANONICAL_NAN_F32);
            };
            let mut all_zero = true;
            let mut sum: i64 = 0;
            for (&x, &y) in ga.iter().zip(gb) {
                let (dx, dy) = (e2m1::decoded(x), e2m1::decoded(y));
                if dx.class == Class::Zero || dy.class == Class::Zero {
                    continue;
                }
                all_zero = false;
                let p = (dx.sig as i64 * dy.sig as i64) << (dx.exp + dy.exp);
                sum += if dx.neg != dy.neg { -p } else { p };
            }
            if all_zero || sa == 0 || sb == 0 {
                zero_group = true;
                continue;
            }
            // value = sum * 2^-2 * (sa * 2^(ea - 3)) * (sb * 2^(eb - 3)) = (sum * sa * sb) * 2^(ea + eb - 8).
            terms.push((sum as i128 * (sa * sb) as i128, ea + eb));
        }
        if c.is_nan() {
            return f32::from_bits(CANONICAL_NAN_F32);
        }
        if c.is_infinite() {
            return c;
        }
        let (cneg, csig, cexp) = f32_parts(c);
        let mut emax = terms.iter().map(|t| t.1).max().unwrap_or(i32::MIN);
        if csig == 0 {
            zero_group = true; // c = 0 counts at e_zero too
        } else {
            emax = emax.max(c_exponent(csig, cexp));
        }
        if zero_group {
            emax = emax.max(self.min_exp);
        }
        let g = emax - self.frac;
        let mut total: i128 = 0;
        for (v, e) in terms {
            let t = crate::chain::align(v.unsigned_abs() as u64, e - 8 - g) as i128;
            total += if v < 0 { -t } else { t };
        }
        if csig != 0 {
            let t = crate::chain::align(csig as u64, cexp - g) as i128;
            total += if cneg { -t } else { t };
        }
        self.out.normalise(total, g)
    }
}

/// `c + sum a[k] * b[k]` on e2m1 codes with block scales, as a group-scaled preset's tensor core computes it
/// (docs/reference.md §12.2): `a` and `b` hold one e2m1 code per byte (low nibble); `scale_a` and `scale_b` one code
/// of the preset's scale format per block (ceil(K / 16) for NVFP4). Errors: a preset without a group, operands or
/// scales of the wrong length.
pub fn dot_group_scaled(
    preset: &Preset,
    a: &[u8],
    b: &[u8],
    scale_a: &[u8],
    scale_b: &[u8],
    c: Option<f32>,
) -> Result<f32> {
    let chain = GroupChain::new(preset)?;
    if a.len() != b.len() {
        return Err(Error::invalid_value(format!(
            "a and b must have the same shape [..., K] (no broadcasting): got K = {} and K = {}",
            a.len(),
            b.len()
        )));
    }
    let blocks = a.len().div_ceil(chain.block);
    if scale_a.len() != blocks || scale_b.len() != blocks {
        return Err(Error::invalid_value(format!(
            "scale_a and scale_b must hold one {} code per {} elements of K = {}: {blocks} each, got {} and {}",
            preset.scale_format().name(),
            chain.block,
            a.len(),
            scale_a.len(),
            scale_b.len()
        )));
    }
    crate::fpenv::check()?;
    Ok(chain.run(a, b, scale_a, scale_b, c.unwrap_or(0.0)))
}

/// The preset document of `tcgen05.mma kind::mxf4nvf4` block16 ue4m3 (NVFP4), experimental. It is kept apart from
/// the FP8 presets of [`Preset::list`]: its operands are e2m1, which no FP8 GEMM plan takes.
pub const MXF4NVF4_DOCUMENT: &str = include_str!("../../datasets/presets/b200_tcgen05_mxf4nvf4.toml");

/// The `b200_tcgen05_mxf4nvf4` preset (docs/reference.md §12.2): the NVFP4 instruction of the B200 tcgen05 profile.
pub fn b200_tcgen05_mxf4nvf4() -> Preset {
    crate::preset_document::BuiltinPreset::from_document(MXF4NVF4_DOCUMENT)
        .map(|b| b.preset)
        .unwrap_or_else(|e| unreachable!("datasets/presets/b200_tcgen05_mxf4nvf4.toml is a valid document: {e}"))
}
