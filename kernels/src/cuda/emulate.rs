//! A pure-Rust emulation of the CUDA kernels' per-block integer algorithm (chain.cu), written with the same
//! structure, packed decode entries and 64-bit integers, so that the host tests can compare the kernels'
//! algorithm with the model (model/src/chain.rs) on random chains without a GPU.

use super::{ChainParams, DecodeTables};
use mmaemu_model::accumulate::{each_output, Operands};

#[inline]
fn sig(d: i32) -> i32 {
    d & 0xFF
}
#[inline]
fn neg(d: i32) -> i32 {
    (d >> 8) & 1
}
#[inline]
fn exp(d: i32) -> i32 {
    d >> 16
}

// `mm_align` is the model's alignment.
use mmaemu_model::chain::align;

/// `mm_from_parts`.
fn from_parts(neg: bool, mag: u64, exp: i32) -> f32 {
    let sign = if neg { 0x8000_0000u32 } else { 0 };
    if mag == 0 {
        return f32::from_bits(sign);
    }
    let lead = 63 - mag.leading_zeros() as i32;
    let ev = lead + exp;
    if ev > 127 {
        return f32::from_bits(sign | 0x7F80_0000);
    }
    if ev >= -126 {
        let s = if lead >= 23 { (mag >> (lead - 23)) as u32 } else { (mag << (23 - lead)) as u32 };
        return f32::from_bits(sign | (((ev + 127) as u32) << 23) | (s & 0x7F_FFFF));
    }
    let shift = exp + 149;
    let f = if shift >= 0 { (mag << shift) as u32 } else { (mag >> (-shift)) as u32 };
    f32::from_bits(sign | f)
}

/// `mm_normalise`.
fn normalise(sum: i64, g: i32, frac_out: i32) -> f32 {
    if sum == 0 {
        return 0.0;
    }
    let neg = sum < 0;
    let mut mag = sum.unsigned_abs();
    let ed = (63 - mag.leading_zeros() as i32 + g).max(-126);
    let target = ed - frac_out;
    let mut e = g;
    if target > g {
        let sh = target - g;
        mag = if sh >= 64 { 0 } else { mag >> sh };
        e = target;
    }
    if mag == 0 {
        return 0.0;
    }
    from_parts(neg, mag, e)
}

/// `mm_parts`.
fn parts(c: f32) -> (bool, u32, i32) {
    let bits = c.to_bits();
    let field = (bits >> 23) & 0xFF;
    let f = bits & 0x7F_FFFF;
    if field == 0 {
        (bits >> 31 == 1, f, -149)
    } else {
        (bits >> 31 == 1, f | 0x80_0000, field as i32 - 150)
    }
}

/// `mm_pexp`.
#[inline]
fn pexp(da: i32, db: i32) -> i32 {
    if sig(da) != 0 && sig(db) != 0 {
        exp(da) + exp(db)
    } else {
        i32::MIN
    }
}

/// `mm_term`.
#[inline]
fn term(da: i32, db: i32, mab: i32, g: i32) -> i64 {
    let p = (sig(da) * sig(db)) as u32;
    if p == 0 {
        return 0;
    }
    let t = align(p as u64, exp(da) + exp(db) - mab - g) as i64;
    if neg(da) != neg(db) {
        -t
    } else {
        t
    }
}

/// `mm_block_grid`: the grid exponent and c's aligned term (early c).
fn block_grid(p: &ChainParams, acc: f32, emax: i32) -> (i32, i64) {
    let mut e = emax;
    if p.late == 0 {
        let (cneg, csig, cexp) = parts(acc);
        if csig != 0 {
            e = e.max(cexp + (31 - csig.leading_zeros() as i32));
        }
        e = e.max(p.min_exp);
        let g = e - p.frac;
        let mut csum = 0;
        if csig != 0 {
            let t = align(csig as u64, cexp - g) as i64;
            csum = if cneg { -t } else { t };
        }
        return (g, csum);
    }
    (e.max(p.min_exp) - p.frac, 0)
}

