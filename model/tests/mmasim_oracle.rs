//! The presets against MMA-Sim (microsoft/MMA-Sim), an independent bit-accurate model of NVIDIA tensor cores: every
//! chain of datasets/oracle/mmasim-chains.bin (written by python/oracle/mmasim_chains.py; see docs/reference.md
//! §2.1) must come out of `dot` / `dot_scaled` with MMA-Sim's bits, for ada, hopper and the Blackwell presets.

use mmaemu_model::{dot, dot_scaled, Format, Preset};

mod common;
use common::Reader;

struct OracleChain {
    fa: Format,
    fb: Format,
    c: u32,
    a: Vec<u8>,
    b: Vec<u8>,
    scale_a: Vec<u8>,
    scale_b: Vec<u8>,
    expected: Vec<u32>,
}

fn format(code: u8) -> Format {
    match code {
        0 => Format::E4m3,
        1 => Format::E5m2,
        _ => panic!("bad format code {code}"),
    }
}

/// The model names and the chains of the file.
fn load() -> (Vec<String>, Vec<OracleChain>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/oracle/mmasim-chains.bin");
    let bytes = std::fs::read(path).expect("datasets/oracle/mmasim-chains.bin");
    let mut r = Reader { bytes: &bytes, what: "mmasim-chains.bin" };
    assert_eq!(r.take(8), b"mmaemuO1");
    let models: Vec<String> = (0..r.u8())
        .map(|_| {
            let n = r.u8() as usize;
            String::from_utf8(r.take(n).to_vec()).unwrap()
        })
        .collect();
    let n = r.u32() as usize;
    let chains = (0..n)
        .map(|_| {
            let (fa, fb) = (format(r.u8()), format(r.u8()));
            let k = r.u16() as usize;
            let c = r.u32();
            let a = r.take(k).to_vec();
            let b = r.take(k).to_vec();
            let blocks = k.div_ceil(32);
            let scale_a = r.take(blocks).to_vec();
            let scale_b = r.take(blocks).to_vec();
            let expected = (0..models.len()).map(|_| r.u32()).collect();
            OracleChain { fa, fb, c, a, b, scale_a, scale_b, expected }
        })
        .collect();
    assert!(r.bytes.is_empty(), "trailing bytes in mmasim-chains.bin");
    (models, chains)
}

#[test]
fn every_preset_equals_mmasim_on_every_chain() {
    let (models, chains) = load();
    assert!(chains.len() >= 3000, "the file holds {} chains", chains.len());
    let mut compared = 0usize;
    let mut failures = Vec::new();
    let mut differ = 0usize;
    for (m, model) in models.iter().enumerate() {
        let (name, scaled) = match model.strip_suffix("+mx") {
            Some(n) => (n, true),
            None => (model.as_str(), false),
        };
        let preset = Preset::by_name(name).unwrap();
        for (i, ch) in chains.iter().enumerate() {
            let c = Some(f32::from_bits(ch.c));
            let got = if scaled {
                dot_scaled(&preset, ch.fa, ch.fb, &ch.a, &ch.b, &ch.scale_a, &ch.scale_b, c)
            } else {
                dot(&preset, ch.fa, ch.fb, &ch.a, &ch.b, c)
            }
            .unwrap()
            .to_bits();
            compared += 1;
            differ += (got != ch.expected[m]) as usize;
            if got != ch.expected[m] && failures.len() < 10 {
                failures.push(format!(
                    "{model} chain {i}: {:?}x{:?} K={} c={:#010x} a={:02x?} b={:02x?} sa={:02x?} sb={:02x?}: \
                     mmaemu {got:#010x}, MMA-Sim {:#010x}",
                    ch.fa,
                    ch.fb,
                    ch.a.len(),
                    ch.c,
                    ch.a,
                    ch.b,
                    ch.scale_a,
                    ch.scale_b,
                    ch.expected[m]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{differ} of {compared} results differ; the first:\n{}", failures.join("\n"));
    assert_eq!(compared, models.len() * chains.len());
}
