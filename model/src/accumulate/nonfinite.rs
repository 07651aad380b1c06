//! The non-finite patch of a GEMM's outputs (docs/reference.md §3.7): which outputs a NaN or Inf code reaches, and
//! their IEEE class, found from each row's NaN flag and Inf positions rather than a scan of K per output.

use super::Operands;
use crate::format::{Class, Format};
use crate::nonfinite::NonfiniteSum;

/// The non-finite codes of the rows of one operand ([rows, k], row-major): whether each row holds a NaN code, and
/// the positions of its Inf codes (E5M2 only), so that an output reads only those positions of the other row.
#[derive(Clone, Debug)]
pub(crate) struct NonfiniteRows {
    nan: Vec<bool>,
    /// Row r's Inf positions are `inf[start[r]..start[r + 1]]`.
    start: Vec<usize>,
    inf: Vec<usize>,
}

impl NonfiniteRows {
    /// Scan `codes` ([rows, k] of format `f`) once.
    pub(crate) fn new(codes: &[u8], rows: usize, k: usize, f: Format) -> NonfiniteRows {
        let table = f.table();
        let mut s =
            NonfiniteRows { nan: Vec::with_capacity(rows), start: Vec::with_capacity(rows + 1), inf: Vec::new() };
        s.start.push(0);
        for r in 0..rows {
            let mut nan = false;
            for (p, &c) in codes[r * k..(r + 1) * k].iter().enumerate() {
                match table[c as usize].class {
                    Class::Nan => nan = true,
                    Class::Inf => s.inf.push(p),
                    _ => {}
                }
            }
            s.nan.push(nan);
            s.start.push(s.inf.len());
        }
        s
    }

    /// Whether row r holds a non-finite code.
    #[inline]
    fn touched(&self, r: usize) -> bool {
        self.nan[r] || self.start[r + 1] > self.start[r]
    }

    #[inline]
    fn infs(&self, r: usize) -> &[usize] {
        &self.inf[self.start[r]..self.start[r + 1]]
    }
}

/// The accumulator of output (i, j) when row i of A (`ra`, format `fa`) or row j of B (`rb`, format `fb`) holds a
/// non-finite code, None when neither does: the class of the IEEE evaluation of `sum ra[k] * rb[k]` (§3.7) — NaN
/// (canonical) if either row holds a NaN code, an Inf meets a zero, or infinite products of both signs meet; else
/// the Inf of the infinite products' sign. Only the Inf positions of the two rows are read.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn patched(
    rows_a: &NonfiniteRows,
    i: usize,
    ra: &[u8],
    fa: Format,
    rows_b: &NonfiniteRows,
    j: usize,
    rb: &[u8],
    fb: Format,
) -> Option<f32> {
    if !rows_a.touched(i) && !rows_b.touched(j) {
        return None;
    }
    // A NaN code anywhere in either row makes the sum NaN; else only the Inf positions of the two rows decide
    // (an Inf of one row meets a zero, a finite nonzero or an Inf of the other). A position where both are Inf is
    // seen twice, alike.
    let mut sum = NonfiniteSum::default();
    if rows_a.nan[i] || rows_b.nan[j] {
        sum.add_nan();
        return sum.value();
    }
    let (ta, tb) = (fa.table(), fb.table());
    for &p in rows_a.infs(i).iter().chain(rows_b.infs(j)) {
        sum.add(ta[ra[p] as usize], tb[rb[p] as usize]);
    }
    sum.value()
}

