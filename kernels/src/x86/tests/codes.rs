//! The AVX-512 decode steps over codes against the portable product-lane step over decoded rows.

use super::*;

/// The AVX-512 steps over codes (the fused one where the CPU has VBMI) equal the portable step over the decoded
/// rows, bit for bit, on every finite code of B's format, for blocks of 16 (ada) and 32 (hopper) and both formats
/// of A and B, the fused one also over chunks of 128 positions added in fp32; and they report a non-finite code
/// of B wherever one is planted (their results are then not used).
#[test]
fn codes_step_equals_the_decoded_step() {
    if !avx512() {
        return;
    }
    let vbmi = crate::driver::vbmi();
    if !vbmi {
        eprintln!("this CPU has no AVX-512 VBMI: the fused step over codes is not run");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_C0DE);
    for preset in [Preset::ada(), Preset::hopper()] {
        let p = Params::new(&preset);
        for (fa, fb) in PAIRS {
            let (la, lb) = (Lut::new(fa), Lut::new(fb));
            let finite: Vec<u8> = (0..=255u8).filter(|&c| !fb.is_nonfinite(c)).collect();
            for round in 0..50 {
                // Sixteen rows of B holding every finite code, 4 times each, shuffled, then padded with random
                // finite codes to 1024 positions; A's codes random and finite, a tenth of them zeros, the
                // magnitudes of a round drawn from a narrower range every other round so that the block maxima
                // vary. One round in four, B holds only zeros and subnormals: the block maximum is then a
                // subnormal's exponent (the format's lowest) plus A's largest, and the terms of A's small codes
                // fall below the grid.
                let len = 1024;
                let subnormal = round % 4 == 2;
                let (a, b) = code_operands(&mut rng, fa, fb, round, CODE_CHAINS);
                let (mut av, mut ae) = (vec![0f32; len], vec![0i8; len]);
                la.decode(&a, &mut av, &mut ae);
                let am: Vec<f32> = av.iter().map(|v| v.abs() * FUSED_A_SCALE).collect();
                let decoded: Vec<(Vec<f32>, Vec<i8>)> = b
                    .iter()
                    .map(|r| {
                        let (mut v, mut e) = (vec![0f32; len], vec![0i8; len]);
                        lb.decode(r, &mut v, &mut e);
                        (v, e)
                    })
                    .collect();
                let nb = preset.nfma();
                // A step over codes (`fused`: the fused one) on rows `b` at positions [o, o + nblk * nb): its
                // accumulators and report.
                let codes = |fused: bool, b: &[Vec<u8>], o: usize, nblk: usize| {
                    let bc: [&[u8]; CODE_CHAINS] = std::array::from_fn(|j| &b[j][o..]);
                    let mut got = [0f32; CODE_CHAINS];
                    // SAFETY: the AVX-512 level exists, so the CPU has the steps' features; the fused step runs
                    // only where VBMI was detected too.
                    let nonfinite = unsafe {
                        match (nb, fb) {
                            _ if fused => fused_blocks(
                                nb,
                                &am[o..],
                                &ae[o..],
                                &a[o..],
                                bc,
                                (nblk, 0),
                                (&mut got, &mut [0.0; CODE_CHAINS]),
                                &lb,
                                &p,
                            ),
                            (16, Format::E4m3) => {
                                product_blocks_codes::<16, true>(&av[o..], &ae[o..], bc, nblk, &mut got, &p)
                            }
                            (16, _) => product_blocks_codes::<16, false>(&av[o..], &ae[o..], bc, nblk, &mut got, &p),
                            (_, Format::E4m3) => {
                                product_blocks_codes::<32, true>(&av[o..], &ae[o..], bc, nblk, &mut got, &p)
                            }
                            _ => product_blocks_codes::<32, false>(&av[o..], &ae[o..], bc, nblk, &mut got, &p),
                        }
                    };
                    (got, nonfinite)
                };
                // The portable step over the decoded rows.
                let portable = |o: usize, nblk: usize| {
                    let bv: [&[f32]; CODE_CHAINS] = std::array::from_fn(|j| &decoded[j].0[o..]);
                    let be: [&[i8]; CODE_CHAINS] = std::array::from_fn(|j| &decoded[j].1[o..]);
                    let mut want = [0f32; CODE_CHAINS];
                    match nb {
                        16 => product_blocks::<16, CODE_CHAINS, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p),
                        _ => product_blocks::<32, CODE_CHAINS, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p),
                    }
                    want
                };
                // The whole rows; for B's subnormals also every block alone, whose maximum then comes from
                // its products (over whole rows the accumulator's exponent soon wins it).
                let blocks = if subnormal { len / nb } else { 0 };
                let runs = std::iter::once((0, len / nb)).chain((0..blocks).map(|blk| (blk * nb, 1)));
                let steps: &[bool] = if vbmi { &[false, true] } else { &[false] };
                for (o, nblk) in runs {
                    let want = portable(o, nblk);
                    for &fused in steps {
                        let (got, nonfinite) = codes(fused, &b, o, nblk);
                        let what =
                            format!("{} {fa} x {fb} round {round}, positions from {o}, fused {fused}", preset.name());
                        assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{what}");
                        assert!(!nonfinite, "{what}: a non-finite code reported among finite ones");
                    }
                }
                let want = portable(0, len / nb);
                assert!(want.iter().any(|&c| c != 0.0), "the chains are all zero: the test would show nothing");
                if vbmi {
                    // The fused step over chunks of 128 positions, each from +0, their results added in fp32:
                    // the portable step per chunk, added in order.
                    let restart = 128 / nb;
                    let mut want = [0f32; CODE_CHAINS];
                    for o in (0..len).step_by(128) {
                        let chunk = portable(o, restart);
                        for (w, x) in want.iter_mut().zip(chunk) {
                            *w += x;
                        }
                    }
                    let bc: [&[u8]; CODE_CHAINS] = std::array::from_fn(|j| &b[j][..]);
                    let (mut c, mut sum) = ([0f32; CODE_CHAINS], [0f32; CODE_CHAINS]);
                    let chains = (len / nb, restart);
                    // SAFETY: as above, where VBMI was detected.
                    unsafe { fused_blocks(nb, &am, &ae, &a, bc, chains, (&mut c, &mut sum), &lb, &p) };
                    let what = format!("{} {fa} x {fb} round {round}, chunks of 128", preset.name());
                    assert_eq!(sum.map(f32::to_bits), want.map(f32::to_bits), "{what}");
                    assert_eq!(c.map(f32::to_bits), [0; CODE_CHAINS], "{what}: the chains do not end at +0");
                }
                // One non-finite code (any of the format's, either sign) in one row at one position: a random
                // one, and one where A's code is a zero (the lowest operand exponent).
                let zero_at = a.iter().position(|&c| c & 0x7F == 0);
                for at in [Some(rng.random_range(0..len)), zero_at].into_iter().flatten() {
                    let mut planted = b.clone();
                    let row = rng.random_range(0..CODE_CHAINS);
                    let nonfinite: Vec<u8> = (0..=255u8).filter(|&c| fb.is_nonfinite(c)).collect();
                    planted[row][at] = nonfinite[rng.random_range(0..nonfinite.len())];
                    for &fused in steps {
                        let (_, told) = codes(fused, &planted, 0, len / nb);
                        assert!(
                            told,
                            "{} {fa} x {fb}, fused {fused}: the code {:#04x} at row {row}, position {at} (A's code \
                             {:#04x}), was not reported",
                            preset.name(),
                            planted[row][at],
                            a[at]
                        );
                    }
                }
                // B's largest finite magnitude in every row where A's exponent is its largest: the largest real
                // products (e5m2 by e5m2: exponent 30, the report's bound) are not reported.
                let top_at = (0..len).max_by_key(|&k| ae[k]).unwrap_or(0);
                let largest = finite.iter().copied().max_by_key(|&c| (lb.e[c as usize], c & 0x7F)).unwrap_or(0);
                let mut edge = b.clone();
                edge.iter_mut().for_each(|r| r[top_at] = largest);
                for &fused in steps {
                    let (_, told) = codes(fused, &edge, 0, len / nb);
                    assert!(!told, "{} {fa} x {fb}, fused {fused}: finite codes reported", preset.name());
                }
            }
        }
    }
}
