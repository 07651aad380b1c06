//! Designed calls whose every product `fit preset`'s designer chooses (input class `codes`): the blocks where a block
//! result's fraction (frac_out) and rounding show, and the sums just past a midpoint where the term fraction and the
//! c entry show at one product per block, which no generator class makes.

use super::design::{fast_call, CALL_MN, SEED};
use mmaemu_datasets::inputs::{hex, mix, DataClass, InputSpec};
use mmaemu_model::{Format, SplitKey};

/// A seeded stream of draws below n, from the input generator's SplitMix64 (`mix`, docs/recording-format.md) rather
/// than `rand`: the designed calls are recorded and refitted, so they are fixed by the project's own generator contract,
/// not by a crate's release.
fn draws(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |n: u64| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(state) % n
    }
}

/// The designs' fast fp32 16 x 16 x k call over the given operands ([16, k] each).
pub(super) fn call(k: usize, fa: Format, fb: Format, stream: u64, a: &[u8], b: &[u8]) -> (SplitKey, InputSpec) {
    fast_call(k, fa, fb, stream, DataClass::Codes { a: hex(a), b: hex(b) })
}

/// Candidate calls whose every product the designer chooses (class `codes`) for blocks of `nfma` products: rows of
/// A whose blocks hold same-sign values of one binade (all of them, or all but one or two, which lie 3 to 14 binades
/// below), or values of any binade, times rows of B of ones, of powers of two and of large significands, each constant
/// over a block (every output of such a call is probed). Such a
/// block sums to up to `nfma` times its binade and keeps bits at its grid: where the block result's fraction
/// (frac_out) and rounding show, and where no generator class goes (its products in one binade and of one sign).
pub(super) fn stacks(nfma: usize) -> Vec<(SplitKey, InputSpec)> {
    let mut below = draws(SEED ^ nfma as u64);
    let mut out = Vec::new();
    for blocks in 1..=3usize {
        // A multiple of 16 (torch refuses other K for FP8) holding `blocks` blocks or more.
        let k = (blocks * nfma).next_multiple_of(16);
        let lengths: Vec<usize> = (0..k).step_by(nfma).map(|s| nfma.min(k - s)).collect();
        for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3)] {
            for stream in 0..4u64 {
                let mut a = Vec::with_capacity(CALL_MN * k);
                for _ in 0..CALL_MN {
                    for &len in &lengths {
                        let top = below(9) as i32 - 2;
                        let sign = if below(2) == 0 { 1.0 } else { -1.0 };
                        let small = if below(4) == 0 { len } else { (below(3) as usize).min(len) };
                        // The positions of the small values: the first `small` of a shuffle.
                        let mut at: Vec<usize> = (0..len).collect();
                        for i in 0..small {
                            at.swap(i, i + below((len - i) as u64) as usize);
                        }
                        let mut row = vec![0u8; len];
                        for (n, &i) in at.iter().enumerate() {
                            let (e, m) = match n < small {
                                true => (top - 3 - below(12) as i32, below(8)),
                                false => (top, 4 + below(4)),
                            };
                            let s = if n < small && below(2) == 0 { -sign } else { sign };
                            row[i] = fa.from_f32_saturating(s * (1.0 + m as f32 / 8.0) * (e as f32).exp2());
                        }
                        a.extend(row);
                    }
                }
                let mut b = Vec::with_capacity(CALL_MN * k);
                for j in 0..CALL_MN {
                    for &len in &lengths {
                        // Ones; a power of two per block; a significand near the largest per block, so that a
                        // block's products reach 1.875² of their binade.
                        let x = match j {
                            0..4 => 1.0,
                            4..10 => (below(5) as f32 - 2.0).exp2(),
                            _ => (1.0 + (5 + below(3)) as f32 / 8.0) * (below(3) as f32 - 1.0).exp2(),
                        };
                        b.extend(std::iter::repeat_n(fb.from_f32_saturating(x), len));
                    }
                }
                out.push(call(k, fa, fb, stream, &a, &b));
            }
        }
    }
    out
}

