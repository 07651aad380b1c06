//! The AVX-512 wide panel step and its planes against the format tables and the portable panel step in f64 lanes.

use super::*;
use crate::kernel::block_steps;
use mmaemu_model::preset::{BlockRounding, CEntry, PresetSpec};

/// The planes of a piece's codes `pc` ([`PANEL`] per position) are the tables': each magnitude is `Lut::m64` of its
/// code, bit for bit, and each lane with a nonzero magnitude is on its code's side (the sign bit).
fn check_planes(what: &str, lb: &Lut, pc: &[u8], pm: &[f64], sides: &[u64]) {
    for (i, &code) in pc.iter().enumerate() {
        let (p, j) = (i / PANEL, i % PANEL);
        assert_eq!(pm[i].to_bits(), lb.m64[code as usize].to_bits(), "{what}: magnitude of code {code:#04x}");
        if lb.m64[code as usize] != 0.0 {
            let negative = code >> 7 == 1;
            assert_eq!(sides[2 * p] >> j & 1 == 1, !negative, "{what}: side of code {code:#04x}");
            assert_eq!(sides[2 * p + 1] >> j & 1 == 1, negative, "{what}: side of code {code:#04x}");
        }
    }
}

/// The wide step's planes, made from decoded values (`wide_planes`) and decoded in place from B (`wide_panel_piece`),
/// are the format tables' magnitudes and signs of the codes, with `Lut::decode`'s exponents, and the piece reports
/// a non-finite code where there is one: both formats, every code in the first piece, random codes after it and
/// finite ones only in the last, pieces of 16, 32 and 48 positions at an offset into rows of odd length.
#[test]
fn wide_planes_are_the_tables() {
    if !avx512() {
        return;
    }
    let in_place = crate::driver::vbmi();
    if !in_place {
        eprintln!("this CPU has no AVX-512 VBMI: the decoding in place is not run");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xD0_0B1E);
    for f in [Format::E4m3, Format::E5m2] {
        let lb = Lut::new(f);
        for (b, (k, k0, len), pc) in pieces_in_place(&mut rng, f) {
            let (mut pv, mut we) = (vec![0f32; len * PANEL], vec![0i8; len * PANEL]);
            lb.decode(&pc, &mut pv, &mut we);
            let (mut pm, mut sides) = (vec![1f64; len * PANEL], vec![1u64; 2 * len]);
            // SAFETY: the CPU has AVX-512 (above).
            unsafe { wide_planes(&pv, &mut pm, &mut sides) };
            check_planes(&format!("{f:?} {len} positions, from values"), &lb, &pc, &pm, &sides);
            if in_place {
                let (mut pm, mut sides, mut e) = (vec![1f64; len * PANEL], vec![1u64; 2 * len], vec![1i8; len * PANEL]);
                // SAFETY: the CPU has AVX-512 and VBMI (above).
                let seen = unsafe { wide_panel_piece(&b, (k, k0, len), &lb, (&mut pm, &mut sides, &mut e)) };
                assert_eq!(seen, f.any_nonfinite(&pc), "{f:?}, {len} positions: the non-finite report");
                assert_eq!(e, we, "{f:?}, {len} positions: exponents");
                check_planes(&format!("{f:?} {len} positions, in place"), &lb, &pc, &pm, &sides);
            }
        }
    }
}

/// A random wide-path preset with room for the wide step's bias, past the i32 step: frac 29 to 40, blocks of 1 to 300
/// products, early or late c, either rounding, min_exp near the products or anywhere in -1000..=frac + 971.
fn wide_preset(rng: &mut ChaCha8Rng) -> Preset {
    loop {
        let nfma = if rng.random_ratio(1, 2) { 1 << rng.random_range(0..=8) } else { rng.random_range(1..=300) };
        let frac = rng.random_range(29..=40);
        let nearest = rng.random_ratio(1, 2);
        let frac_out = if nearest { 23 } else { rng.random_range(1..=23) };
        let min_exp = if rng.random_ratio(1, 4) {
            rng.random_range(-1000..=frac as i32 + 971)
        } else {
            rng.random_range(-90..=40)
        };
        let c_entry = if rng.random_ratio(1, 2) { CEntry::Late } else { CEntry::Early };
        let rounding = if nearest { BlockRounding::NearestEven } else { BlockRounding::Truncate };
        let spec = PresetSpec::custom("wide", nfma, frac, frac_out, min_exp, c_entry, None).with_rounding(rounding);
        let preset = Preset::custom(spec).expect("a valid preset");
        let p = Params::new(&preset);
        if p.path == crate::kernel::Path::Wide && p.biased64 && !p.int32 && !p.single {
            return preset;
        }
    }
}

