//! The Blackwell presets against MMA-Sim on 100,000 seeded chains: datasets/oracle/mmasim-seeded.bin holds the seed,
//! a digest of the operands and MMA-Sim's result bits; this file redraws the chains by the recipe of
//! datasets/oracle/README.md (python/oracle/mmasim_seeded.py is its twin) and compares `dot` / `dot_scaled` bit for bit.

use mmaemu_model::Format;
use sha2::{Digest, Sha256};

mod common;
use common::{assert_equals_mmasim, OracleChain, Reader, SplitMix64};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/oracle/mmasim-seeded.bin");
/// The committed file's sha256 (datasets/oracle/README.md), so that a changed file is noticed, not trusted.
const FILE_SHA256: &str = "c68669c15eef47bbaa70292655a00508e80a587cbe9bcaa7bcdcfa1f6666c449";

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Finite,
    Nonzero,
    Subnormal,
    Zeros,
    Special,
    Narrow,
    Huge,
}

#[derive(Clone, Copy, PartialEq)]
enum ScaleMode {
    Normal,
    Deep,
    High,
    Edge,
}

const STYLES: [Style; 8] = [
    Style::Finite,
    Style::Nonzero,
    Style::Nonzero,
    Style::Subnormal,
    Style::Zeros,
    Style::Special,
    Style::Narrow,
    Style::Huge,
];
const SCALE_MODES: [ScaleMode; 6] =
    [ScaleMode::Normal, ScaleMode::Normal, ScaleMode::Normal, ScaleMode::Deep, ScaleMode::High, ScaleMode::Edge];
const NOTABLE_SCALES: [u8; 7] = [0, 1, 2, 60, 200, 253, 254];

fn special(code: u8, e4m3: bool) -> bool {
    let mag = code & 0x7F;
    if e4m3 {
        mag == 0x7F
    } else {
        mag >= 0x7C
    }
}

fn finite(rng: &mut SplitMix64, e4m3: bool) -> u8 {
    loop {
        let c = rng.below(256) as u8;
        if !special(c, e4m3) {
            return c;
        }
    }
}

/// One FP8 code in the given style (draws in the order the script makes them).
fn element(rng: &mut SplitMix64, e4m3: bool, style: Style) -> u8 {
    let mbits = if e4m3 { 3 } else { 2 };
    match style {
        Style::Finite => finite(rng, e4m3),
        Style::Nonzero => {
            let mut c = finite(rng, e4m3);
            while c & 0x7F == 0 {
                c = finite(rng, e4m3);
            }
            c
        }
        Style::Subnormal => {
            let mant = rng.below(1 << mbits) as u8;
            let sign = rng.below(2) as u8;
            mant | sign << 7
        }
        Style::Zeros => {
            if rng.per_mille(300) {
                finite(rng, e4m3)
            } else {
                rng.choice(&[0x00, 0x80])
            }
        }
        Style::Special => {
            if rng.per_mille(100) {
                rng.below(256) as u8
            } else {
                finite(rng, e4m3)
            }
        }
        Style::Narrow => {
            let e = rng.between(6, 9) as u8;
            let mant = rng.below(1 << mbits) as u8;
            let sign = rng.below(2) as u8;
            e << mbits | mant | sign << 7
        }
        Style::Huge if e4m3 => rng.choice(&[0x7E, 0xFE, 0x7D, 0xFD, 0x7B, 0xFB]),
        Style::Huge => rng.choice(&[0x7B, 0xFB, 0x7A]),
    }
}

/// c as fp32 bits: ±0, subnormal, tiny, huge, ±Inf or NaN, or product-sized.
fn accumulator(rng: &mut SplitMix64) -> u32 {
    let style = rng.below(10);
    let sign = (rng.below(2) as u32) << 31;
    match style {
        0 => sign,
        1 => sign | rng.between(1, 1 << 23) as u32,
        2 | 3 => {
            let (lo, hi) = if style == 2 { (1, 20) } else { (230, 255) };
            let e = rng.between(lo, hi) as u32;
            sign | e << 23 | rng.below(1 << 23) as u32
        }
        4 => {
            if rng.per_mille(800) {
                sign | 0x7F80_0000
            } else {
                0x7FC0_0000
            }
        }
        _ => {
            let e = rng.between(100, 160) as u32;
            sign | e << 23 | rng.below(1 << 23) as u32
        }
    }
}

fn scale(rng: &mut SplitMix64, mode: ScaleMode) -> u8 {
    let r = rng.below(1000);
    if r < 10 {
        return 0xFF;
    }
    (match mode {
        ScaleMode::Deep => rng.between(0, 16),
        ScaleMode::Edge => rng.between(40, 70),
        ScaleMode::High => rng.between(236, 255),
        ScaleMode::Normal if r < 150 => rng.choice(&NOTABLE_SCALES) as u64,
        ScaleMode::Normal => rng.between(107, 148),
    }) as u8
}