/// Calls whose diagonal outputs (row i of A with row i of B) are chains built to reach a block's largest sum: blocks of
/// products σ 2^T, σ 2^(T-w), σ 2^(T-2w), ... (σ the largest significand of A's format, w its bits), whose sum c just
/// below 2^(T+1) has a one at every place down to its grid (zero products past the format's range), and as the last
/// block of K `nfma` products σ_a σ_b 2^T of c's sign (the largest FP8 significands' product), whose sum with c is the largest a block of
/// them can hold, its lowest grid bit set (a block after it would re-align that sum to its own grid under an early c).
/// T varies with the row (near 1 on even rows, 2^6 to 2^8 on odd ones, so that the staircase's ones reach 24 places below
/// it before its products leave the FP8 range), the sign with the call.
pub(super) fn staircases(nfma: usize) -> Vec<(SplitKey, InputSpec)> {
    let mut below = draws(SEED ^ 0x57 ^ nfma as u64);
    let largest = |f: Format| if f == Format::E4m3 { 1.875f32 } else { 1.75 };
    let mut out = Vec::new();
    for blocks in 2..=3usize {
        let k = (blocks * nfma).next_multiple_of(16);
        for (fa, fb) in [(Format::E4m3, Format::E4m3), (Format::E5m2, Format::E4m3)] {
            let w = if fa == Format::E4m3 { 4 } else { 3 };
            for stream in 0..2u64 {
                let sign = if stream % 2 == 0 { 1.0f32 } else { -1.0 };
                let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
                for i in 0..CALL_MN {
                    // The top binade: near 1, or high enough that the staircase's ones reach 24 places below it
                    // before its products leave the FP8 range (about 2^-18).
                    let t = if i % 2 == 0 { -(below(3) as i32) } else { 6 + below(3) as i32 };
                    // A product sa · sb · 2^x as a · b, both in range: a takes what it can from 2^7 down to 2^-6.
                    let mut put = |at: usize, sa: f32, sb: f32, x: i32| {
                        let xa = x.clamp(-6, 7);
                        a[i * k + at] = fa.from_f32_saturating(sign * sa * (xa as f32).exp2());
                        b[i * k + at] = fb.from_f32_saturating(sb * ((x - xa) as f32).exp2());
                    };
                    // The staircase goes on over the blocks before the last (c sets their exponent and grid).
                    for at in 0..k - nfma {
                        put(at, largest(fa), 1.0, t - w * at as i32);
                    }
                    // The last block of K: a block after it would re-align the sum to its own grid (an early c).
                    for at in k - nfma..k {
                        put(at, largest(fa), largest(fb), t);
                    }
                }
                out.push(call(k, fa, fb, stream, &a, &b));
            }
        }
    }
    out
}

/// Calls whose diagonal outputs (row i of A with row i of B) are one block of `nfma` − 1 products of the largest
/// e4m3 significands, 1.875² 2^T, and a tail product 1.5 · 2^(T − G), G = 12 + i on row i (T = 10, the sign the
/// call's). The block sum passes 24 bits once those products reach 2^(24 − frac) of its grid, and then its lowest
/// kept bit lies 24 places below its leading one: on the row whose tail puts its two ones at that bit and the highest
/// dropped one, nearest even rounds the tie up and truncation drops it, and frac_out 22 drops both. Sums that wide come
/// only from many products of the largest significands, which no generator class stacks, late c or early.
pub(super) fn tops(nfma: usize) -> Vec<(SplitKey, InputSpec)> {
    if nfma < 2 {
        return Vec::new();
    }
    let f = Format::E4m3;
    let k = nfma.next_multiple_of(16);
    let mut out = Vec::new();
    for stream in 0..2u64 {
        let sign = if stream == 0 { 1.0f32 } else { -1.0 };
        let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
        for i in 0..CALL_MN {
            let row = i * k;
            for at in row..row + nfma - 1 {
                (a[at], b[at]) = (f.from_f32_saturating(sign * 1.875 * 32.0), f.from_f32_saturating(1.875 * 32.0));
            }
            // 1.5 · 2^x as a · b: a down to 3 · 2^−9 (a subnormal), b the rest (at least 2^−9).
            let x = 10 - 12 - i as i32;
            let xa = x.max(-8);
            let at = row + nfma - 1;
            a[at] = f.from_f32_saturating(sign * 1.5 * (xa as f32).exp2());
            b[at] = f.from_f32_saturating(((x - xa) as f32).exp2());
        }
        out.push(call(k, f, f, stream, &a, &b));
    }
    out
}

