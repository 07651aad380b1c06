//! The AVX2 decode step over codes against the portable product-lane step over decoded rows, and the caller's
//! rounding mode after it.

use super::*;

/// Whether this CPU runs the AVX2 step over codes (said on stderr where it does not).
fn avx2_codes() -> bool {
    let there = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
    if !there {
        eprintln!("this CPU has no AVX2 and FMA: the step is not run");
    }
    there
}

/// The AVX2 step over codes on rows `b` at positions [o, o + nblk * nb), restarted every `restart` blocks (0:
/// never) into `ends`: its accumulators (from `c0`) and report.
#[allow(clippy::too_many_arguments)]
fn step(
    nb: usize,
    e4m3: bool,
    (am, ae, a): (&[f32], &[i8], &[u8]),
    b: &[Vec<u8>],
    chains: (usize, usize),
    c0: [f32; 8],
    ends: &mut [[f32; 8]],
    p: &Params,
) -> ([f32; 8], bool) {
    let bc: [&[u8]; CODE_CHAINS_AVX2] = std::array::from_fn(|j| &b[j][..]);
    let mut c = c0;
    let out = (&mut c, ends);
    // SAFETY: `avx2_codes` saw AVX2 and FMA.
    let seen = unsafe {
        match (nb, e4m3) {
            (16, true) => product_blocks_codes_avx2::<16, true>(am, ae, a, bc, chains, out, p),
            (16, false) => product_blocks_codes_avx2::<16, false>(am, ae, a, bc, chains, out, p),
            (_, true) => product_blocks_codes_avx2::<32, true>(am, ae, a, bc, chains, out, p),
            _ => product_blocks_codes_avx2::<32, false>(am, ae, a, bc, chains, out, p),
        }
    };
    (c, seen)
}

