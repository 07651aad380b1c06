//! The attribution of one GEMM output in fixed point: the block steps of docs/reference.md §2.2–§2.3 and the fp32
//! additions of §3 re-executed on i128 multiples of one power of two, for whole-GEMM attribution at speed.

// Every value before the epilogue is an integer multiple of 2^u, u = (emin_a − mbits_a) + (emin_b − mbits_b): the
// products are, the alignment truncates and the normalisation truncates (or, nearest-even presets, rounds) to grids
// at or above them, and an fp32 sum of multiples of 2^u is one (a rounding makes its ulp coarser, never finer).
// Magnitudes stay below K·max|a·b|·2, so i128 holds them exactly. Where a value does not fit (`None`), the caller
// falls back to the exact trace. The epilogue is the trace's own (`epilogue::trace`), on exact values. Tests compare
// every attribution with the trace's, bit for bit.

use super::attribute::{finish, Attribution};
use super::exact::Exact;
use super::{epilogue, nonfinite_rule};
use mmaemu_model::accumulate::Operands;
use mmaemu_model::epilogue::Epilogue;
use mmaemu_model::format::{Class, Format};
use mmaemu_model::plan::Plan;
use mmaemu_model::preset::{BlockRounding, CEntry, Preset};

/// A padding position of a chain (a zero product).
const PAD: u32 = u32::MAX;
/// The exponent of a zero code: far below any preset's floor, so it never sets a block exponent.
const ZERO_EXP: i32 = -(1 << 20);

/// One FP8 code: its signed value in units of 2^(emin − mbits) and its exponent e(x) (ZERO_EXP for zeros).
#[derive(Clone, Copy)]
struct Code {
    v: i64,
    e: i32,
}

fn table(f: Format) -> [Code; 256] {
    let mut t = [Code { v: 0, e: ZERO_EXP }; 256];
    for (c, slot) in t.iter_mut().enumerate() {
        let d = f.decoded(c as u8);
        // Non-finite codes are replaced by 0x00 for the chains (§3.5 step 3): they are zeros here.
        if d.class == Class::Finite && d.sig != 0 {
            let v = (d.sig as i64) << (d.exp as i32 - f.emin());
            *slot = Code { v: if d.neg { -v } else { v }, e: d.exp as i32 };
        }
    }
    t
}

/// The attribution of every output of one GEMM in fixed point.
pub struct FastGemm<'a> {
    preset: &'a Preset,
    plan: &'a Plan,
    ops: Operands<'a>,
    epi: Option<&'a Epilogue>,
    /// Per split, per chunk: the chain's k indices in order, then PAD.
    chains: Vec<Vec<Vec<u32>>>,
    ta: [Code; 256],
    tb: [Code; 256],
    /// The unit exponent u.
    u: i32,
}

/// The fixed-point sums of one output's accumulator (units of 2^u).
#[derive(Default)]
struct Sums {
    exact: i128,
    dropped: i128,
    block: i128,
    comb: i128,
}

