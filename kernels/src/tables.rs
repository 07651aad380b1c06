//! Per-code tables of the FP8 formats in the form the kernels use: the exact value of every code as f32 and as f64, and
//! its operand exponent e(x) (docs/reference.md §2.2 step 1) as an i8.

use mmaemu_model::format::{Class, Format};

/// The exponent a zero code carries. Zeros (and the non-finite codes, which never reach a chain: the plan executor
/// replaces them by +0 first) have the value 0 and this exponent, far below every real product exponent, so that a
/// zero product never wins the block maximum (see `kernel.rs` for the bound): with saturating i8 adds, a product
/// involving a zero has an exponent of at most `ZERO_EXP + 15 = -81`, below every nonzero product (>= -28) and every
/// nonzero accumulator the chains can produce (>= -28 - frac >= -68). It is also high enough that a zero plus
/// [`NONFINITE_EXP`] (31) lies above [`MAX_PRODUCT_EXP`].
pub const ZERO_EXP: i8 = -96;

/// The exponent [`Lut::e_marked`] gives a non-finite magnitude: above every operand exponent (at most 15), so that a
/// step which reads B's codes finds them in its block maxima: a non-finite code of B plus any operand exponent of A
/// (zeros' included) is above [`MAX_PRODUCT_EXP`].
pub const NONFINITE_EXP: i8 = i8::MAX;

/// The largest exponent of a product of finite codes: e5m2's largest operand exponent, 15, twice.
pub const MAX_PRODUCT_EXP: i8 = 30;

/// The kernel form of one format's 256 codes.
#[derive(Clone, Debug)]
pub struct Lut {
    /// Exact value of each code as f32 (every FP8 value is an f32 value); 0 for zeros and non-finite codes.
    pub v32: [f32; 256],
    /// Exact value of each code as f64.
    pub v64: [f64; 256],
    /// Operand exponent e(x) = max(floor(log2|x|), emin) of each nonzero finite code; [`ZERO_EXP`] otherwise.
    pub e: [i8; 256],
    /// [`Lut::e`] in each of the four bytes of an i32: one load broadcasts it to every byte of a vector.
    pub e4: [i32; 256],
    /// The magnitude of [`Lut::v32`] per code: the fused panel step's multiplier, looked up by the code as it is.
    pub m32: [f32; 256],
    /// [`Lut::m32`] as f64: the wide panel step's multiplier (`crate::x86::wide_panel_blocks`).
    pub m64: [f64; 256],
    /// Per magnitude (a code's low 7 bits), [`Lut::e`], except [`NONFINITE_EXP`] for the non-finite magnitudes: the
    /// AVX-512 product-lane step looks it up in registers (`crate::x86::product_blocks_fused`), as it does
    /// [`Lut::packed`].
    pub e_marked: [i8; 128],
    /// Per magnitude, the byte that, moved to bit [`Lut::packed_shift`] of an f32, makes the f32 of the magnitude's
    /// value times 2^-[`Lut::packed_scale`]: subnormals normalised, 0 for zero and the non-finite magnitudes (a
    /// normal f32 in every other case: the step's multiply-adds would slow down on subnormal inputs).
    pub packed: [u8; 128],
    /// Per magnitude, bytes 2 and 3 of [`Lut::v32`]'s bits (its bytes 0 and 1 are zero: an FP8 value has at most
    /// 4 significant bits): the AVX-512 VBMI decoding looks them up in registers (`crate::x86::decode_vbmi`).
    pub v16: [[u8; 128]; 2],
    /// Per magnitude, bytes 6 and 7 of [`Lut::m64`]'s bits (its six low bytes are zero: at most 4 significant bits):
    /// the wide panel's decoding in place looks them up in registers (`crate::x86::wide_panel_piece`).
    pub w16: [[u8; 128]; 2],
    /// The format.
    format: Format,
}

impl Lut {
    /// The table of a format.
    pub fn new(f: Format) -> Lut {
        let mut t = Lut {
            v32: [0.0; 256],
            v64: [0.0; 256],
            e: [ZERO_EXP; 256],
            e4: [0; 256],
            m32: [0.0; 256],
            m64: [0.0; 256],
            e_marked: [NONFINITE_EXP; 128],
            packed: [0; 128],
            v16: [[0; 128]; 2],
            w16: [[0; 128]; 2],
            format: f,
        };
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
        for (e4, &e) in t.e4.iter_mut().zip(&t.e) {
            *e4 = i32::from_ne_bytes([e as u8; 4]);
        }
        for (m, v) in t.m32.iter_mut().zip(&t.v32) {
            *m = v.abs();
        }
        for (m, v) in t.m64.iter_mut().zip(&t.v64) {
            *m = v.abs();
        }
        for m in 0..128 {
            let bits = t.v32[m].to_bits();
            t.v16[0][m] = (bits >> 16) as u8;
            t.v16[1][m] = (bits >> 24) as u8;
            let bits = t.m64[m].to_bits();
            t.w16[0][m] = (bits >> 48) as u8;
            t.w16[1][m] = (bits >> 56) as u8;
        }
        let down = f32::from_bits(((127 - t.packed_scale()) as u32) << 23);
        for m in 0..128u8 {
            if !f.is_nonfinite(m) {
                t.e_marked[m as usize] = t.e[m as usize];
                // Exact: a power-of-two scale that keeps every FP8 magnitude a normal f32 of at most 4 significant
                // bits, whose bits from packed_shift up fit a byte (the `packed_bytes_are_the_values` test).
                t.packed[m as usize] = ((t.v32[m as usize] * down).to_bits() >> t.packed_shift()) as u8;
            }
        }
        t
    }
}

