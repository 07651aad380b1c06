//! The epilogue re-executed step by step (docs/reference.md §4): alpha and its rounding, the fused multiply-add with
//! the +0 addend, the conversion to the out dtype (scale_result, saturation, the second rounding) and the NaN rule.

use super::exact::Exact;
use mmaemu_model::epilogue::{f32_to_bf16, f32_to_f16, Epilogue, OutDtype};

/// The epilogue of one element.
#[derive(Clone, Debug, PartialEq)]
pub struct EpilogueTrace {
    /// The fp32 accumulator entering the epilogue.
    pub acc: f32,
    /// scale_a.
    pub scale_a: f32,
    /// scale_b.
    pub scale_b: f32,
    /// scale_a * scale_b exactly (None when a scale is not finite).
    pub alpha_exact: Option<Exact>,
    /// alpha = RN32(scale_a * scale_b).
    pub alpha: f32,
    /// alpha - alpha_exact.
    pub alpha_error: Option<Exact>,
    /// acc * alpha exactly (None when not finite).
    pub product: Option<Exact>,
    /// y = RN32(acc * alpha + (+0)).
    pub y: f32,
    /// y - acc * alpha.
    pub y_error: Option<Exact>,
    /// How y's sign or class was decided when the product is zero or not finite.
    pub y_rule: Option<String>,
    /// The out dtype.
    pub out: OutDtype,
    /// FP8 out with scale_result: (scale_result, y * scale_result exactly, RN32 of it).
    pub scaled: Option<(f32, Option<Exact>, f32)>,
    /// FP8 out: the saturation that applied, if any.
    pub saturation: Option<String>,
    /// The value rounded to the out dtype (from `bits`).
    pub value: f64,
    /// value - (the fp32 value converted): the out dtype's rounding (None when not finite).
    pub out_error: Option<Exact>,
    /// The NaN rule, when the result is NaN.
    pub nan: Option<String>,
    /// The result's bits.
    pub bits: u32,
}

/// Re-execute the epilogue on one accumulator value.
pub fn trace(epi: &Epilogue, acc: f32) -> EpilogueTrace {
    let (sa, sb) = (epi.scale_a, epi.scale_b);
    let alpha_exact = Exact::of_f32(sa).zip(Exact::of_f32(sb)).map(|(a, b)| a.mul(&b));
    let alpha = match &alpha_exact {
        Some(x) if x.is_zero() => {
            if sa.is_sign_negative() != sb.is_sign_negative() {
                -0.0
            } else {
                0.0
            }
        }
        Some(x) => x.to_f32(),
        None => sa * sb,
    };
    let alpha_error = alpha_exact.as_ref().and_then(|x| Exact::of_f32(alpha).map(|a| a.sub(x)));
    let product = Exact::of_f32(acc).zip(Exact::of_f32(alpha)).map(|(a, b)| a.mul(&b));
    let (y, y_rule) = match &product {
        Some(p) if p.is_zero() => (0.0, Some("the product is exactly zero: + (+0) makes it +0".to_string())),
        Some(p) => {
            let y = p.to_f32();
            let rule = (y == 0.0).then(|| "the product underflows: it rounds to a zero of its own sign".to_string());
            (y, rule)
        }
        None => {
            let y = ((acc as f64) * (alpha as f64) + 0.0) as f32;
            (y, Some("a factor is not finite: the IEEE class of acc * alpha".to_string()))
        }
    };
    let y_error = product.as_ref().and_then(|p| Exact::of_f32(y).map(|v| v.sub(p)));
    let mut t = EpilogueTrace {
        acc,
        scale_a: sa,
        scale_b: sb,
        alpha_exact,
        alpha,
        alpha_error,
        product,
        y,
        y_error,
        y_rule,
        out: epi.out,
        scaled: None,
        saturation: None,
        value: 0.0,
        out_error: None,
        nan: None,
        bits: 0,
    };
    let mut before = y; // the fp32 value the final conversion rounds
    t.bits = match epi.out {
        OutDtype::Float32 => {
            if y.is_nan() {
                OutDtype::Float32.canonical_nan()
            } else {
                y.to_bits()
            }
        }
        OutDtype::BFloat16 => f32_to_bf16(y) as u32,
        OutDtype::Float16 => f32_to_f16(y) as u32,
        OutDtype::E4m3 | OutDtype::E5m2 => {
            let f = epi.out.fp8().unwrap_or(mmaemu_model::format::Format::E4m3);
            if let Some(sr) = epi.scale_result {
                // A plain fp32 multiply, no +0 addend: an exact zero keeps the sign of the product.
                let exact = Exact::of_f32(y).zip(Exact::of_f32(sr)).map(|(a, b)| a.mul(&b));
                let y2 = match &exact {
                    Some(x) if x.is_zero() => {
                        if y.is_sign_negative() != sr.is_sign_negative() {
                            -0.0
                        } else {
                            0.0
                        }
                    }
                    Some(x) => x.to_f32(),
                    None => y * sr,
                };
                t.scaled = Some((sr, exact, y2));
                before = y2;
            }
            let max = f.to_f64(f.max_code());
            if !before.is_nan() && (before as f64).abs() >= max {
                t.saturation = Some(format!("|{before:e}| >= {max}: saturates to the largest finite value"));
            }
            f.from_f32_saturating(before) as u32
        }
    };
    t.value = epi.out.to_f64(t.bits);
    if t.value.is_nan() {
        t.nan = Some(format!("a NaN becomes the canonical NaN of {} (0x{:X})", epi.out, epi.out.canonical_nan()));
    }
    t.out_error = Exact::of_f64(t.value).zip(Exact::of_f32(before)).map(|(v, b)| v.sub(&b));
    t
}