fn length(rng: &mut SplitMix64) -> usize {
    let r = rng.below(100);
    (if r < 35 {
        rng.between(1, 33)
    } else if r < 90 {
        rng.between(33, 97)
    } else {
        rng.between(97, 300)
    }) as usize
}

fn chain(seed: u64) -> OracleChain {
    let rng = &mut SplitMix64(seed);
    let (fa, fb) = (rng.below(2) == 0, rng.below(2) == 0); // true: e4m3
    let k = length(rng);
    let style_a = rng.choice(&STYLES);
    let mut a: Vec<u8> = (0..k).map(|_| element(rng, fa, style_a)).collect();
    let style_b = rng.choice(&STYLES);
    let mut b: Vec<u8> = (0..k).map(|_| element(rng, fb, style_b)).collect();
    if rng.per_mille(150) {
        for i in (1..k).step_by(2) {
            a[i] = a[i - 1] ^ 0x80;
            b[i] = b[i - 1];
        }
    }
    let mut c = accumulator(rng);
    let mode = rng.choice(&SCALE_MODES);
    if mode == ScaleMode::Edge {
        let sign = (rng.below(2) as u32) << 31;
        c = sign | rng.between(1, 1 << 23) as u32;
    }
    let blocks = k.div_ceil(32);
    let scale_a = (0..blocks).map(|_| scale(rng, mode)).collect();
    let scale_b = (0..blocks).map(|_| scale(rng, mode)).collect();
    let format = |e4m3| if e4m3 { Format::E4m3 } else { Format::E5m2 };
    OracleChain { fa: format(fa), fb: format(fb), c, a, b, scale_a, scale_b }
}

/// The file's header and each chain's result bits per model.
struct Oracle {
    seed: u64,
    digest: [u8; 32],
    models: Vec<String>,
    results: Vec<Vec<u32>>,
}

fn load() -> Oracle {
    let bytes = std::fs::read(FILE).expect("datasets/oracle/mmasim-seeded.bin");
    assert_eq!(format!("{:x}", Sha256::digest(&bytes)), FILE_SHA256, "mmasim-seeded.bin is not the committed file");
    let mut r = Reader { bytes: &bytes, what: "mmasim-seeded.bin" };
    assert_eq!(r.take(8), b"mmaemuS1");
    let seed = u64::from_le_bytes(r.take(8).try_into().unwrap());
    let n = r.u32() as usize;
    let digest = r.take(32).try_into().unwrap();
    let models: Vec<String> = (0..r.u8())
        .map(|_| {
            let len = r.u8() as usize;
            String::from_utf8(r.take(len).to_vec()).unwrap()
        })
        .collect();
    let results = (0..n)
        .map(|_| {
            let flags = r.u8();
            let mut row: Vec<u32> = Vec::with_capacity(models.len());
            for m in 0..models.len() {
                let v = if m > 0 && flags >> m & 1 == 1 { row[m - 1] } else { r.u32() };
                row.push(v);
            }
            row
        })
        .collect();
    assert!(r.bytes.is_empty(), "trailing bytes in mmasim-seeded.bin");
    Oracle { seed, digest, models, results }
}

#[test]
fn blackwell_presets_and_mxfp8_dot_equal_mmasim_on_100000_seeded_chains() {
    let oracle = load();
    assert!(oracle.results.len() >= 100_000, "the file holds {} chains", oracle.results.len());
    let mut master = SplitMix64(oracle.seed);
    let chains: Vec<OracleChain> = (0..oracle.results.len()).map(|_| chain(master.next())).collect();
    let mut h = Sha256::new();
    for ch in &chains {
        let code = |f| (f == Format::E5m2) as u8;
        h.update([code(ch.fa), code(ch.fb)]);
        h.update((ch.a.len() as u16).to_le_bytes());
        h.update(ch.c.to_le_bytes());
        for part in [&ch.a, &ch.b, &ch.scale_a, &ch.scale_b] {
            h.update(part);
        }
    }
    assert_eq!(h.finalize()[..], oracle.digest, "the chains drawn here are not the ones MMA-Sim was given");

    assert_equals_mmasim(&oracle.models, &chains, &oracle.results);
    for name in ["b200_tcgen05", "rtx50_mma_sync", "b200_tcgen05+mx", "rtx50_mma_sync+mx"] {
        assert!(oracle.models.iter().any(|m| m == name), "the file lacks {name}");
    }
}
