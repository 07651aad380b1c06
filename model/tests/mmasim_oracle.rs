//! The presets against MMA-Sim (microsoft/MMA-Sim), an independent bit-accurate model of NVIDIA tensor cores: every
//! chain of datasets/oracle/mmasim-chains.bin (written by python/oracle/mmasim_chains.py; see docs/reference.md
//! §2.1) must come out of `dot` / `dot_scaled` with MMA-Sim's bits, for ada, hopper and the Blackwell presets.

use mmaemu_model::Format;

mod common;
use common::{assert_equals_mmasim, OracleChain, Reader};

fn format(code: u8) -> Format {
    match code {
        0 => Format::E4m3,
        1 => Format::E5m2,
        _ => panic!("bad format code {code}"),
    }
}

/// The model names and the chains of the file.
fn load() -> (Vec<String>, Vec<OracleChain>, Vec<Vec<u32>>) {
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
    let (chains, expected) = (0..n)
        .map(|_| {
            let (fa, fb) = (format(r.u8()), format(r.u8()));
            let k = r.u16() as usize;
            let c = r.u32();
            let a = r.take(k).to_vec();
            let b = r.take(k).to_vec();
            let blocks = k.div_ceil(32);
            let scale_a = r.take(blocks).to_vec();
            let scale_b = r.take(blocks).to_vec();
            let expected: Vec<u32> = (0..models.len()).map(|_| r.u32()).collect();
            (OracleChain { fa, fb, c, a, b, scale_a, scale_b }, expected)
        })
        .unzip::<_, _, Vec<_>, Vec<_>>();
    assert!(r.bytes.is_empty(), "trailing bytes in mmasim-chains.bin");
    (models, chains, expected)
}

#[test]
fn every_preset_equals_mmasim_on_every_chain() {
    let (models, chains, expected) = load();
    assert!(chains.len() >= 3000, "the file holds {} chains", chains.len());
    assert_equals_mmasim(&models, &chains, &expected);
}
