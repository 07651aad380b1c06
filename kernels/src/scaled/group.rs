//! The group-scaled chains of the CPU backend (docs/reference.md §12.2: NVFP4's ue4m3 scales per 16, MXFP4's ue8m0)
//! on the panels of the block-scaled chains: MMA-Sim's group step for W chains at once in exact f32 and f64 lanes,
//! marking the outputs the model's chain must recompute.

// The model's step (`mmaemu_model::GroupChain::step`), per output and instruction of nfma elements in groups of
// `group` (one scale each): a group's products are summed exactly; a group with a nonzero product and two nonzero
// scales counts at e(sa) + e(sb), any other group at min_exp, and c at its fp32 exponent (min_exp when zero); E is the
// largest; each group's sum · sa · sb and c are truncated toward zero to the grid 2^(E - frac), the integers added,
// and the sum truncated (or rounded) to frac_out bits.
//
// Every step is exact here. e2m1 products are multiples of 2^-2 below 36: a group's sum (at most 64 products, see
// `serves`) is exact in f32 in any order, and has at most 14 significant bits; a scale's value has at most 4
// significant bits, so sum · sa · sb is exact in f64, and the power-of-two factor 2^(frac - E) only moves its
// exponent (a result below 2^-1022 is below 1 and truncates to 0). A group's term is below 2^(frac + 14) (its
// value is below 36 · 64 · 2^(e(sa) + e(sb) + 2) and E is at least that group's exponent), c's below 2^(frac + 1);
// `serves` keeps their sum below 2^53. Scale exponents lie in [-254, 256], so with |min_exp| <= `MIN_EXP_BOUND` and
// frac <= 48 every factor is a normal f64. A block result that is zero or a normal fp32 is the model's bits; any
// other, or a NaN scale, marks the output with a NaN accumulator as in `step.rs`.

use super::step::{block_result, MIN_EXP_BOUND, NONE};
use super::PanelTile;
use crate::driver::Job;
use crate::kernel::{exp_f32, Lane, Params};
use mmaemu_model::group_scale::scale_parts;
use mmaemu_model::Preset;
use std::ops::Range;

/// The largest group the step sums in f32 (see the comment at the top of this file).
const MAX_GROUP: usize = 64;

/// Whether the step computes a preset's group-scaled chains: a group that is the scale block and divides the
/// instruction, at most [`MAX_GROUP`], block sums below 2^53, |min_exp| <= [`MIN_EXP_BOUND`].
pub fn serves(preset: &Preset) -> bool {
    let (nfma, frac) = (preset.nfma(), preset.frac());
    let Some(group) = preset.group() else { return false };
    let bound = ((nfma / group.max(1)) as u128 + 1) << (frac + 14).min(100);
    preset.scale_block() == Some(group)
        && group <= MAX_GROUP
        && nfma % group == 0
        && frac <= 48
        && bound <= 1 << 53
        && preset.min_exp().abs() <= MIN_EXP_BOUND
}

/// A scale code in the step's form.
#[derive(Clone, Copy, Default)]
struct Scale {
    /// Its value (0 for a zero or NaN code).
    v: f64,
    /// Its exponent e(s).
    e: i32,
    /// [`ZERO`] for a zero scale (its group counts as a zero group), [`NAN`] for the NaN code (marks the output).
    flags: u8,
}

/// [`Scale::flags`] of a zero scale.
const ZERO: u8 = 1;

/// [`Scale::flags`] of the NaN code.
const NAN: u8 = 2;

/// The panel's scales of one piece, a plane per field (W per group), so that the lanes read them as vectors.
struct Planes {
    v: Vec<f64>,
    e: Vec<i32>,
    flags: Vec<u8>,
}

