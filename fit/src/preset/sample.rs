//! The recorded chains a preset fit tests its candidates on: every output of a fitting row, as one chain from its
//! recorded c (op `mma`) or from +0 over all of K (an unsplit accumulator, fast or slow), and how one candidate
//! computes it (a slow chain is cut into the preset's slow chunks, docs/reference.md §3.1).

use mmaemu_datasets::{Op, Row, ScaleSpec, Scaling, Truth};
use mmaemu_model::round::f32_parts;
use mmaemu_model::{Chain, Format};

/// One recorded chain.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub fa: Format,
    pub fb: Format,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
    pub c: f32,
    pub want: u32,
    /// Slow accumulation (an unsplit accumulator with use_fast_accum=False): cut into slow chunks.
    pub slow: bool,
    /// An accumulator of a GEMM plan (op `accumulator` or `gemm`, from +0), not an `mma` output over its own k.
    pub accumulator: bool,
    /// Index into the fit's rows.
    pub row: usize,
    /// An MXFP8 chain's e8m0 block scales (A's row, B's row; one code per 32 of K): a block-scaled chain from +0
    /// (docs/reference.md §2.8, §12.4), which only a preset whose blocks are the 32-element scale blocks computes.
    pub scales: Option<(Vec<u8>, Vec<u8>)>,
}

impl Sample {
    /// The chain's result under `chain` (a fast chain or `mma` output), or under slow chunks of `chunk` elements:
    /// consecutive chains from +0 whose results are added in K order into an fp32 sum from +0. Each chain runs over
    /// the length the model's plan gives it (docs/reference.md §3.1): a slow chunk's full length (the last one
    /// zero-padded), an unsplit fast accumulator's K rounded up to 16. Padding is not always a no-op: with an early c
    /// and frac below the accumulator's significant bits, an all-zero block re-aligns c to frac bits.
    pub fn eval(&self, chain: &Chain, chunk: Option<usize>) -> u32 {
        if let Some((sa, sb)) = &self.scales {
            return chain.run_scaled(&self.a, &self.b, sa, sb, 0.0).to_bits();
        }
        match chunk {
            Some(l) if self.slow => {
                let l = l.max(1);
                let mut acc = 0.0f32;
                for (a, b) in self.a.chunks(l).zip(self.b.chunks(l)) {
                    acc += run_padded(chain, a, b, l);
                }
                acc.to_bits()
            }
            _ if self.accumulator => run_padded(chain, &self.a, &self.b, self.a.len().div_ceil(16) * 16).to_bits(),
            _ => chain.run(&self.a, &self.b, self.c).to_bits(),
        }
    }

    /// Whether every block of the chain sums values on the grid 2^−126 (an accumulator from +0, or a recorded c of
    /// zero or a multiple of 2^−126; every FP8 product is a multiple of 2^−32): then a nonzero block result is at
    /// least 2^−126, and the equivalences of [`super::space::canonical`] hold on the chain as on a GEMM's.
    pub fn on_grid(&self) -> bool {
        if self.accumulator || self.c == 0.0 {
            return true;
        }
        if !self.c.is_finite() {
            return false;
        }
        // c = sig · 2^exp: its lowest set bit (a subnormal's lies below 2^−126).
        let (_, sig, exp) = f32_parts(self.c);
        exp + sig.trailing_zeros() as i32 >= -126
    }

    /// Whether the chain is a GEMM's a recorder can call (an accumulator, not of e5m2 × e5m2, which torch refuses):
    /// the floors of [`super::space::harmless_floor`] give it the same bits.
    pub fn gemm(&self) -> bool {
        self.accumulator && !(self.fa == Format::E5m2 && self.fb == Format::E5m2)
    }
}

/// A chain from +0 over `a`, `b` zero-padded to `len` elements (`len` at least their length).
fn run_padded(chain: &Chain, a: &[u8], b: &[u8], len: usize) -> f32 {
    if a.len() >= len {
        return chain.run(a, b, 0.0);
    }
    let (mut pa, mut pb) = (a.to_vec(), b.to_vec());
    pa.resize(len, 0);
    pb.resize(len, 0);
    chain.run(&pa, &pb, 0.0)
}

pub(crate) fn format_of(name: &str) -> Option<Format> {
    Format::from_name(name)
}