/// One case of the wide panel steps' tests: a random preset of [`wide_preset`], the format pair `PAIRS[case % 4]`, one
/// to three rows of random codes of A (a tenth zeros, narrower magnitudes every other case, so that the block maxima
/// vary) against a panel of `lanes` random finite codes of B per position (a tenth -0), one to five blocks, and the
/// accumulators an earlier piece left (random values of either sign, some zero), so that c enters the block maximum,
/// changes sign and cancels.
pub(super) struct StepCase {
    pub preset: Preset,
    pub p: Params,
    pub fa: Format,
    pub fb: Format,
    pub la: Lut,
    pub lb: Lut,
    pub rows: usize,
    pub nblk: usize,
    pub len: usize,
    /// A's rows, `len` codes each.
    pub a: Vec<u8>,
    /// B's codes, position-major, `lanes` per position.
    pub pc: Vec<u8>,
    /// The accumulators, `lanes` per row.
    pub start: Vec<f32>,
}

impl StepCase {
    pub(super) fn new(rng: &mut ChaCha8Rng, case: usize, lanes: usize) -> StepCase {
        let preset = wide_preset(rng);
        let p = Params::new(&preset);
        let (fa, fb) = PAIRS[case % 4];
        let (la, lb) = (Lut::new(fa), Lut::new(fb));
        let top = if case.is_multiple_of(2) { 0x7F } else { 0x3F };
        let finite = |f: Format, rng: &mut ChaCha8Rng, top: u8| loop {
            let c = rng.random_range(0..=top) | (rng.random::<u8>() & 0x80);
            if !f.is_nonfinite(c) {
                break c;
            }
        };
        let (rows, nblk) = (rng.random_range(1..=3), rng.random_range(1..=5));
        let len = nblk * p.nfma;
        let a: Vec<u8> =
            (0..rows * len).map(|_| if rng.random_ratio(1, 10) { 0 } else { finite(fa, rng, top) }).collect();
        let pc: Vec<u8> =
            (0..len * lanes).map(|_| if rng.random_ratio(1, 10) { 0x80 } else { finite(fb, rng, 0x7F) }).collect();
        let start: Vec<f32> = (0..rows * lanes)
            .map(|_| match rng.random_range(0..4) {
                0 => 0.0,
                _ => la.v32[finite(fa, rng, 0x7F) as usize] * lb.v32[finite(fb, rng, 0x7F) as usize],
            })
            .collect();
        StepCase { preset, p, fa, fb, la, lb, rows, nblk, len, a, pc, start }
    }
}

/// The wide panel step equals the portable panel step in f64 lanes (`kernel::block_steps`), bit for bit: 300 cases of
/// [`StepCase`].
#[test]
fn wide_panel_step_equals_the_panel_step() {
    if !avx512() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_0064);
    for case in 0..300 {
        let StepCase { preset, p, fa, fb, la, lb, rows, nblk, len, a, pc, start } =
            StepCase::new(&mut rng, case, PANEL);
        let (mut pv, mut pe) = (vec![0f32; len * PANEL], vec![0i8; len * PANEL]);
        lb.decode(&pc, &mut pv, &mut pe);
        let pv64: Vec<f64> = pc.iter().map(|&c| lb.v64[c as usize]).collect();
        let (mut pm, mut sides) = (vec![0f64; len * PANEL], vec![0u64; 2 * len]);
        // SAFETY: the CPU has AVX-512 (above).
        unsafe { wide_planes(&pv, &mut pm, &mut sides) };
        for r in 0..rows {
            let row = &a[r * len..(r + 1) * len];
            let mut want: [f32; PANEL] = start[r * PANEL..(r + 1) * PANEL].try_into().unwrap();
            let mut got = want;
            match (p.late, p.nearest) {
                (true, true) => block_steps::<PANEL, f64, true, true, true>(row, nblk, &la, &pv64, &pe, &mut want, &p),
                (true, false) => {
                    block_steps::<PANEL, f64, true, false, true>(row, nblk, &la, &pv64, &pe, &mut want, &p)
                }
                (false, true) => {
                    block_steps::<PANEL, f64, false, true, true>(row, nblk, &la, &pv64, &pe, &mut want, &p)
                }
                (false, false) => {
                    block_steps::<PANEL, f64, false, false, true>(row, nblk, &la, &pv64, &pe, &mut want, &p)
                }
            }
            // SAFETY: as above.
            unsafe {
                match (p.late, p.nearest) {
                    (true, true) => wide_panel_blocks::<true, true>(row, nblk, &la, &pm, &sides, &pe, &mut got, &p),
                    (true, false) => wide_panel_blocks::<true, false>(row, nblk, &la, &pm, &sides, &pe, &mut got, &p),
                    (false, true) => wide_panel_blocks::<false, true>(row, nblk, &la, &pm, &sides, &pe, &mut got, &p),
                    (false, false) => wide_panel_blocks::<false, false>(row, nblk, &la, &pm, &sides, &pe, &mut got, &p),
                }
            }
            for j in 0..PANEL {
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