/// The operands of a group-scaled GEMM in the kernels' form: A's e2m1 codes (m x k, one per byte; B's are read
/// through the job) and the scale codes, row-major [m, ceil(k / group)] and [n, ceil(k / group)].
pub struct Grouped<'a> {
    a: &'a [u8],
    k: usize,
    p: Params,
    group: usize,
    min_exp: i32,
    sa: &'a [u8],
    sb: &'a [u8],
    /// Each scale code.
    scales: [Scale; 256],
}

impl<'a> Grouped<'a> {
    /// The kernels' form of a preset's GEMM (one that [`serves`] accepts).
    pub fn new(preset: &Preset, a: &'a [u8], k: usize, sa: &'a [u8], sb: &'a [u8]) -> Grouped<'a> {
        let mut g = Grouped {
            a,
            k,
            p: Params::new(preset),
            group: preset.group().unwrap_or(1),
            min_exp: preset.min_exp(),
            sa,
            sb,
            scales: [Scale::default(); 256],
        };
        for code in 0..=255u8 {
            g.scales[code as usize] = match scale_parts(preset.scale_format(), code) {
                Ok((sig, e)) => {
                    Scale { v: sig as f64 * <f64 as Lane>::pow2(e - 3), e, flags: if sig == 0 { ZERO } else { 0 } }
                }
                Err(()) => Scale { flags: NAN, ..Scale::default() },
            };
        }
        g
    }
}

impl PanelTile for Grouped<'_> {
    /// Rows `rows` of A against the panel `cols` of B (at most W rows), NaN where the model must recompute.
    #[inline(always)]
    fn tile<const W: usize, const HT: bool, const X86: u8>(
        &self,
        job: &Job<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Vec<f32> {
        let (k, nfma, group, nr) = (self.k, self.p.nfma, self.group, rows.len());
        let ns = k.div_ceil(group);
        let end = k.div_ceil(nfma) * nfma;
        // Whole instructions, as the block-scaled panels' pieces.
        let piece_len = crate::driver::whole_blocks(nfma, crate::driver::GROUP_PIECE);
        let mut pc = vec![0u8; piece_len * W];
        let (mut pv, mut pn) = (vec![0f32; piece_len * W], vec![0u8; piece_len * W]);
        let (mut av, mut an) = (vec![0f32; piece_len], vec![0u8; piece_len]);
        let mut xa = vec![Scale::default(); piece_len / group];
        let gw = piece_len / group * W;
        let mut xb = Planes { v: vec![0.0; gw], e: vec![0; gw], flags: vec![0; gw] };
        let mut sums = vec![0f32; nfma / group * W];
        let mut c = vec![0f32; nr * W];
        for q0 in (0..end).step_by(piece_len) {
            let q1 = (q0 + piece_len).min(end);
            let (len, real, g0) = (q1 - q0, q1.min(k) - q0, q0 / group);
            // The piece's groups: those holding a position before K (the last instruction's rest is no group).
            let ng = real.div_ceil(group);
            job.chain_panel_codes::<W>(q0, q1, cols.clone(), &mut pc, X86);
            decode::<X86>(&pc[..len * W], &mut pv, &mut pn);
            if cols.len() < W {
                xb.v.fill(0.0);
                xb.e.fill(0);
                xb.flags.fill(0);
            }
            // A plane row per group, filled column by column (the panel's codes of one group lie ns apart).
            let planes = xb.v.chunks_exact_mut(W).zip(xb.e.chunks_exact_mut(W)).zip(xb.flags.chunks_exact_mut(W));
            for (gi, ((v, e), f)) in planes.take(ng).enumerate() {
                for ((v, e), (f, j)) in v.iter_mut().zip(e.iter_mut()).zip(f.iter_mut().zip(cols.clone())) {
                    let x = self.scales[self.sb[j * ns + g0 + gi] as usize];
                    (*v, *e, *f) = (x.v, x.e, x.flags);
                }
            }
            for (c, i) in c.chunks_exact_mut(W).zip(rows.clone()) {
                let Ok(c) = <&mut [f32; W]>::try_from(c) else { continue };
                av.fill(0.0);
                an.fill(0);
                for ((&code, v), n) in self.a[i * k + q0..i * k + q0 + real].iter().zip(&mut av).zip(&mut an) {
                    (*v, *n) = e2m1_value(code);
                }
                for (x, &code) in xa.iter_mut().zip(&self.sa[i * ns + g0..i * ns + g0 + ng]) {
                    *x = self.scales[code as usize];
                }
                let piece = Piece { av: &av[..len], an: &an[..len], pv: &pv[..len * W], pn: &pn[..len * W], ng };
                self.steps::<W, HT>(&piece, &xa, &xb, &mut sums, c);
            }
        }
        let mut out = Vec::with_capacity(nr * cols.len());
        c.chunks_exact(W).for_each(|c| out.extend_from_slice(&c[..cols.len()]));
        out
    }
}

/// The value of a byte's e2m1 code (its low nibble) and 1 where it is nonzero, else 0, from its bits (branch-free,
/// so that a piece's codes decode in vector lanes): |x| = mant · 2^-1 in field 0, (1 + mant / 2) · 2^(field - 1)
/// above, the sign from bit 3 (a zero with it is -0).
#[inline(always)]
fn e2m1_value(code: u8) -> (f32, u8) {
    let c = u32::from(code);
    let (field, mant) = ((c >> 1) & 3, c & 1);
    let normal = ((field + 126) << 23) | (mant << 22);
    let mag = if field == 0 { mant * 0x3F00_0000 } else { normal };
    (f32::from_bits(mag | (c & 8) << 28), u8::from(c & 7 != 0))
}

/// `codes` decoded as [`e2m1_value`] decodes them (a zero may come out as +0 whatever its sign) into `v` and `n`, on
/// the level `X86` names: by `crate::x86::decode_e2m1` on AVX-512 (a fifth of one row's call, as the portable loop
/// compiled for it, was its decoding of B).
#[inline(always)]
fn decode<const X86: u8>(codes: &[u8], v: &mut [f32], n: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if X86 == crate::driver::X86_AVX512 {
        // SAFETY: the AVX-512 level's tiles run only where its features were detected (`SimdLevel::available`).
        return unsafe { crate::x86::decode_e2m1(codes, v, n) };
    }
    for ((&code, v), n) in codes.iter().zip(v).zip(n) {
        (*v, *n) = e2m1_value(code);
    }
}

/// One piece of a row and a panel: A's values and nonzero flags, the panel's (W per position), its real groups.
struct Piece<'p> {
    av: &'p [f32],
    an: &'p [u8],
    pv: &'p [f32],
    pn: &'p [u8],
    ng: usize,
}