impl Lut {
    /// The format of the table.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The largest finite magnitude (a code's low 7 bits): 0x7E for e4m3, 0x7B for e5m2; a larger one is non-finite.
    pub fn last_finite(&self) -> u8 {
        (0..128u8).rev().find(|&m| !self.format.is_nonfinite(m)).unwrap_or(0)
    }

    /// The f32 bit at which [`Lut::packed`]'s bytes sit: 20 for e4m3 (an exponent of five bits and three mantissa
    /// bits), 21 for e5m2 (six and two).
    pub fn packed_shift(&self) -> u32 {
        match self.format {
            Format::E4m3 => 20,
            Format::E5m2 => 21,
        }
    }

    /// The power of two by which [`Lut::packed`] scales the magnitudes down: the f32 exponent field is then
    /// floor(log2 |x|) + 10 (e4m3, 1 to 18) or + 17 (e5m2, 1 to 32).
    pub fn packed_scale(&self) -> i32 {
        match self.format {
            Format::E4m3 => 117,
            Format::E5m2 => 110,
        }
    }

    /// [`Lut::decode`] for a tile of the AVX-512 level (`avx512`) or another: by the AVX-512 VBMI lookups
    /// (`crate::x86::decode_vbmi`) where [`Lut::vbmi_decodes`], which also tell whether a code was non-finite (the
    /// answer; false otherwise).
    #[inline(always)]
    pub fn decode_on(&self, avx512: bool, codes: &[u8], v: &mut [f32], e: &mut [i8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if Lut::vbmi_decodes(avx512) {
            // SAFETY: the CPU has AVX-512 VBMI (and with it AVX-512F/BW), as `vbmi_decodes` saw.
            return unsafe { crate::x86::decode_vbmi(self, codes, v, e) };
        }
        self.decode(codes, v, e);
        false
    }

    /// Whether [`Lut::decode_on`] decodes by the AVX-512 VBMI lookups in a tile of the AVX-512 level (`avx512`) or
    /// another: on that level, where the CPU has VBMI (the other levels keep their own instructions, so that the
    /// tests run each as it runs elsewhere).
    pub fn vbmi_decodes(avx512: bool) -> bool {
        avx512 && crate::driver::vbmi()
    }

    /// The values (f32) and exponents of codes, as [`Lut::v32`] and [`Lut::e`] give them (a zero may come out
    /// as -0: a zero product adds nothing to a sum started at +0 either way; non-finite codes are zeros, as the
    /// plan executor makes them), computed from the bits rather than looked up, so that the loops vectorise
    /// (the product-lane tiling decodes every code of B once per tile).
    #[inline(always)]
    pub fn decode(&self, codes: &[u8], v: &mut [f32], e: &mut [i8]) {
        match self.format {
            Format::E4m3 => decode_format::<3, 7, 0x7F>(codes, v, e),
            Format::E5m2 => decode_format::<2, 15, 0x7C>(codes, v, e),
        }
    }

    /// The exponents of a panel's codes (W per position, as [`Lut::decode`]), their magnitudes (W per position)
    /// and their magnitudes by sign (2 W per position: the magnitudes of the positive codes and +0, zero in the
    /// lanes of the negative codes; then those of the negative codes and -0, zero in the others). The AVX-512
    /// panel step adds the magnitudes of all terms, and those of the positive terms from the side of B that has
    /// a's sign.
    #[inline(always)]
    pub fn decode_magnitudes<const W: usize>(&self, codes: &[u8], pm: &mut [f32], ps: &mut [f32], e: &mut [i8]) {
        match self.format {
            Format::E4m3 => magnitudes_format::<W, 3, 7, 0x7F>(codes, pm, ps, e),
            Format::E5m2 => magnitudes_format::<W, 2, 15, 0x7C>(codes, pm, ps, e),
        }
    }
}

/// The operand exponent of a code of the format of `MB` mantissa bits and bias `BIAS`, whose magnitudes from
/// `NF` up are non-finite: max(field, 1) - bias, and the zero exponent for zeros and non-finite codes.
#[inline(always)]
fn exponent<const MB: u32, const BIAS: i32, const NF: u8>(c: u8) -> i8 {
    let mag = c & 0x7F;
    let field = (mag >> MB) as i8;
    if mag == 0 || mag >= NF {
        ZERO_EXP
    } else {
        field.max(1) - BIAS as i8
    }
}

/// The magnitude of a code (0 for non-finite codes): a normal code's exponent field and mantissa moved into an
/// f32's, its exponent rebiased (an integer add); a subnormal code's mantissa times 2^(1 - bias - mb) (exact).
#[inline(always)]
fn magnitude<const MB: u32, const BIAS: i32, const NF: u8>(c: u8) -> f32 {
    let rebias = ((127 - BIAS) as u32) << 23;
    let sub_scale = f32::from_bits(((127 + 1 - BIAS - MB as i32) as u32) << 23);
    let mag = (c & 0x7F) as u32;
    let normal = f32::from_bits((mag << (23 - MB)) + rebias);
    let subnormal = (mag & ((1 << MB) - 1)) as f32 * sub_scale;
    let magnitude = if mag >> MB == 0 { subnormal } else { normal };
    if mag >= NF as u32 {
        0.0
    } else {
        magnitude
    }
}

/// [`Lut::decode_magnitudes`] for one format (see [`decode_format`]).
#[inline(always)]
fn magnitudes_format<const W: usize, const MB: u32, const BIAS: i32, const NF: u8>(
    codes: &[u8],
    pm: &mut [f32],
    ps: &mut [f32],
    e: &mut [i8],
) {
    for (&c, e) in codes.iter().zip(e.iter_mut()) {
        *e = exponent::<MB, BIAS, NF>(c);
    }
    for (&c, m) in codes.iter().zip(pm.iter_mut()) {
        *m = magnitude::<MB, BIAS, NF>(c);
    }
    for ((row, mags), sides) in codes.chunks_exact(W).zip(pm.chunks_exact(W)).zip(ps.chunks_exact_mut(2 * W)) {
        let (plus, minus) = sides.split_at_mut(W);
        for (((&c, &m), plus), minus) in row.iter().zip(mags).zip(plus).zip(minus) {
            (*plus, *minus) = if c >> 7 == 0 { (m, 0.0) } else { (0.0, m) };
        }
    }
}

/// [`Lut::decode`] for the format of `MB` mantissa bits and exponent bias `BIAS`, whose magnitudes from `NF`
/// up are non-finite (constants, so that the shifts are immediates).
#[inline(always)]
fn decode_format<const MB: u32, const BIAS: i32, const NF: u8>(codes: &[u8], v: &mut [f32], e: &mut [i8]) {
    // Exponents in byte lanes; values with the sign bit or'ed in.
    for (&c, e) in codes.iter().zip(e.iter_mut()) {
        *e = exponent::<MB, BIAS, NF>(c);
    }
    for (&c, v) in codes.iter().zip(v.iter_mut()) {
        *v = f32::from_bits(magnitude::<MB, BIAS, NF>(c).to_bits() | ((c as u32 & 0x80) << 24));
    }
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
                // The marked exponent tells the non-finite magnitudes.
                let m = (code & 0x7F) as usize;
                let marked = if f.is_nonfinite(code) { NONFINITE_EXP } else { t.e[code as usize] };
                assert_eq!(t.e_marked[m], marked, "{f} code {code:#04x}");
            }
        }
    }

    /// Every packed byte moved to its bit is the f32 of the magnitude's value times 2^-packed_scale, a normal f32
    /// or zero; the non-finite magnitudes pack to zero.
    #[test]
    fn packed_bytes_are_the_values() {
        for f in Format::ALL {
            let t = Lut::new(f);
            for m in 0..128u8 {
                let x = f32::from_bits((t.packed[m as usize] as u32) << t.packed_shift());
                let want = if f.is_nonfinite(m) { 0.0 } else { f.to_f64(m) * 2f64.powi(-t.packed_scale()) };
                assert_eq!(x as f64, want, "{f} magnitude {m:#04x}");
                assert!(x == 0.0 || x.is_normal(), "{f} magnitude {m:#04x}");
            }
        }
    }

    /// The computed decoding equals the table on every code of both formats (bits and exponents; zeros, and the
    /// non-finite codes, which decode as zeros, may keep their sign).
    #[test]
    fn decode_equals_the_table() {
        for f in Format::ALL {
            let t = Lut::new(f);
            let codes: Vec<u8> = (0..=255u8).collect();
            let (mut v, mut e) = (vec![0f32; codes.len()], vec![0i8; codes.len()]);
            t.decode(&codes, &mut v, &mut e);
            for (i, &c) in codes.iter().enumerate() {
                // Equal values (a zero may keep its sign; see `decode`).
                assert_eq!(v[i], t.v32[c as usize], "{f} code {c:#04x}");
                assert!(v[i] != 0.0 || c & 0x7F == 0 || f.is_nonfinite(c), "{f} code {c:#04x}");
                if v[i] != 0.0 {
                    assert_eq!(v[i].to_bits(), t.v32[c as usize].to_bits(), "{f} code {c:#04x}");
                }
                assert_eq!(e[i], t.e[c as usize], "{f} code {c:#04x}");
            }
        }
    }
}
