//! The AVX-512 and AVX2 panel steps and the planes against the portable panel step and the decoded codes.

use super::*;

/// A panel's piece decoded in place equals the same codes moved into position-major order and decoded by
/// `Lut::decode_magnitudes`, bit for bit, and reports a non-finite code where there is one: both formats, all
/// 256 codes (non-finite ones and both zeros included) in the first piece, random codes after it and finite
/// ones only in the last, pieces of 16, 32 and 48 positions at an offset into rows of odd length.
#[test]
fn panel_piece_equals_the_decoded_codes() {
    if !avx512() || !crate::driver::vbmi() {
        eprintln!("this CPU has no AVX-512 VBMI: the decoding in place is not run");
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xDEC0DE);
    for f in [Format::E4m3, Format::E5m2] {
        let lb = Lut::new(f);
        for (b, (k, k0, len), pc) in pieces_in_place(&mut rng, f) {
            let (mut wm, mut ws, mut we) = (vec![0f32; len * PANEL], vec![0f32; len * SIDED], vec![0i8; len * PANEL]);
            lb.decode_magnitudes::<PANEL>(&pc, &mut wm, &mut ws, &mut we);
            let (mut m, mut s, mut e) = (vec![1f32; len * PANEL], vec![1f32; len * SIDED], vec![1i8; len * PANEL]);
            let seen = unsafe { panel_piece(&b, (k, k0, len), &lb, (&mut m, &mut s, &mut e)) };
            assert_eq!(seen, f.any_nonfinite(&pc), "{f:?}, {len} positions: the non-finite report");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(e, we, "{f:?}, {len} positions: exponents");
            assert_eq!(bits(&m), bits(&wm), "{f:?}, {len} positions: magnitudes");
            assert_eq!(bits(&s), bits(&ws), "{f:?}, {len} positions: magnitudes by sign");
        }
    }
}

/// A panel piece decoded for both fused panel steps: magnitudes, magnitudes by sign, values and exponents.
struct Planes {
    pm: Vec<f32>,
    ps: Vec<f32>,
    pv: Vec<f32>,
    pe: Vec<i8>,
}

/// A fused panel step over rows of A (codes, stride, blocks), A's table, the piece, accumulators and chunk sums.
/// Safe to call only on a CPU with the step's features: the test lists a step only there.
type Step = unsafe fn((&[u8], usize, usize), &Lut, &Planes, &mut [f32], Option<&mut [f32]>, &Params);

