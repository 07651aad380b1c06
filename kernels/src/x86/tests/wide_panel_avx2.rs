//! The AVX2 wide panel step, its planes and its move of B's codes against the format tables, the portable move and
//! the portable panel step in f64 lanes.

use super::wide_panel::StepCase;
use super::*;
use crate::kernel::block_steps;

/// The lanes of the AVX2 panel.
const W: usize = WIDE_PANEL_AVX2;

/// Whether this CPU runs the AVX2 wide step (said on stderr where it does not).
fn avx2_fma() -> bool {
    let there = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
    if !there {
        eprintln!("this CPU has no AVX2 and FMA: the step is not run");
    }
    there
}

/// The 32 lanes from `first` of a position-major piece of [`PANEL`] lanes.
fn lanes_of(pc: &[u8], first: usize) -> Vec<u8> {
    pc.chunks_exact(PANEL).flat_map(|p| p[first..first + W].iter().copied()).collect()
}

/// The move into position-major order gives the codes of the portable move, for panels of 32 and 64 rows, and
/// writes nothing past the piece: both formats' pieces of 16, 32 and 48 positions at an offset into rows of odd
/// length.
#[test]
fn avx2_panel_positions_are_the_codes() {
    if !avx2_fma() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xA2_0C0D);
    for f in [Format::E4m3, Format::E5m2] {
        for (b, (k, k0, len), pc) in pieces_in_place(&mut rng, f) {
            let mut got = vec![0xA5u8; len * PANEL + 1];
            // SAFETY: the CPU has AVX2 (above).
            unsafe { panel_positions_avx2::<PANEL>(&b, (k, k0, len), &mut got) };
            assert_eq!(got[..len * PANEL], pc[..], "{f:?}, {len} positions, 64 rows");
            assert_eq!(got[len * PANEL], 0xA5, "{f:?}, {len} positions: a byte written past the piece");
            for first in [0, W] {
                let mut got = vec![0xA5u8; len * W];
                // SAFETY: as above.
                unsafe { panel_positions_avx2::<W>(&b[first * k..], (k, k0, len), &mut got) };
                assert_eq!(got, lanes_of(&pc, first), "{f:?}, {len} positions, rows {first}..");
            }
        }
    }
}

/// The planes of each half of a 32-lane piece are the tables': in the lanes of the codes whose sign bit is clear
/// the first side holds `Lut::m64` of the code times 2^-(896 + packed_scale) (bit for bit) and the second +0, the
/// other way round for the codes whose sign bit is set; the exponents are `Lut::e`'s; the report says whether a code
/// is non-finite (whose magnitudes are not checked). Both formats, every code in the first pieces, random codes after
/// them and finite ones only in the last.
#[test]
fn avx2_wide_planes_are_the_tables() {
    if !avx2_fma() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xA2_91A7E);
    for f in [Format::E4m3, Format::E5m2] {
        let lb = Lut::new(f);
        let scale = f64::from_bits(((1023 - 896 - lb.packed_scale()) as u64) << 52);
        for (_, (_, _, len), pc64) in pieces_in_place(&mut rng, f) {
            for first in [0, W] {
                let pc = lanes_of(&pc64, first);
                for half in 0..2 {
                    let (mut pm, mut pe) = (vec![1f64; len * W], vec![1i8; len * W / 2]);
                    // SAFETY: the CPU has AVX2 (above).
                    let seen = unsafe { wide_planes_avx2(&pc, half, &lb, &mut pm, &mut pe) };
                    let codes: Vec<u8> =
                        pc.chunks_exact(W).flat_map(|p| p[16 * half..16 * half + 16].to_vec()).collect();
                    assert_eq!(seen, f.any_nonfinite(&codes), "{f:?}, {len} positions: the non-finite report");
                    for (i, &code) in codes.iter().enumerate() {
                        let (p, j) = (i / 16, i % 16);
                        assert_eq!(pe[i], lb.e[code as usize], "{f:?}: exponent of code {code:#04x}");
                        if f.is_nonfinite(code) {
                            continue;
                        }
                        let m = lb.m64[code as usize] * scale;
                        let (pos, neg) = if code >> 7 == 0 { (m, 0.0) } else { (0.0, m) };
                        assert_eq!(pm[32 * p + j].to_bits(), pos.to_bits(), "{f:?}: positive side of {code:#04x}");
                        assert_eq!(pm[32 * p + 16 + j].to_bits(), neg.to_bits(), "{f:?}: negative side of {code:#04x}");
                    }
                }
            }
        }
    }
}