/// Calls whose diagonal outputs (row i of A with row i of B) are chains of three one-product blocks after all-zero
/// ones: σ 2^x, σ 2^(x−j), then σ 2^(x+24) (x from −1 to −4, σ the sign of the call). The accumulator c = σ 2^x (1 +
/// 2^−j) meets a product whose last fp32 place is 2^(x+1): c's leading bit is half that place, so the exact sum lies
/// just past a midpoint by c's low bit, which an early c drops on the grid of frac < 24 + j. A late c, or a frac that
/// keeps it, rounds away from the product; a narrower early grid lands on the midpoint and rounds to even, the
/// product. j = i + 2 on row i tells every frac from 24 to 40 apart, and each of them from a late c, at one product
/// per block, where no generator class goes.
pub(super) fn ties(nfma: usize) -> Vec<(SplitKey, InputSpec)> {
    let (fa, fb) = (Format::E4m3, Format::E5m2);
    let k = (3 * nfma).next_multiple_of(16);
    let start = k - 3 * nfma;
    let mut out = Vec::new();
    for stream in 0..2u64 {
        let sign = if stream == 0 { 1.0f32 } else { -1.0 };
        let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
        for i in 0..CALL_MN {
            let x = -1 - (i % 4) as i32;
            let j = i as i32 + 2;
            for (n, y) in [x, x - j, x + 24].into_iter().enumerate() {
                // σ 2^y as a · b: a takes what it can of y (e4m3 down to its least subnormal, 2^−9), b the rest.
                let ya = y.clamp(-9, 8);
                let at = i * k + start + n * nfma;
                a[at] = fa.from_f32_saturating(sign * (ya as f32).exp2());
                b[at] = fb.from_f32_saturating(((y - ya) as f32).exp2());
            }
        }
        out.push(call(k, fa, fb, stream, &a, &b));
    }
    out
}

/// Calls of one 32-product block per output holding products of widely apart binades and zeros: row i of A (e4m3) 1 to
/// 29 equal large values of random significand, zeros, a small one of either sign and at times a third, row j of B
/// (e5m2) the powers of two that spread them (2^12..2^15 on its first 30 places, 2^-16..2^4, any). Under block scales
/// that put the large products just below a floor, the floor sets the grid (a zero product is a zero term,
/// docs/reference.md §2.8 step 4) and decides whether the small one, 4 to 48 binades lower (a few binades below a
/// small frac's grid, or far below a wide one's), is kept: the borrow it makes in a truncation, or the side of a
/// midpoint it puts the sum on, shows in the fp32 result. Both format orders.
pub(super) fn spreads() -> Vec<(SplitKey, InputSpec)> {
    let k = 32;
    let mut out = Vec::new();
    for (fa, fb) in [(Format::E4m3, Format::E5m2), (Format::E5m2, Format::E4m3)] {
        for stream in 0..4u64 {
            let mut draw = draws(SEED ^ 0x5EED ^ stream ^ ((fa == Format::E5m2) as u64) << 8);
            let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
            let pow = |f: Format, e: i64, m: u64, neg: bool| {
                let v = (1.0 + m as f32 / 8.0) * (e as f32).exp2();
                f.from_f32_saturating(if neg { -v } else { v })
            };
            for r in 0..CALL_MN {
                // n equal large products (their sum keeps few bits: a block result of few fraction bits, or one
                // truncated to fp32's 2^-126 - frac_out, holds it exactly) at the head of A's row against B's large
                // values, then the small one and at times a third at the row's two last places, on every output.
                let n = [1, 1, 2, 4, 8, 16, 29][draw(7) as usize];
                let row = r * k;
                a[row..row + n].fill(pow(fa, 4 + draw(5) as i64, draw(8), false));
                a[row + 30] = pow(fa, -9 + draw(18) as i64, 0, draw(2) == 0);
                if draw(2) == 0 {
                    a[row + 31] = pow(fa, -9 + draw(18) as i64, draw(8), draw(2) == 0);
                }
                b[row..row + 30].fill(pow(fb, 12 + draw(4) as i64, 0, false));
                b[row + 30] = pow(fb, -16 + draw(21) as i64, 0, false);
                b[row + 31] = pow(fb, -16 + draw(32) as i64, 0, false);
            }
            out.push(call(k, fa, fb, stream, &a, &b));
        }
    }
    out
}

