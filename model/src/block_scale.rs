//! MXFP8 block scaling at the instruction level (docs/reference.md §2.8): the chain of a preset that takes e8m0
//! scales, each block of products scaled by one scale of A and one of B, as the Blackwell `block_scale` MMAs do.

// The block step follows the published model term for term: the scales' exponents are added to each product's; the
// block exponent is the largest exponent of the nonzero terms, c counted at its fp32 exponent (at least -126, as a
// subnormal c is held: `chain::c_exponent`, the unscaled step's rule too), and the zero-term exponent (the preset's min_exp) takes part only when some term is zero;
// the grid, truncation and block rounding are the unscaled step's (§2.2 steps 5-8). With scales, products can lie
// near 2^-140, where a subnormal c's clamped exponent decides the grid. The zero-term
// rule equals §2.2's floor while min_exp < -126 (c = 0 is itself a zero term); it is kept in the published form.
// A preset whose c enters late (§2.3) keeps c out of the block with scales too: the block's scaled terms are
// normalised alone and c is added in fp32, round to nearest even — the composition of §2.3 and §2.8.

use crate::chain::{c_exponent, canonical_f32, nonfinite_sum, Chain, CANONICAL_NAN_F32};
use crate::error::{Error, Result};
use crate::format::{Class, Format};
use crate::preset::{CEntry, Preset};
use crate::round::f32_parts;

/// The e8m0 NaN code: a block with it gives NaN.
pub const E8M0_NAN: u8 = 0xFF;

/// The exponent of an e8m0 scale code (2^(code - 127)); None for the NaN code.
pub fn e8m0_exponent(code: u8) -> Option<i32> {
    (code != E8M0_NAN).then_some(code as i32 - 127)
}

impl Chain {
    /// Run the chain over `a[k] * b[k]` from `c`, block `i` (products [i nfma, (i + 1) nfma), the tail shorter)
    /// scaled by `2^(scale_a[i] - 127) * 2^(scale_b[i] - 127)`. The scales need one code per block
    /// (checked by [`dot_scaled`]). NaN results are canonical.
    pub fn run_scaled(&self, a: &[u8], b: &[u8], scale_a: &[u8], scale_b: &[u8], c: f32) -> f32 {
        let mut acc = c;
        for (i, (ba, bb)) in a.chunks(self.nfma()).zip(b.chunks(self.nfma())).enumerate() {
            acc = self.block_scaled(ba, bb, scale_a[i], scale_b[i], acc);
        }
        canonical_f32(acc)
    }

    /// One scaled block step (see the comment at the top of this file).
    pub fn block_scaled(&self, a: &[u8], b: &[u8], scale_a: u8, scale_b: u8, c: f32) -> f32 {
        let (Some(xa), Some(xb)) = (e8m0_exponent(scale_a), e8m0_exponent(scale_b)) else {
            return f32::from_bits(CANONICAL_NAN_F32);
        };
        let (ta, tb) = self.tables();
        if let Some(x) = nonfinite_sum(ta, tb, a, b, c) {
            return x;
        }
        let s = xa + xb;
        let mut emax = i32::MIN;
        let mut zero_term = false;
        for (&ca, &cb) in a.iter().zip(b) {
            let (da, db) = (ta[ca as usize], tb[cb as usize]);
            if da.class == Class::Finite && db.class == Class::Finite {
                emax = emax.max(da.exp as i32 + db.exp as i32 + s);
            } else {
                zero_term = true;
            }
        }
        if self.c_entry() == CEntry::Late {
            // §2.3 with scales: c takes no part in the block; the normalised block sum is added to it in fp32.
            if zero_term {
                emax = emax.max(self.min_exp());
            }
            let g = emax - self.frac();
            let d = self.normalise(self.product_terms_at(a, b, g - s), g);
            return d + c;
        }
        let (cneg, csig, cexp) = f32_parts(c);
        if csig == 0 {
            zero_term = true;
        } else {
            emax = emax.max(c_exponent(csig, cexp));
        }
        if zero_term {
            emax = emax.max(self.min_exp());
        }
        let g = emax - self.frac();
        let mut sum = self.product_terms_at(a, b, g - s);
        if csig != 0 {
            let t = crate::chain::align(csig as u64, cexp - g) as i128;
            sum += if cneg { -t } else { t };
        }
        self.normalise(sum, g)
    }
}

/// `c + sum a[k] * b[k]` with e8m0 block scales, as the preset's tensor core computes it (docs/reference.md §2.8):
/// the preset must take block scales; `scale_a` and `scale_b` hold one code per block of the preset's scale block
/// (ceil(K / 32) for MXFP8). Errors: a preset without block scales, operands or scales of the wrong length.
#[allow(clippy::too_many_arguments)]
pub fn dot_scaled(
    preset: &Preset,
    fa: Format,
    fb: Format,
    a: &[u8],
    b: &[u8],
    scale_a: &[u8],
    scale_b: &[u8],
    c: Option<f32>,
) -> Result<f32> {
    let Some(block) = preset.scale_block() else {
        return Err(Error::invalid_value(format!(
            "preset '{}' takes no block scales (the presets with e8m0 block scales: 'b200_tcgen05', 'rtx50_mma_sync')",
            preset.name()
        )));
    };
    if a.len() != b.len() {
        return Err(Error::invalid_value(format!(
            "a and b must have the same shape [..., K] (no broadcasting): got K = {} and K = {}",
            a.len(),
            b.len()
        )));
    }
    let blocks = a.len().div_ceil(block);
    if scale_a.len() != blocks || scale_b.len() != blocks {
        return Err(Error::invalid_value(format!(
            "scale_a and scale_b must hold one e8m0 code per {block} elements of K = {}: {blocks} each, got {} and {}",
            a.len(),
            scale_a.len(),
            scale_b.len()
        )));
    }
    crate::fpenv::check()?;
    Ok(Chain::new(preset, fa, fb).run_scaled(a, b, scale_a, scale_b, c.unwrap_or(0.0)))
}
