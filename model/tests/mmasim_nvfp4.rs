//! The NVFP4 instruction (`b200_tcgen05_mxf4nvf4`, tcgen05.mma kind::mxf4nvf4 block16 ue4m3) against MMA-Sim on
//! 100,000 seeded chains: datasets/oracle/mmasim-nvfp4.bin holds the seed, a digest of the operands and MMA-Sim's
//! result bits; this file redraws the chains by the recipe of datasets/oracle/README.md (python/oracle/
//! mmasim_nvfp4.py is its twin) and compares `dot_group_scaled` bit for bit.

use mmaemu_model::{b200_tcgen05_mxf4nvf4, dot_group_scaled};
use sha2::{Digest, Sha256};

mod common;
use common::{Reader, SplitMix64};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/oracle/mmasim-nvfp4.bin");
/// The committed file's sha256 (datasets/oracle/README.md), so that a changed file is noticed, not trusted.
const FILE_SHA256: &str = "9c890a80626c37e3db4406cb345cb7d6b405c8a0cf18088c71fb37de033cb306";

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Any,
    Nonzero,
    Zeros,
    Small,
    Huge,
}

#[derive(Clone, Copy, PartialEq)]
enum ScaleMode {
    Normal,
    Subnormal,
    High,
    Wide,
}

const STYLES: [Style; 6] = [Style::Any, Style::Nonzero, Style::Nonzero, Style::Zeros, Style::Small, Style::Huge];
const SCALE_MODES: [ScaleMode; 6] =
    [ScaleMode::Normal, ScaleMode::Normal, ScaleMode::Normal, ScaleMode::Subnormal, ScaleMode::High, ScaleMode::Wide];
const NOTABLE_SCALES: [u8; 5] = [0x00, 0x01, 0x08, 0x38, 0x7E];

fn element(rng: &mut SplitMix64, style: Style) -> u8 {
    (match style {
        Style::Any => rng.below(16),
        Style::Nonzero => rng.between(1, 8) | rng.below(2) << 3,
        Style::Zeros => {
            if rng.per_mille(300) {
                rng.below(16)
            } else {
                rng.choice(&[0x0, 0x8])
            }
        }
        Style::Small => rng.between(1, 4) | rng.below(2) << 3,
        Style::Huge => rng.choice(&[0x7, 0xF, 0x6, 0xE]),
    }) as u8
}

fn accumulator(rng: &mut SplitMix64) -> u32 {
    let style = rng.below(10);
    let sign = (rng.below(2) as u32) << 31;
    match style {
        0 => sign,
        1 => sign | rng.between(1, 1 << 23) as u32,
        2 | 3 => {
            let (lo, hi) = if style == 2 { (1, 20) } else { (230, 255) };
            sign | (rng.between(lo, hi) as u32) << 23 | rng.below(1 << 23) as u32
        }
        4 => {
            if rng.per_mille(800) {
                sign | 0x7F80_0000
            } else {
                0x7FC0_0000
            }
        }
        _ => sign | (rng.between(100, 160) as u32) << 23 | rng.below(1 << 23) as u32,
    }
}

fn scale(rng: &mut SplitMix64, mode: ScaleMode) -> u8 {
    let r = rng.below(1000);
    let sign = (rng.below(2) as u8) << 7;
    if r < 10 {
        return 0x7F | sign;
    }
    (match mode {
        ScaleMode::Subnormal => rng.between(0, 9) as u8,
        ScaleMode::High => rng.between(0x70, 0x7F) as u8,
        ScaleMode::Wide => rng.below(0x7F) as u8,
        ScaleMode::Normal if r < 150 => rng.choice(&NOTABLE_SCALES),
        ScaleMode::Normal => rng.between(0x30, 0x48) as u8,
    }) | sign
}

struct Fp4Chain {
    c: u32,
    a: Vec<u8>,
    b: Vec<u8>,
    scale_a: Vec<u8>,
    scale_b: Vec<u8>,
}

fn chain(seed: u64) -> Fp4Chain {
    let rng = &mut SplitMix64(seed);
    let r = rng.below(100);
    let groups = (if r < 35 {
        rng.between(1, 5)
    } else if r < 90 {
        rng.between(5, 17)
    } else {
        rng.between(17, 41)
    }) as usize;
    let k = 16 * groups;
    let style_a = rng.choice(&STYLES);
    let mut a: Vec<u8> = (0..k).map(|_| element(rng, style_a)).collect();
    let style_b = rng.choice(&STYLES);
    let mut b: Vec<u8> = (0..k).map(|_| element(rng, style_b)).collect();
    if rng.per_mille(150) {
        for i in (1..k).step_by(2) {
            a[i] = a[i - 1] ^ 0x8;
            b[i] = b[i - 1];
        }
    }
    let c = accumulator(rng);
    let mode = rng.choice(&SCALE_MODES);
    let scale_a = (0..groups).map(|_| scale(rng, mode)).collect();
    let scale_b = (0..groups).map(|_| scale(rng, mode)).collect();
    Fp4Chain { c, a, b, scale_a, scale_b }
}

#[test]
fn nvfp4_instruction_equals_mmasim_on_100000_seeded_chains() {
    let bytes = std::fs::read(FILE).expect("datasets/oracle/mmasim-nvfp4.bin");
    assert_eq!(format!("{:x}", Sha256::digest(&bytes)), FILE_SHA256, "mmasim-nvfp4.bin is not the committed file");
    let mut r = Reader { bytes: &bytes, what: "mmasim-nvfp4.bin" };
    assert_eq!(r.take(8), b"mmaemuF1");
    let seed = u64::from_le_bytes(r.take(8).try_into().unwrap());
    let n = r.u32() as usize;
    let digest: [u8; 32] = r.take(32).try_into().unwrap();
    let len = r.u8() as usize;
    assert_eq!(r.take(len), b"b200_tcgen05_mxf4nvf4");
    assert!(n >= 100_000, "the file holds {n} chains");

    let mut master = SplitMix64(seed);
    let chains: Vec<Fp4Chain> = (0..n).map(|_| chain(master.next())).collect();
    let mut h = Sha256::new();
    for ch in &chains {
        h.update((ch.a.len() as u16).to_le_bytes());
        h.update(ch.c.to_le_bytes());
        for part in [&ch.a, &ch.b, &ch.scale_a, &ch.scale_b] {
            h.update(part);
        }
    }
    assert_eq!(h.finalize()[..], digest, "the chains drawn here are not the ones MMA-Sim was given");

    let preset = b200_tcgen05_mxf4nvf4();
    let mut mismatches = Vec::new();
    for (i, ch) in chains.iter().enumerate() {
        let expected = r.u32();
        let got = dot_group_scaled(&preset, &ch.a, &ch.b, &ch.scale_a, &ch.scale_b, Some(f32::from_bits(ch.c)))
            .unwrap()
            .to_bits();
        if got != expected {
            mismatches.push(format!(
                "chain {i} (K = {}, c = {:#010x}): MMA-Sim {expected:#010x}, model {got:#010x}",
                ch.a.len(),
                ch.c
            ));
        }
    }
    assert!(r.bytes.is_empty(), "trailing bytes in mmasim-nvfp4.bin");
    assert!(
        mismatches.is_empty(),
        "{} of {n} chains differ (seed {seed:#x}); first: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(8)]
    );
}