/// A slow call (K = `k`) whose diagonal outputs each test one chunk length's cut: row i puts 2^12 (2^6 · 2^6) at
/// `lengths[i]` − 1 and 2^−12 (2^−6 · 2^−6, both e4m3 normals, so exact on any block grid of their own) at `lengths[i]`
/// and one block later, zeros elsewhere. Under a chunk of `lengths[i]` the two small products are summed alone,
/// exactly, to one fp32 unit of 2^12, which the chunk sum keeps; under a length that does not cut there, each meets
/// 2^12 on its own as half a unit (a tie, kept at the even 2^12) or below an early c's grid, and is lost. The first 16
/// lengths longer than a block (a shorter one cuts every block, which any data shows) whose three places lie inside K
/// are tested.
pub(super) fn cuts(nfma: usize, lengths: &[u32], k: usize) -> Option<(SplitKey, InputSpec)> {
    let f = Format::E4m3;
    let (big, least) = (f.from_f32_saturating(64.0), f.from_f32_saturating((-6f32).exp2()));
    let tested: Vec<usize> =
        lengths.iter().map(|&l| l as usize).filter(|&l| l > nfma && l + nfma < k).take(CALL_MN).collect();
    if tested.is_empty() {
        return None;
    }
    let (mut a, mut b) = (vec![0u8; CALL_MN * k], vec![0u8; CALL_MN * k]);
    for (i, &l) in tested.iter().enumerate() {
        let row = i * k;
        (a[row + l - 1], b[row + l - 1]) = (big, big);
        for at in [l, l + nfma] {
            (a[row + at], b[row + at]) = (least, least);
        }
    }
    let (mut key, inputs) = call(k, f, f, 0, &a, &b);
    key.fast = false;
    Some((key, inputs))
}

/// The phase d between the rows of a [`boundaries`] call: a quarter of a block, at least 1.
pub(super) fn boundary_phase(nfma: usize) -> usize {
    (nfma / 4).max(1)
}

/// The margin m of a [`boundaries`] call at `offset`: it places every length from w to 2w − m.
pub(super) fn boundary_margin(nfma: usize, offset: usize) -> usize {
    2 * nfma + 15 * boundary_phase(nfma) + offset
}

