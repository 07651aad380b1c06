//! Per-code tables of the FP8 formats in the form the kernels use: the exact value of every code as f32 and as f64, and
//! its operand exponent e(x) (docs/reference.md §2.2 step 1) as an i8.

use mmaemu_model::format::{Class, Format};

/// The exponent a zero code carries. Zeros (and the non-finite codes, which never reach a chain: the plan executor
/// replaces them by +0 first) have the value 0 and this exponent, far below every real product exponent, so that a
/// zero product never wins the block maximum (see `kernel.rs` for the bound): with saturating i8 adds, a product
/// involving a zero has an exponent of at most `ZERO_EXP + 15 = -85`, below every nonzero product (>= -28) and every
/// nonzero accumulator the chains can produce (>= -28 - frac >= -68).
pub const ZERO_EXP: i8 = -100;

/// The kernel form of one format's 256 codes.
#[derive(Clone, Debug)]
pub struct Lut {
    /// Exact value of each code as f32 (every FP8 value is an f32 value); 0 for zeros and non-finite codes.
    pub v32: [f32; 256],
    /// Exact value of each code as f64.
    pub v64: [f64; 256],
    /// Operand exponent e(x) = max(floor(log2|x|), emin) of each nonzero finite code; [`ZERO_EXP`] otherwise.
    pub e: [i8; 256],
}

impl Lut {
    /// The table of a format.
    pub fn new(f: Format) -> Lut {
        let mut t = Lut { v32: [0.0; 256], v64: [0.0; 256], e: [ZERO_EXP; 256] };
        for code in 0..=255u8 {
            let d = f.decoded(code);
            if d.class != Class::Finite {
                continue;
            }
            let v = f.to_f64(code);
            t.v64[code as usize] = v;
            t.v32[code as usize] = v as f32; // exact: at most 4 significant bits, exponent within fp32's
            t.e[code as usize] = d.exp;
        }
        t
    }
}

/// True if any code of `x` is non-finite in format `f`.
pub fn has_nonfinite(x: &[u8], f: Format) -> bool {
    x.iter().any(|&c| f.is_nonfinite(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_exact() {
        for f in Format::ALL {
            let t = Lut::new(f);
            for code in 0..=255u8 {
                let d = f.decoded(code);
                if d.class == Class::Finite {
                    assert_eq!(t.v64[code as usize], f.to_f64(code));
                    assert_eq!(t.v32[code as usize] as f64, f.to_f64(code));
                    assert!((-14..=15).contains(&t.e[code as usize]));
                } else {
                    assert_eq!(t.e[code as usize], ZERO_EXP);
                    assert_eq!(t.v32[code as usize], 0.0);
                }
            }
        }
    }
}