/// The AVX2 step over codes equals the portable step over the decoded rows, bit for bit: every finite code of B's
/// format four times in every row, blocks of 16 (ada) and 32 (hopper), all four format pairs, A's codes with a
/// tenth of zeros and narrower magnitudes every other round, B of only zeros and subnormals one round in four
/// (then every block alone too), and accumulators that start from an earlier piece's values of either sign. It
/// reports a non-finite code of B wherever one is planted, and not B's largest finite codes; and the calling
/// thread's MXCSR is the same after every call, from round to nearest and from rounding down.
#[test]
fn avx2_codes_step_equals_the_decoded_step() {
    if !avx2_codes() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xA7C2_C0DE);
    let csr = crate::fpstate::mxcsr() & !0x3F;
    for preset in [Preset::ada(), Preset::hopper()] {
        let p = Params::new(&preset);
        assert!(p.biased);
        let nb = preset.nfma();
        for (fa, fb) in PAIRS {
            let (la, lb) = (Lut::new(fa), Lut::new(fb));
            let e4m3 = fb == Format::E4m3;
            let finite: Vec<u8> = (0..=255u8).filter(|&c| !fb.is_nonfinite(c)).collect();
            for round in 0..40 {
                let len = 1024;
                let subnormal = round % 4 == 2;
                let (a, b) = code_operands(&mut rng, fa, fb, round, CODE_CHAINS_AVX2);
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
                let portable = |o: usize, nblk: usize, c0: [f32; 8]| {
                    let bv: [&[f32]; 8] = std::array::from_fn(|j| &decoded[j].0[o..]);
                    let be: [&[i8]; 8] = std::array::from_fn(|j| &decoded[j].1[o..]);
                    let mut want = c0;
                    match nb {
                        16 => product_blocks::<16, 8, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p),
                        _ => product_blocks::<32, 8, true>(&av[o..], &ae[o..], bv, be, nblk, &mut want, &p),
                    }
                    want
                };
                // Accumulators from an earlier piece (every other round): the portable step's results over
                // random finite codes, negated in half the chains.
                let c0: [f32; 8] = if round % 2 == 1 {
                    let mut c = portable(0, 2, [0.0; 8]);
                    c.iter_mut().step_by(2).for_each(|x| *x = -*x);
                    c
                } else {
                    [0.0; 8]
                };
                let blocks = if subnormal { len / nb } else { 0 };
                let runs = std::iter::once((0, len / nb)).chain((0..blocks).map(|blk| (blk * nb, 1)));
                for (o, nblk) in runs {
                    let want = portable(o, nblk, c0);
                    let rows: Vec<Vec<u8>> = b.iter().map(|r| r[o..].to_vec()).collect();
                    for rc in [0u32, 0x2000] {
                        set_mxcsr(csr | rc);
                        let (got, seen) =
                            step(nb, e4m3, (&am[o..], &ae[o..], &a[o..]), &rows, (nblk, 0), c0, &mut [], &p);
                        let after = crate::fpstate::mxcsr() & !0x3F;
                        set_mxcsr(csr);
                        let what = format!("{} {fa} x {fb} round {round}, positions from {o}", preset.name());
                        assert_eq!(after, csr | rc, "{what}: the caller's MXCSR changed");
                        if rc == 0 {
                            assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{what}");
                        }
                        assert!(!seen, "{what}: a non-finite code reported among finite ones");
                    }
                }
                let want = portable(0, len / nb, [0.0; 8]);
                assert!(want.iter().any(|&c| c != 0.0), "the chains are all zero: the test would show nothing");
                // Chains restarted every block and every 128 positions: each chunk's result is the portable step's
                // over that chunk from +0, stored in order, and the chains end at +0.
                for restart in [1, 128 / nb] {
                    let mut ends = vec![[f32::NAN; 8]; len / nb / restart];
                    let chains = (len / nb, restart);
                    let (c, seen) = step(nb, e4m3, (&am, &ae, &a), &b, chains, [0.0; 8], &mut ends, &p);
                    let what = format!("{} {fa} x {fb} round {round}, chunks of {restart} blocks", preset.name());
                    assert!(!seen, "{what}: a non-finite code reported among finite ones");
                    for (ch, end) in ends.iter().enumerate() {
                        let want = portable(ch * restart * nb, restart, [0.0; 8]);
                        assert_eq!(end.map(f32::to_bits), want.map(f32::to_bits), "{what}: chunk {ch}");
                    }
                    assert_eq!(c.map(f32::to_bits), [0; 8], "{what}: the chains do not end at +0");
                }
                // One non-finite code in one row at one position: a random one, and one where A's code is a zero.
                let zero_at = a.iter().position(|&c| c & 0x7F == 0);
                for at in [Some(rng.random_range(0..len)), zero_at].into_iter().flatten() {
                    let mut planted = b.clone();
                    let row = rng.random_range(0..CODE_CHAINS_AVX2);
                    let nonfinite: Vec<u8> = (0..=255u8).filter(|&c| fb.is_nonfinite(c)).collect();
                    planted[row][at] = nonfinite[rng.random_range(0..nonfinite.len())];
                    let (_, told) = step(nb, e4m3, (&am, &ae, &a), &planted, (len / nb, 0), [0.0; 8], &mut [], &p);
                    assert!(
                        told,
                        "{fa} x {fb}: the code {:#04x} at row {row}, position {at} was not reported",
                        planted[row][at]
                    );
                    assert_eq!(crate::fpstate::mxcsr() & !0x3F, csr, "the caller's MXCSR changed");
                }
                let top_at = (0..len).max_by_key(|&k| ae[k]).unwrap_or(0);
                let largest = finite.iter().copied().max_by_key(|&c| (lb.e[c as usize], c & 0x7F)).unwrap_or(0);
                let mut edge = b.clone();
                edge.iter_mut().for_each(|r| r[top_at] = largest);
                let (got, told) = step(nb, e4m3, (&am, &ae, &a), &edge, (len / nb, 0), [0.0; 8], &mut [], &p);
                assert!(!told, "{fa} x {fb}: finite codes reported");
                let mut dec = decoded.clone();
                for (r, d) in dec.iter_mut().enumerate() {
                    lb.decode(&edge[r], &mut d.0, &mut d.1);
                }
                let bv: [&[f32]; 8] = std::array::from_fn(|j| &dec[j].0[..]);
                let be: [&[i8]; 8] = std::array::from_fn(|j| &dec[j].1[..]);
                let mut want = [0f32; 8];
                match nb {
                    16 => product_blocks::<16, 8, true>(&av, &ae, bv, be, len / nb, &mut want, &p),
                    _ => product_blocks::<32, 8, true>(&av, &ae, bv, be, len / nb, &mut want, &p),
                }
                assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{fa} x {fb}: the largest products");
            }
        }
    }
}