impl<'a> FastGemm<'a> {
    /// Prepare the plan's chains for `ops`.
    pub fn new(
        preset: &'a Preset,
        plan: &'a Plan,
        ops: Operands<'a>,
        epi: Option<&'a Epilogue>,
    ) -> mmaemu_model::error::Result<FastGemm<'a>> {
        ops.check()?;
        if ops.k != plan.k() {
            return Err(mmaemu_model::error::Error::invalid_value(format!(
                "the plan is for K = {}, the operands have K = {}",
                plan.k(),
                ops.k
            )));
        }
        let chains = plan
            .splits()
            .iter()
            .map(|s| {
                s.chunks
                    .iter()
                    .map(|c| {
                        let mut v: Vec<u32> = c.ranges.iter().flat_map(|r| r.clone().map(|k| k as u32)).collect();
                        v.resize(c.len.max(v.len()), PAD);
                        v
                    })
                    .collect()
            })
            .collect();
        let unit = |f: Format| f.emin() - f.mbits() as i32;
        Ok(FastGemm {
            preset,
            plan,
            ops,
            epi,
            chains,
            ta: table(ops.fa),
            tb: table(ops.fb),
            u: unit(ops.fa) + unit(ops.fb),
        })
    }

    /// The value of a finite fp32 number in units of 2^u (None when it is not a multiple or does not fit).
    fn units(&self, x: f32) -> Option<i128> {
        if x == 0.0 {
            return Some(0);
        }
        let x = Exact::of_f32(x)?;
        x.units(self.u).filter(|v| v.unsigned_abs() < 1 << 120)
    }

    /// floor(log2|x|) of a nonzero finite fp32 number.
    fn ilog2(x: f32) -> i32 {
        let bits = x.to_bits() & 0x7FFF_FFFF;
        let field = (bits >> 23) as i32;
        if field == 0 {
            31 - bits.leading_zeros() as i32 - 149
        } else {
            field - 127
        }
    }

    /// x truncated toward zero to a multiple of 2^sh units.
    fn trunc(x: i128, sh: i32) -> i128 {
        if sh <= 0 {
            return x;
        }
        if sh >= 127 {
            return 0;
        }
        let m = (x.unsigned_abs() >> sh << sh) as i128;
        if x < 0 {
            -m
        } else {
            m
        }
    }

    /// x rounded to the nearest multiple of 2^sh units, ties to even (None when the rounded value does not fit).
    fn round_even(x: i128, sh: i32) -> Option<i128> {
        if sh <= 0 {
            return Some(x);
        }
        let mag = x.unsigned_abs();
        if sh >= 128 {
            return Some(0); // |x| < 2^127 <= half a unit
        }
        let (kept, rest, half) = (mag >> sh, mag & ((1u128 << sh) - 1), 1u128 << (sh - 1));
        let q = kept + u128::from(rest > half || (rest == half && kept & 1 == 1));
        let m = i128::try_from(q.checked_shl(sh as u32).filter(|v| v >> sh == q)?).ok()?;
        Some(if x < 0 { -m } else { m })
    }

    /// One block step over chain positions `blk` of rows `ra`, `rb` from `c` (block.rs, in fixed point).
    fn block(&self, ra: &[u8], rb: &[u8], blk: &[u32], c: f32, s: &mut Sums) -> Option<f32> {
        let (frac, frac_out, min_exp) =
            (self.preset.frac() as i32, self.preset.frac_out() as i32, self.preset.min_exp());
        let early = self.preset.c_entry() == CEntry::Early;
        let mut e = i32::MIN;
        for &p in blk {
            if p != PAD {
                let (x, y) = (self.ta[ra[p as usize] as usize], self.tb[rb[p as usize] as usize]);
                e = e.max(x.e + y.e);
            }
        }
        let cu = self.units(c)?;
        if early && cu != 0 {
            e = e.max(Self::ilog2(c).max(-126)); // §2.2 step 3
        }
        let e = e.max(min_exp);
        let g = e - frac;
        let sh = g - self.u;
        let mut aligned = 0i128;
        for &p in blk {
            if p != PAD {
                let (x, y) = (self.ta[ra[p as usize] as usize], self.tb[rb[p as usize] as usize]);
                let prod = x.v as i128 * y.v as i128;
                let kept = Self::trunc(prod, sh);
                s.exact += prod;
                s.dropped += prod - kept;
                aligned += kept;
            }
        }
        if early && cu != 0 {
            let kept = Self::trunc(cu, sh);
            s.dropped += cu - kept;
            aligned += kept;
        }
        let d = if aligned == 0 {
            0
        } else {
            let lead = 127 - aligned.unsigned_abs().leading_zeros() as i32 + self.u;
            let go = (lead.max(-126) - frac_out).max(g);
            match self.preset.rounding() {
                BlockRounding::Truncate => Self::trunc(aligned, go - self.u),
                BlockRounding::NearestEven => Self::round_even(aligned, go - self.u)?,
            }
        };
        s.block -= aligned - d;
        let df = Exact::new(d, self.u).to_f32();
        if self.units(df)? != d {
            return None;
        }
        if early {
            Some(df)
        } else {
            let r = df + c;
            s.block += self.units(r)? - d - cu;
            Some(r)
        }
    }

    /// x + y in fp32, its rounding error added to `err`.
    fn add(&self, x: f32, y: f32, err: &mut i128) -> Option<f32> {
        let r = x + y;
        *err += self.units(r)? - self.units(x)? - self.units(y)?;
        Some(r)
    }

    /// The split combination in the rule's order (`super::combine`), its errors added to `err`.
    fn combine(&self, p: &[f32], err: &mut i128) -> Option<f32> {
        let order = self.plan.split().scheme().rule().map_or(mmaemu_model::rule::Order::Serial, |r| r.order);
        let e = std::cell::Cell::new(Some(0i128));
        let sum = mmaemu_model::rule::combine_with(order, p, &|x: &f32, y: &f32| {
            let mut here = 0;
            let r = self.add(*x, *y, &mut here);
            e.set(e.get().zip(r).map(|(acc, _)| acc + here));
            r.unwrap_or(*x + *y)
        });
        *err += e.get()?;
        Some(sum.unwrap_or(0.0))
    }

    /// Output (i, j): its bits and its attribution (None when a value on the way is not finite), or None when a
    /// value does not fit the fixed point (the caller then traces the output exactly).
    pub fn element(&self, i: usize, j: usize) -> Option<(u32, Option<Attribution>)> {
        let k = self.ops.k;
        if k == 0 {
            // K = 0: +0 whatever the scales, no epilogue (as the trace has it).
            let z = Exact::zero;
            return Some((0, finish(z(), z(), z(), z(), 0.0, None)));
        }
        let ra = &self.ops.a[i * k..(i + 1) * k];
        let rb = &self.ops.b[j * k..(j + 1) * k];
        let mut s = Sums::default();
        let mut partials = Vec::with_capacity(self.chains.len());
        for split in &self.chains {
            let mut partial = 0.0f32;
            for chain in split {
                let mut acc = 0.0f32;
                for blk in chain.chunks(self.preset.nfma()) {
                    acc = self.block(ra, rb, blk, acc, &mut s)?;
                }
                partial = self.add(partial, acc, &mut s.comb)?;
            }
            partials.push(partial);
        }
        let mut acc = self.combine(&partials, &mut s.comb)?;
        let nonfinite = self.ops.fa.any_nonfinite(ra) || self.ops.fb.any_nonfinite(rb);
        if nonfinite {
            acc = nonfinite_rule(self.ops.fa, self.ops.fb, ra, rb).0;
        }
        let et = self.epi.map(|e| epilogue::trace(e, acc));
        let bits = et.as_ref().map_or(mmaemu_model::chain::canonical_f32(acc).to_bits(), |e| e.bits);
        if nonfinite {
            return Some((bits, None));
        }
        let x = |v: i128| Exact::new(v, self.u);
        let a = finish(x(s.exact), x(-s.dropped), x(s.block), x(s.comb), acc, et.as_ref());
        Some((bits, a))
    }
}