/// Patch `out` ([m, n]) in place: every output whose row of A or row of B holds a non-finite code takes
/// [`patched`]'s value.
pub(crate) fn patch(out: &mut [f32], ops: &Operands<'_>) {
    let Operands { fa, fb, a, b, m, n, k } = *ops;
    let rows_a = NonfiniteRows::new(a, m, k, fa);
    let rows_b = NonfiniteRows::new(b, n, k, fb);
    for i in 0..m {
        let ra = &a[i * k..(i + 1) * k];
        for j in 0..n {
            if let Some(v) = patched(&rows_a, i, ra, fa, &rows_b, j, &b[j * k..(j + 1) * k], fb) {
                out[i * n + j] = v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{nonfinite_sum, CANONICAL_NAN_F32};

    /// Codes of a row: mostly finite nonzero, with planted zeros, Infs of both signs and NaNs at the given odds
    /// (per 1000).
    fn row(f: Format, k: usize, odds: [u64; 3], next: &mut impl FnMut() -> u64) -> Vec<u8> {
        let (inf, nan) = match f {
            Format::E5m2 => (&[0x7Cu8, 0xFC][..], &[0x7Du8, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF][..]),
            _ => (&[][..], &[0x7Fu8, 0xFF][..]),
        };
        (0..k)
            .map(|_| {
                let r = next() % 1000;
                let mut pick = |s: &[u8]| s[(next() % s.len() as u64) as usize];
                if r < odds[0] {
                    pick(&[0x00, 0x80])
                } else if r < odds[0] + odds[1] && !inf.is_empty() {
                    pick(inf)
                } else if r < odds[0] + odds[1] + odds[2] {
                    pick(nan)
                } else {
                    loop {
                        let c = next() as u8;
                        if f.decoded(c).class == Class::Finite {
                            break c;
                        }
                    }
                }
            })
            .collect()
    }

    /// The IEEE class of the sum in float64 (finite products of FP8 values cannot overflow it): the independent
    /// evaluation §3.7 describes, with NaNs canonical.
    fn ieee(ra: &[u8], fa: Format, rb: &[u8], fb: Format) -> Option<f32> {
        let s: f64 = ra.iter().zip(rb).map(|(&x, &y)| fa.to_f64(x) * fb.to_f64(y)).sum();
        if s.is_nan() {
            Some(f32::from_bits(CANONICAL_NAN_F32))
        } else if s.is_infinite() {
            Some(s as f32)
        } else {
            None
        }
    }

    /// The patch gives the bits of the chain's non-finite sum and of float64's IEEE evaluation on random rows with
    /// planted zeros, Infs and NaNs, every format pair, short and long rows, sparse and dense non-finite codes;
    /// and leaves outputs of finite rows alone.
    #[test]
    fn patch_matches_the_ieee_sum() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let formats = [Format::E4m3, Format::E5m2];
        let mut seen = [0usize; 4]; // NaN, +Inf, -Inf, untouched
        for fa in formats {
            for fb in formats {
                for (k, odds) in [(1, [300, 200, 50]), (7, [200, 100, 20]), (64, [100, 20, 3]), (300, [30, 2, 0])] {
                    let (m, n) = (9, 11);
                    let a: Vec<u8> = (0..m).flat_map(|_| row(fa, k, odds, &mut next)).collect();
                    let b: Vec<u8> = (0..n).flat_map(|_| row(fb, k, odds, &mut next)).collect();
                    let mut out = vec![1.5f32; m * n];
                    patch(&mut out, &Operands { fa, fb, a: &a, b: &b, m, n, k });
                    for i in 0..m {
                        for j in 0..n {
                            let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
                            let want = nonfinite_sum(fa.table(), fb.table(), ra, rb, 0.0);
                            assert_eq!(want.map(f32::to_bits), ieee(ra, fa, rb, fb).map(f32::to_bits));
                            let got = out[i * n + j];
                            let want = want.unwrap_or(1.5);
                            assert_eq!(got.to_bits(), want.to_bits(), "{fa} x {fb}, K = {k}, ({i}, {j})");
                            seen[match got {
                                g if g.is_nan() => 0,
                                f32::INFINITY => 1,
                                f32::NEG_INFINITY => 2,
                                _ => 3,
                            }] += 1;
                        }
                    }
                }
            }
        }
        // Every class of result was exercised.
        assert!(seen.iter().all(|&c| c > 0), "{seen:?}");
    }
}