/// The AVX2 wide panel step, half a panel at a time, equals the portable panel step in f64 lanes
/// (`kernel::block_steps` over 32 lanes), bit for bit, and leaves the caller's MXCSR as it was: 300 cases of
/// [`StepCase`] (random presets of the step's domain: frac 29 to 40, blocks of 1 to 300, both c entries and
/// roundings, floors up to frac + 971).
#[test]
fn avx2_wide_panel_step_equals_the_panel_step() {
    if !avx2_fma() {
        return;
    }
    let csr = crate::fpstate::mxcsr() & !0x3F;
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_A232);
    for case in 0..300 {
        let StepCase { preset, p, fa, fb, la, lb, nblk, len, a, pc, start, .. } = StepCase::new(&mut rng, case, W);
        let pv: Vec<f64> = pc.iter().map(|&c| lb.v64[c as usize]).collect();
        let pe: Vec<i8> = pc.iter().map(|&c| lb.e[c as usize]).collect();
        let mut want: Vec<[f32; W]> = start.chunks_exact(W).map(|c| c.try_into().unwrap()).collect();
        let mut got = want.clone();
        for (r, want) in want.iter_mut().enumerate() {
            let row = &a[r * len..(r + 1) * len];
            match (p.late, p.nearest) {
                (true, true) => block_steps::<W, f64, true, true, true>(row, nblk, &la, &pv, &pe, want, &p),
                (true, false) => block_steps::<W, f64, true, false, true>(row, nblk, &la, &pv, &pe, want, &p),
                (false, true) => block_steps::<W, f64, false, true, true>(row, nblk, &la, &pv, &pe, want, &p),
                (false, false) => block_steps::<W, f64, false, false, true>(row, nblk, &la, &pv, &pe, want, &p),
            }
        }
        let (mut pm, mut he, mut ends) = (vec![0f64; len * W], vec![0i8; len * W / 2], vec![0f32; nblk * W / 2]);
        for half in 0..2 {
            // SAFETY: the CPU has AVX2 and FMA (above).
            let seen = unsafe { wide_planes_avx2(&pc, half, &lb, &mut pm, &mut he) };
            assert!(!seen, "case {case}: a non-finite report on finite codes");
            for (r, got) in got.iter_mut().enumerate() {
                let (row, c) = (&a[r * len..(r + 1) * len], &mut got[16 * half..16 * half + 16]);
                // SAFETY: as above.
                unsafe {
                    if p.late {
                        wide_panel_blocks_avx2::<true>(row, nblk, (&la, &lb), (&pm, &he), c, &mut ends, &p)
                    } else {
                        wide_panel_blocks_avx2::<false>(row, nblk, (&la, &lb), (&pm, &he), c, &mut ends, &p)
                    }
                }
                assert_eq!(crate::fpstate::mxcsr() & !0x3F, csr, "case {case}: the caller's MXCSR changed");
            }
        }
        for (r, (got, want)) in got.iter().zip(&want).enumerate() {
            for j in 0..W {
                assert_eq!(
                    got[j].to_bits(),
                    want[j].to_bits(),
                    "case {case}: {:?} {fa} x {fb}, row {r} output {j}",
                    preset.spec()
                );
            }
        }
    }
}