/// The fused panel steps equal the portable panel step, bit for bit: the AVX-512 one and the AVX2 one (each where
/// the CPU runs it), both formats of A and B, blocks of 16 and 32, rows of random finite codes (a tenth +0) against
/// a panel of random finite codes (a tenth -0), five or six rows (pairs and a single row) of six blocks each, so
/// that c grows, changes sign and enters the block maximum, and a row of zeros in some rounds; rows read in place
/// with a stride, and accumulators that start from earlier pieces' values. Each step leaves the calling thread's
/// MXCSR as it was, from rounding down and toward zero too; there the AVX2 step gives the same results.
#[test]
fn fused_panel_steps_equal_the_panel_step() {
    let mut steps: Vec<(&str, Step, bool)> = Vec::new();
    if avx512() {
        // SAFETY (both closures): a `Step`'s caller holds the CPU's features, as listed here.
        steps.push((
            "avx512",
            |(a, s, n), la, x, c, e, p| unsafe { panel_blocks(a, s, n, la, &x.pm, &x.ps, &x.pe, c, e, p) },
            false,
        ));
    }
    if crate::SimdLevel::by_name("avx2").is_some() {
        steps.push((
            "avx2",
            |(a, s, n), la, x, c, e, p| unsafe { panel_blocks_avx2(a, s, n, la, &x.pv, &x.pe, c, e, p) },
            true,
        ));
    } else {
        eprintln!("this CPU has no AVX2: the AVX2 panel step is not run");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_FA57);
    for preset in [Preset::ada(), Preset::hopper()] {
        let p = Params::new(&preset);
        assert!(p.biased);
        for (fa, fb) in PAIRS {
            let (la, lb) = (Lut::new(fa), Lut::new(fb));
            let finite = |f: Format, rng: &mut ChaCha8Rng, top: u8| loop {
                let c = rng.random_range(0..=top) | (rng.random::<u8>() & 0x80);
                if !f.is_nonfinite(c) {
                    break c;
                }
            };
            for round in 0..20 {
                let (rows, nblk) = (5 + round % 2, 6);
                let len = nblk * p.nfma;
                let stride = len + 3;
                // Narrower magnitudes every other round, so that the block maxima vary.
                let top = if round % 2 == 0 { 0x7F } else { 0x3F };
                let mut a: Vec<u8> = (0..rows * stride)
                    .map(|_| if rng.random_ratio(1, 10) { 0 } else { finite(fa, &mut rng, top) })
                    .collect();
                // Every fourth round, a first row of +0 codes: its terms are zeros of both signs.
                if round % 4 == 3 {
                    a[..len].fill(0);
                }
                let pc: Vec<u8> = (0..len * PANEL)
                    .map(|_| if rng.random_ratio(1, 10) { 0x80 } else { finite(fb, &mut rng, 0x7F) })
                    .collect();
                let (mut pv, mut pe) = (vec![0f32; len * PANEL], vec![0i8; len * PANEL]);
                lb.decode(&pc, &mut pv, &mut pe);
                let (mut pm, mut ps) = (vec![0f32; len * PANEL], vec![0f32; len * SIDED]);
                let mut pe2 = vec![0i8; len * PANEL];
                lb.decode_magnitudes::<PANEL>(&pc, &mut pm, &mut ps, &mut pe2);
                assert_eq!(pe, pe2);
                let planes = Planes { pm: pm.clone(), ps: ps.clone(), pv: pv.clone(), pe: pe2.clone() };
                // Accumulators from an earlier piece: results of the portable step over random codes.
                let mut want = vec![0f32; rows * PANEL];
                for (r, c) in want.chunks_exact_mut(PANEL).enumerate() {
                    let c: &mut [f32; PANEL] = c.try_into().unwrap();
                    if r % 2 == 1 {
                        crate::kernel::block_steps::<PANEL, f32, false, false, true>(
                            &a[r * stride..],
                            1,
                            &la,
                            &pv[PANEL * p.nfma..],
                            &pe[PANEL * p.nfma..],
                            c,
                            &p,
                        );
                    }
                }
                // The row of zeros starts from -0 and from the least negative subnormal, which truncate to zero.
                if round % 4 == 3 {
                    for (j, c) in want[..PANEL].iter_mut().enumerate() {
                        *c = if j % 2 == 0 { -f32::from_bits(1) } else { -0.0 };
                    }
                }
                let got = want.clone();
                let want_from = want.clone();
                for (r, c) in want.chunks_exact_mut(PANEL).enumerate() {
                    let c: &mut [f32; PANEL] = c.try_into().unwrap();
                    crate::kernel::block_steps::<PANEL, f32, false, false, true>(
                        &a[r * stride..r * stride + len],
                        nblk,
                        &la,
                        &pv,
                        &pe,
                        c,
                        &p,
                    );
                }
                // The same piece ending the chains (slow accumulation's chunk) into sums of earlier chunks:
                // each sum gains the chain's result in fp32, and the chain restarts at +0.
                let earlier: Vec<f32> =
                    (0..rows * PANEL).map(|_| lb.v32[finite(fb, &mut rng, 0x7F) as usize] * 1024.0).collect();
                let csr = crate::fpstate::mxcsr() & !0x3F;
                for &(name, step, mode_free) in &steps {
                    let (mut got, mut ended, mut sums) = (got.clone(), got.clone(), earlier.clone());
                    // SAFETY: each step is listed only where the CPU has its features (above).
                    unsafe { step((&a, stride, nblk), &la, &planes, &mut got, None, &p) };
                    // SAFETY: as above.
                    unsafe { step((&a, stride, nblk), &la, &planes, &mut ended, Some(&mut sums), &p) };
                    // The same results, and the caller's MXCSR as it was after the step, from rounding down and
                    // from rounding toward zero.
                    for mode in [0x2000, 0x6000] {
                        let mut again = want_from.clone();
                        set_mxcsr(csr | mode);
                        // SAFETY: as above.
                        unsafe { step((&a, stride, nblk), &la, &planes, &mut again, None, &p) };
                        let after = crate::fpstate::mxcsr() & !0x3F;
                        set_mxcsr(csr);
                        assert_eq!(after, csr | mode, "{name}: the caller's MXCSR changed");
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        // The AVX2 step's operations are exact in every rounding mode; the AVX-512 one adds in
                        // the caller's, as the model's fp32 arithmetic does.
                        let same = bits(&again) == bits(&want);
                        assert!(same || !mode_free, "{name}: other results under MXCSR {:#x}", csr | mode);
                    }
                    for i in 0..want.len() {
                        // (Made only for a failure's message.)
                        let what = || {
                            let (r, j) = (i / PANEL, i % PANEL);
                            format!("{name} {} {fa} x {fb} round {round}: row {r} output {j}", preset.name())
                        };
                        assert_eq!(got[i].to_bits(), want[i].to_bits(), "{}", what());
                        assert_eq!(sums[i].to_bits(), (earlier[i] + want[i]).to_bits(), "{}: the chunk's sum", what());
                        assert_eq!(ended[i].to_bits(), 0, "{}: the chain does not restart at +0", what());
                    }
                }
            }
        }
    }
}