/// `mm_block_finish`: `__fadd_rn` is Rust's f32 `+` (IEEE round to nearest even, subnormals kept).
fn block_finish(p: &ChainParams, acc: f32, sum: i64, g: i32) -> f32 {
    let d = normalise(sum, g, p.frac_out);
    if p.late != 0 {
        d + acc
    } else {
        d
    }
}

/// One output of `mmaemu_chain_generic`: the chain over `a[k] * b[k]` from +0, canonical NaN.
pub fn chain(p: &ChainParams, t: &DecodeTables, a: &[u8], b: &[u8]) -> f32 {
    let (ta, tb) = (&t.0[p.ta as usize], &t.0[p.tb as usize]);
    let l = a.len();
    let nf = p.nfma as usize;
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < l {
        if !acc.is_finite() {
            break;
        }
        let k1 = (k0 + nf).min(l);
        let mut emax = i32::MIN;
        for k in k0..k1 {
            emax = emax.max(pexp(ta[a[k] as usize], tb[b[k] as usize]));
        }
        let (g, mut sum) = block_grid(p, acc, emax);
        for k in k0..k1 {
            sum += term(ta[a[k] as usize], tb[b[k] as usize], p.mab, g);
        }
        acc = block_finish(p, acc, sum, g);
        k0 += nf;
    }
    canonical(acc)
}

/// `mm_canonical`: NaN as 0x7FFFFFFF.
fn canonical(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(0x7FFF_FFFF)
    } else {
        x
    }
}

/// `m * n` chains as the kernels compute them: `out[i * n + j]` over `a[i, ..]` and `b[j, ..]`.
pub fn chains(p: &ChainParams, t: &DecodeTables, ops: &Operands<'_>) -> Vec<f32> {
    each_output(ops, |ra, rb| chain(p, t, ra, rb))
}

/// `MM_NZEXP`: the staged exponent of a zero code in `mmaemu_chain_narrow`.
const NZEXP: i32 = -512;

/// One output of `mmaemu_chain_narrow` (parameters it serves, see `KERNELS`): codes staged as a signed
/// significand (A's times 2^(frac - mab)) and an exponent (zeros at `NZEXP`); per block the maximum of
/// the staged exponent sums, the grid and c's term (`mm_block_grid`), and 32-bit terms
/// `trunc(sa * sb / 2^min(E - ea - eb, 31))`; a non-finite accumulator is kept.
pub fn chain_narrow(p: &ChainParams, t: &DecodeTables, a: &[u8], b: &[u8]) -> f32 {
    let (ta, tb) = (&t.0[p.ta as usize], &t.0[p.tb as usize]);
    let scale = 1i32 << (p.frac - p.mab);
    let stage = |d: i32, factor: i32| {
        let s = sig(d);
        let q = if neg(d) == 1 { -s } else { s };
        (q * factor, if s != 0 { exp(d) } else { NZEXP })
    };
    let nf = p.nfma as usize;
    let mut acc = 0.0f32;
    for (ba, bb) in a.chunks(nf).zip(b.chunks(nf)) {
        let staged: Vec<((i32, i32), (i32, i32))> =
            ba.iter().zip(bb).map(|(&x, &y)| (stage(ta[x as usize], scale), stage(tb[y as usize], 1))).collect();
        let e = staged.iter().fold(2 * NZEXP, |e, ((_, xa), (_, xb))| e.max(xa + xb));
        let (g, cs) = block_grid(p, if acc.is_finite() { acc } else { 0.0 }, e);
        let big_e = g + p.frac;
        let mut sum = cs as i32;
        for ((qa, xa), (qb, xb)) in staged {
            let prod = qa * qb;
            let d = (big_e - xa - xb).min(31);
            let mag = prod.abs() >> d;
            sum += if prod < 0 { -mag } else { mag };
        }
        if acc.is_finite() {
            acc = normalise(sum as i64, g, p.frac_out);
        }
    }
    canonical(acc)
}

/// `m * n` chains as `mmaemu_chain_narrow` computes them.
pub fn chains_narrow(p: &ChainParams, t: &DecodeTables, ops: &Operands<'_>) -> Vec<f32> {
    each_output(ops, |ra, rb| chain_narrow(p, t, ra, rb))
}