/// The chains of one row, or why it is not fitting input.
pub(crate) fn row_samples(row: &Row, index: usize) -> Result<Vec<Sample>, String> {
    if row.truth != Truth::Hardware {
        return Err("truth is not hardware".into());
    }
    let (fa, fb) = match (format_of(&row.fmt_a), format_of(&row.fmt_b)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(format!("formats {} x {} are not FP8", row.fmt_a, row.fmt_b)),
    };
    let bits = row.expected_bits().ok_or("no expected bits")?;
    let dim = |x: i64| usize::try_from(x).map_err(|_| format!("negative dimension {x}"));
    let (batch, m, n, k) = (dim(row.batch)?, dim(row.m)?, dim(row.n)?, dim(row.k)?);
    let outputs = batch.checked_mul(m).and_then(|x| x.checked_mul(n)).ok_or("too many outputs")?;
    if row.expected_elems() != Some(outputs) || bits.len() != 4 * outputs {
        return Err("only whole fp32 results are fitting input".into());
    }
    if row.a.len() != batch * m * k || row.b.len() != batch * n * k {
        return Err("operand sizes do not match the shape".into());
    }
    let mut slow = false;
    let mut scales: Option<(Vec<u8>, Vec<u8>)> = None;
    let c: Option<&[u8]> = match row.op {
        Op::Mma => Some(row.c.as_deref().ok_or("op mma without c")?),
        Op::Accumulator | Op::Gemm => {
            // A gemm row is its accumulator when its epilogue is the identity: fp32 out, unit scales.
            let one = Some(1.0f32.to_bits());
            let identity = row.out_dtype.as_deref() == Some("float32")
                && row.scale_a == one
                && row.scale_b == one
                && row.scale_result.is_none();
            if row.op == Op::Gemm && !identity {
                return Err("a gemm row with an epilogue (fp32 out and unit scales make it an accumulator)".into());
            }
            if row.split_s.unwrap_or(1) != 1 {
                return Err("a split GEMM (fit splitk fits those)".into());
            }
            match row.fast_accum {
                Some(true) => {}
                Some(false) => slow = true,
                None => return Err("use_fast_accum not recorded".into()),
            }
            if fa.any_nonfinite(&row.a) || fb.any_nonfinite(&row.b) {
                return Err("non-finite operand codes (§3.7 replaces them)".into());
            }
            None
        }
        Op::ScaledMm => {
            scales = Some(mx_scales(row, m, n, k)?);
            None
        }
    };
    if c.is_some_and(|c| c.len() != 4 * outputs) {
        return Err("c does not match the shape".into());
    }
    let word = |v: &[u8], o: usize| u32::from_le_bytes([v[4 * o], v[4 * o + 1], v[4 * o + 2], v[4 * o + 3]]);
    let mut out = Vec::with_capacity(outputs);
    for t in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let o = (t * m + i) * n + j;
                out.push(Sample {
                    fa,
                    fb,
                    a: row.a[(t * m + i) * k..(t * m + i + 1) * k].to_vec(),
                    b: row.b[(t * n + j) * k..(t * n + j + 1) * k].to_vec(),
                    c: c.map_or(0.0, |c| f32::from_bits(word(c, o))),
                    want: word(bits, o),
                    slow,
                    accumulator: c.is_none(),
                    row: index,
                    scales: scales.as_ref().map(|(sa, sb)| {
                        let kb = k.div_ceil(32);
                        (sa[i * kb..(i + 1) * kb].to_vec(), sb[j * kb..(j + 1) * kb].to_vec())
                    }),
                });
            }
        }
    }
    Ok(out)
}

/// The e8m0 scale codes (A's M x ceil(K / 32), B's N x ceil(K / 32), row-major) of an MXFP8 `scaled_mm` row whose
/// accumulators its output is: fp32 out, unsplit, standard layouts, no bias, out= or scale_result; else why not.
fn mx_scales(row: &Row, m: usize, n: usize, k: usize) -> Result<(Vec<u8>, Vec<u8>), String> {
    let call = row.call.as_ref().ok_or("a scaled_mm row without a call object")?;
    fn mx(s: Option<&ScaleSpec>) -> Option<&ScaleSpec> {
        s.filter(|s| s.scaling == Some(Scaling::BlockWise1x32) && s.dtype == "float8_e8m0fnu" && s.global.is_none())
    }
    let (Some(sa), Some(sb)) = (mx(call.scale_a.as_ref()), mx(call.scale_b.as_ref())) else {
        return Err(
            "a scaled_mm row without MXFP8 block scales (the fit reads those; split calls are fit splitk's)".into()
        );
    };
    let plain = |x: &mmaemu_datasets::MatSpec| x.layout == "std" && x.ld_pad == 0 && x.offset == 0;
    if !plain(&call.mat1) || !plain(&call.mat2) || call.bias.is_some() || call.out.is_some() {
        return Err("an MXFP8 row with other layouts, a bias or out= (the fit reads plain calls)".into());
    }
    if call.scale_result.is_some() || row.scale_result.is_some() || row.out_dtype.as_deref() != Some("float32") {
        return Err("an MXFP8 row with an epilogue (fp32 out without scale_result makes it its accumulators)".into());
    }
    if row.split_s.unwrap_or(1) != 1 {
        return Err("a split MXFP8 call (the model's MXFP8 GEMM is unsplit)".into());
    }
    // The shapes checked, their logical codes hold one per 32 of K for each row (checked before they are built).
    let kb = k.div_ceil(32) as i64;
    if sa.shape != [m as i64, kb] || sb.shape != [n as i64, kb] {
        return Err(format!("MXFP8 scales of shapes {:?} and {:?} for M, N, K = {m}, {n}, {k}", sa.shape, sb.shape));
    }
    Ok((sa.logical_bytes()?, sb.logical_bytes()?))
}