/// A slow call whose outputs place the first chunk boundary to a quarter of a block (d = nfma / 4, at least 1), for
/// every length from `shortest` to `longest` when longest ≤ 2 shortest − 2 nfma − 15 d − `offset`. Every row of A is
/// one pattern delayed by i · d (a `codes` operand of K + d bytes, so K may pass 4096): 2^12 at column i · d, then
/// 2^−12 once a block, `offset` + m · nfma columns later (m ≥ 1), up to two blocks past `longest` and short of the
/// second boundary, 2 shortest; B is ones (e5m2 × e4m3). Each small product is a block of its own. In the chunk that
/// holds 2^12, each meets it as half an fp32 unit, a tie kept at the even 2^12, and is lost; the next chunk sums its
/// own exactly and adds them at once, n halves rounded to even. So row i counts the small products past the first
/// boundary after i · d (one count in two shows through the rounding, and the rows one block apart count one more).
pub(super) fn boundaries(nfma: usize, shortest: usize, longest: usize, offset: usize) -> Option<(SplitKey, InputSpec)> {
    let d = boundary_phase(nfma);
    // Rows 1 to 15 read their first i · d columns from the pattern's end: those 15 d bytes stay zero.
    let k = (longest + offset + 2 * nfma + 14 * d + 1).next_multiple_of(16);
    let (len, end) = (k + d, (k - 14 * d).min((2 * shortest).saturating_sub(15 * d)));
    if len > mmaemu_datasets::inputs::MAX_CODES || end <= offset + nfma {
        return None;
    }
    let (fa, fb) = (Format::E5m2, Format::E4m3);
    let mut a = vec![0u8; len];
    a[0] = fa.from_f32_saturating(4096.0);
    for at in (offset + nfma..end).step_by(nfma) {
        a[at] = fa.from_f32_saturating((-12f32).exp2());
    }
    let (mut key, inputs) = call(k, fa, fb, 0, &a, &[fb.from_f32_saturating(1.0)]);
    key.fast = false;
    Some((key, inputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_datasets::inputs::{generate, Operand};
    use mmaemu_model::accumulate::{accumulate, Operands};
    use mmaemu_model::{BlockRounding, CEntry, Preset, PresetSpec, SplitK};

    /// A random core of the fit's whole space (any nfma, frac and block result, either c entry).
    struct Core {
        nfma: usize,
        frac: u32,
        frac_out: u32,
        rounding: BlockRounding,
        c_entry: CEntry,
    }

    impl Core {
        fn draw(draw: &mut impl FnMut(u64) -> u64) -> Core {
            let nfma = 1usize << draw(9);
            let frac = 1 + draw(40) as u32;
            let (frac_out, rounding) = match draw(3) {
                0 => (23, BlockRounding::NearestEven),
                _ => (1 + draw(23) as u32, BlockRounding::Truncate),
            };
            let c_entry = if draw(2) == 0 { CEntry::Early } else { CEntry::Late };
            Core { nfma, frac, frac_out, rounding, c_entry }
        }

        /// The outputs of an unsplit slow call through the model's plan (§3.1), chunks of `chunk`.
        fn slow(&self, ops: &Operands, chunk: usize) -> Vec<u32> {
            let Core { nfma, frac, frac_out, rounding, c_entry } = *self;
            let spec = PresetSpec::custom("x", nfma as u32, frac, frac_out, -126, c_entry, Some(chunk as u32))
                .with_rounding(rounding);
            let out = accumulate(&Preset::custom(spec).unwrap(), ops, false, SplitK::NONE).unwrap();
            out.iter().map(|x| x.to_bits()).collect()
        }
    }

    impl std::fmt::Display for Core {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let Core { nfma, frac, frac_out, rounding, c_entry } = self;
            write!(f, "nfma {nfma} frac {frac} {rounding:?}/{frac_out} {c_entry:?}")
        }
    }

    /// With an early c, the staircases tell apart the widest truncation that still rounds a block (one bit short of
    /// `exact_frac_out`) from the one that never does, for every frac up to 23 and block sizes whose largest sum
    /// reaches the bound's top binade.
    #[test]
    fn a_staircase_reaches_the_widest_block_sum() {
        for nfma in [1usize, 2, 8, 16, 32, 64] {
            for frac in 8..=23u32 {
                let exact = crate::preset::space::exact_frac_out(nfma as u32, frac, CEntry::Early);
                if exact > 23 {
                    continue;
                }
                let calls = staircases(nfma);
                let differs = calls.iter().any(|(key, inputs)| {
                    let a = generate(inputs, Operand::A, key.fa.name(), CALL_MN, key.k).unwrap();
                    let b = generate(inputs, Operand::B, key.fb.name(), CALL_MN, key.k).unwrap();
                    let ops = Operands { fa: key.fa, fb: key.fb, a: &a, b: &b, m: CALL_MN, n: CALL_MN, k: key.k };
                    let run = |frac_out: u32| {
                        let spec = PresetSpec::custom("x", nfma as u32, frac, frac_out, -133, CEntry::Early, None)
                            .with_rounding(BlockRounding::Truncate);
                        accumulate(&Preset::custom(spec).unwrap(), &ops, true, SplitK::NONE).unwrap()
                    };
                    run(exact - 1).iter().zip(run(exact)).any(|(x, y)| x.to_bits() != y.to_bits())
                });
                assert!(differs, "nfma {nfma} frac {frac}: truncate/{} and /{exact}", exact - 1);
            }
        }
    }

    /// For random blocks whose largest sums pass 24 bits, nearest even and truncation to 23 bits (and truncation to 22
    /// and to 23 bits) give another output on some diagonal output of [`tops`], late c and early, whatever the frac.
    #[test]
    fn a_top_sum_tells_the_block_rounding() {
        let mut draw = draws(7);
        let mut tried = 0;
        while tried < 60 {
            let nfma = 2usize << draw(8);
            let frac = 1 + draw(40) as u32;
            // The largest sum of nfma − 1 such products, in units of the grid, must pass 24 bits.
            if ((nfma - 1) as f64 * 1.875f64.powi(2)).log2() + (frac as f64) < 24.0 {
                continue;
            }
            tried += 1;
            let c_entry = if draw(2) == 0 { CEntry::Early } else { CEntry::Late };
            for (key, inputs) in tops(nfma) {
                let a = generate(&inputs, Operand::A, "e4m3", CALL_MN, key.k).unwrap();
                let b = generate(&inputs, Operand::B, "e4m3", CALL_MN, key.k).unwrap();
                let ops = Operands { fa: key.fa, fb: key.fb, a: &a, b: &b, m: CALL_MN, n: CALL_MN, k: key.k };
                let run = |frac_out: u32, rounding: BlockRounding| {
                    let spec = PresetSpec::custom("x", nfma as u32, frac, frac_out, -126, c_entry, None)
                        .with_rounding(rounding);
                    let out = accumulate(&Preset::custom(spec).unwrap(), &ops, true, SplitK::NONE).unwrap();
                    (0..CALL_MN).map(|i| out[i * CALL_MN + i].to_bits()).collect::<Vec<u32>>()
                };
                let truncated = run(23, BlockRounding::Truncate);
                let why = format!("nfma {nfma} frac {frac} {c_entry:?}");
                assert_ne!(run(23, BlockRounding::NearestEven), truncated, "{why}: nearest even");
                assert_ne!(run(22, BlockRounding::Truncate), truncated, "{why}: frac_out 22");
            }
        }
    }

    /// Two lengths a quarter of a block apart (at least 1) or more, in a window that [`boundaries`] covers, give other
    /// outputs on it, for random cores of the whole space and lengths up to the fit's reach, through the model's slow
    /// plan (§3.1): a late c, or an early c whose term and block-result bits hold the count of a chunk's small products.
    #[test]
    fn a_boundary_call_places_the_first_cut() {
        let mut draw = draws(43);
        let mut tried = 0;
        while tried < 200 {
            let core = Core::draw(&mut draw);
            let nfma = core.nfma;
            let d = boundary_phase(nfma);
            let offset = draw(d as u64) as usize;
            let span = if draw(4) == 0 { 8192 } else { 1024 };
            // The first boundary lies past every row's first small product.
            let shortest = 16 * d + nfma + offset + draw(span) as usize;
            let Some(longest) = (2 * shortest).checked_sub(boundary_margin(nfma, offset)) else { continue };
            if longest < shortest + d {
                continue;
            }
            let l1 = shortest + draw((longest - shortest - d + 1) as u64) as usize;
            let l2 = l1 + d + draw((longest - l1 - d + 1) as u64) as usize;
            let Some((key, inputs)) = boundaries(nfma, shortest, longest, offset) else { continue };
            // An early c sums a chunk's small products on frac bits and keeps frac_out + 1 of the sum: past that
            // many bits, the count saturates.
            if core.c_entry == CEntry::Early && (key.k / nfma) as u64 >= 1 << core.frac.min(core.frac_out + 1) {
                continue;
            }
            tried += 1;
            let a = generate(&inputs, Operand::A, key.fa.name(), CALL_MN, key.k).unwrap();
            let b = generate(&inputs, Operand::B, key.fb.name(), CALL_MN, key.k).unwrap();
            // One column: B's rows are equal.
            let ops = Operands { fa: key.fa, fb: key.fb, a: &a, b: &b[..key.k], m: CALL_MN, n: 1, k: key.k };
            let why = format!("{core}: {l1} against {l2} (from {shortest} to {longest}, K {}, offset {offset})", key.k);
            assert_ne!(core.slow(&ops, l1), core.slow(&ops, l2), "{why}");
        }
    }

    /// Every tested length's cut changes its row's output against one chunk and against a longer length that cuts
    /// after its second small product, for random cores of the whole space, through the model's slow plan (§3.1).
    #[test]
    fn a_cut_shows_on_its_row_for_every_core() {
        let mut draw = draws(42);
        for _ in 0..200 {
            let core = Core::draw(&mut draw);
            let nfma = core.nfma;
            let lengths: Vec<u32> = (0..4).map(|_| (nfma as u64 + 1 + draw(600)) as u32).collect();
            let k = (*lengths.iter().max().unwrap() as usize + 2 * nfma + 40).next_multiple_of(16);
            let (key, inputs) = cuts(nfma, &lengths, k).unwrap();
            let a = generate(&inputs, Operand::A, "e4m3", CALL_MN, k).unwrap();
            let b = generate(&inputs, Operand::B, "e4m3", CALL_MN, k).unwrap();
            let ops = Operands { fa: key.fa, fb: key.fb, a: &a, b: &b, m: CALL_MN, n: CALL_MN, k };
            for (i, &l) in lengths.iter().enumerate() {
                let l = l as usize;
                let diagonal = |out: Vec<u32>| out[i * CALL_MN + i];
                let at = diagonal(core.slow(&ops, l));
                for other in [k, l + nfma + 1] {
                    assert_ne!(at, diagonal(core.slow(&ops, other)), "{core}: {l} against {other}");
                }
            }
        }
    }
}