impl Grouped<'_> {
    /// The instructions of one piece for one row against the panel (see the comment at the top of this file): `xa`
    /// the row's scales per group, `xb` the panel's (W per group), `sums` scratch for one instruction's group sums,
    /// `c` the W accumulators (NaN: marked).
    #[inline(always)]
    fn steps<const W: usize, const HT: bool>(
        &self,
        piece: &Piece<'_>,
        xa: &[Scale],
        xb: &Planes,
        sums: &mut [f32],
        c: &mut [f32; W],
    ) {
        let (p, group) = (&self.p, self.group);
        let per = p.nfma / group;
        for blk in 0..piece.av.len() / p.nfma {
            let ngb = per.min(piece.ng.saturating_sub(blk * per));
            let (mut e, mut zero, mut nan) = ([NONE; W], [false; W], [false; W]);
            for gi in 0..ngb {
                let (g, o) = (blk * per + gi, (blk * per + gi) * group);
                let mut s = [0f32; W];
                let mut nz = [0u8; W];
                for q in o..o + group {
                    let (va, na) = (piece.av[q], piece.an[q]);
                    let (Ok(row), Ok(nrow)) = (
                        <&[f32; W]>::try_from(&piece.pv[q * W..(q + 1) * W]),
                        <&[u8; W]>::try_from(&piece.pn[q * W..(q + 1) * W]),
                    ) else {
                        continue;
                    };
                    for j in 0..W {
                        s[j] += va * row[j];
                        nz[j] |= na & nrow[j];
                    }
                }
                sums[gi * W..(gi + 1) * W].copy_from_slice(&s);
                let (Ok(be), Ok(bf)) = (
                    <&[i32; W]>::try_from(&xb.e[g * W..(g + 1) * W]),
                    <&[u8; W]>::try_from(&xb.flags[g * W..(g + 1) * W]),
                ) else {
                    continue;
                };
                let sa = xa[g];
                for j in 0..W {
                    let fl = sa.flags | bf[j];
                    let valid = nz[j] != 0 && fl & ZERO == 0;
                    e[j] = e[j].max(if valid { sa.e + be[j] } else { NONE });
                    zero[j] |= !valid;
                    nan[j] |= fl & NAN != 0;
                }
            }
            let (mut f, mut inv, mut total) = ([0f64; W], [0f64; W], [0f64; W]);
            for j in 0..W {
                let cz = c[j] == 0.0;
                let mut ee = e[j].max(if cz { NONE } else { exp_f32(c[j]) });
                ee = ee.max(if cz || zero[j] { self.min_exp } else { NONE });
                f[j] = <f64 as Lane>::pow2(p.frac - ee);
                inv[j] = <f64 as Lane>::pow2(ee - p.frac);
                // From +0: a sum of integer-valued terms that starts at +0 is never -0 (the model's integer zero).
                total[j] = 0.0 + Lane::trunc::<HT>(f64::from(c[j]) * f[j]);
            }
            for gi in 0..ngb {
                let g = blk * per + gi;
                let (sa, sb, s) = (xa[g].v, &xb.v[g * W..(g + 1) * W], &sums[gi * W..(gi + 1) * W]);
                for j in 0..W {
                    total[j] += Lane::trunc::<HT>(f64::from(s[j]) * (sa * sb[j]) * f[j]);
                }
            }
            for j in 0..W {
                c[j] = block_result(total[j].keep_frac_out(p) * inv[j], nan[j] || c[j].is_nan());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::e2m1_value;
    use mmaemu_model::format::e2m1;

    /// The AVX-512 decoding is `e2m1_value`, byte for byte (a zero's sign aside), over whole vectors and a ragged
    /// tail.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_decoding_is_e2m1_value() {
        if !crate::SimdLevel::available(None).iter().any(|l| l.width() == 64) {
            return;
        }
        let codes: Vec<u8> = (0..=255u8).chain(0..37u8).map(|c| c.wrapping_mul(37)).collect();
        let (mut v, mut n) = (vec![f32::NAN; codes.len()], vec![9u8; codes.len()]);
        // SAFETY: the AVX-512 level is available, so are its features.
        unsafe { crate::x86::decode_e2m1(&codes, &mut v, &mut n) };
        for (i, &code) in codes.iter().enumerate() {
            let (want, nz) = e2m1_value(code);
            assert!(v[i] == want && (want != 0.0 || v[i].to_bits() == 0), "code {code:#04x} at {i}: {}", v[i]);
            assert_eq!(n[i], nz, "code {code:#04x} at {i}");
        }
    }

    /// Every byte's value and nonzero flag are the model's e2m1 decoding of its low nibble, bit for bit.
    #[test]
    fn e2m1_values_are_the_format() {
        for code in 0..=255u8 {
            let (v, nz) = e2m1_value(code);
            assert_eq!(v.to_bits(), e2m1::to_f32(code).to_bits(), "code {code:#04x}");
            assert_eq!(nz, u8::from(e2m1::to_f32(code) != 0.0), "code {code:#04x}");
        }
    }
}