/// The lowest block exponent a chain meets without a floor: over its blocks (of `nfma` products, slow chunks
/// restarting them from +0), the largest exponent of a nonzero product, and with an early c also c's exponent
/// (at least −126, §2.2 step 3); blocks with neither are skipped (their result is the same under any floor). A floor
/// (min_exp) at or below it never takes part in a maximum of this chain. None when no block has a term.
pub(crate) fn floor_slack(chain: &Chain, s: &Sample, nfma: usize, early: bool, chunk: Option<usize>) -> Option<i32> {
    let (ta, tb) = (s.fa.table(), s.fb.table());
    let mut low: Option<i32> = None;
    let whole = s.a.len().max(1);
    let span = if s.slow { chunk.unwrap_or(whole).max(1) } else { whole };
    for (ca, cb) in s.a.chunks(span).zip(s.b.chunks(span)) {
        let mut acc = if s.slow { 0.0 } else { s.c };
        for (i, (ba, bb)) in ca.chunks(nfma).zip(cb.chunks(nfma)).enumerate() {
            // An MXFP8 block's products are scaled by its two e8m0 scales (§2.8 step 2); a NaN scale makes it NaN.
            let codes = s.scales.as_ref().map(|(sa, sb)| (sa[i], sb[i]));
            let x = mmaemu_model::block_scale::e8m0_exponent;
            let shift = match codes {
                None => Some(0),
                Some((ca, cb)) => x(ca).zip(x(cb)).map(|(p, q)| p + q),
            };
            let Some(shift) = shift else { break };
            let mut e: Option<i32> = None;
            for (&x, &y) in ba.iter().zip(bb) {
                let (dx, dy) = (ta[x as usize], tb[y as usize]);
                if dx.class == mmaemu_model::format::Class::Finite && dy.class == mmaemu_model::format::Class::Finite {
                    let ep = dx.exp as i32 + dy.exp as i32 + shift;
                    e = Some(e.map_or(ep, |v| v.max(ep)));
                }
            }
            if early && acc != 0.0 && acc.is_finite() {
                let ec = c_exponent(acc);
                e = Some(e.map_or(ec, |v| v.max(ec)));
            }
            if let Some(e) = e {
                low = Some(low.map_or(e, |v| v.min(e)));
            }
            // A late c takes part in no maximum: the accumulator is needed with an early one alone.
            if early {
                acc = match codes {
                    Some((ca, cb)) => chain.block_scaled(ba, bb, ca, cb, acc),
                    None => chain.block(ba, bb, acc),
                };
            }
        }
    }
    low
}

/// floor(log2|c|), at least −126 (fp32 holds a subnormal c at −126).
fn c_exponent(c: f32) -> i32 {
    let biased = ((c.to_bits() >> 23) & 0xFF) as i32;
    if biased == 0 {
        -126
    } else {
        biased - 127
    }
}

#[cfg(test)]
mod tests {
    use super::Sample;
    use mmaemu_model::Format;

    fn mma(c: f32) -> Sample {
        let (a, b) = (vec![0x38], vec![0x38]);
        Sample {
            fa: Format::E4m3,
            fb: Format::E4m3,
            a,
            b,
            c,
            want: 0,
            slow: false,
            accumulator: false,
            row: 0,
            scales: None,
        }
    }

    /// On the grid 2^−126: zero and the multiples of 2^−126 (normal values whose lowest set bit is that high); off it:
    /// subnormals, normals with a lower bit, infinities and NaN.
    #[test]
    fn on_grid_is_a_multiple_of_two_to_the_minus_126() {
        let two = |e: i32| (e as f32).exp2();
        for c in [0.0, -0.0, two(-126), -two(-126), 3.0 * two(-126), two(-100) * (1.0 + two(-23)), 1.5, f32::MAX] {
            assert!(mma(c).on_grid(), "{c:e}");
        }
        for c in
            [two(-127), 1.5 * two(-126), two(-110) * (1.0 + two(-23)), f32::INFINITY, f32::NAN, f32::MIN_POSITIVE / 2.0]
        {
            assert!(!mma(c).on_grid(), "{c:e}");
        }
        assert!(Sample { accumulator: true, ..mma(two(-140)) }.on_grid());
    }
}
