//! The input generator (`mmaemu_datasets::inputs`, used by every sweep) produces the same bytes on every
//! machine. The expected sha256 below were computed once, by this generator on x86-64 Linux, and then
//! frozen: a change to any of them means recordings that ship operands by reference no longer regenerate,
//! so it must never happen silently (bump the generator name instead).

use mmaemu_datasets::inputs::{generate, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_recorder::util::sha256_hex;

fn spec(seed: u64, stream: u64, data: DataClass) -> InputSpec {
    InputSpec { generator: GENERATOR_V1.into(), seed, stream, data }
}

fn classes() -> Vec<(&'static str, DataClass)> {
    vec![
        ("gaussian", DataClass::Gaussian { scale: 1.0 }),
        ("gaussian x 8", DataClass::Gaussian { scale: 8.0 }),
        ("bits", DataClass::Bits { finite: false }),
        ("bits finite", DataClass::Bits { finite: true }),
        ("split", DataClass::Split { scale: 1.0 }),
        ("all_codes", DataClass::AllCodes { finite: false }),
        ("all_codes finite", DataClass::AllCodes { finite: true }),
        ("subnormal", DataClass::Subnormal { scale: 1.0 }),
        ("special", DataClass::Special { scale: 1.0 }),
    ]
}

/// sha256 of A and B ([16, 64] each) of seed 42, stream 3, for e4m3 then e5m2. Frozen (see the module doc).
const FROZEN: &[(&str, [&str; 4])] = &[
    ("gaussian", ["e2004d3ca7c4c548d3115569a1eaa9a4830b0ef6461ea7834856fc41df394563", "e860e5db286a84ac7df210489990706256a1b2a7f17871a705dc1ab84bf05a6c", "e403cd077a17c67d823e2fc10032c860d648de34892e9a6aeee7c2cce942a6eb", "f309f2f129263c2a634b0fc6b46c7327c80a653a75d486ff45768270eed40ce7"]),
    ("gaussian x 8", ["90c13d7a74142b7168fccdde7ee55d3c895f698ac1b5dec653da97d0f0c85652", "8d5b5686e0f6a3193f27052d298d47bb0f0cdf545419841abc97889e5c66fddc", "d541477d7252f1736778311f189c5f741e52c89ce74815298f40eb9564c7d5c4", "7a1df37f3c34c5b8a2b09474f133efef9e96acc3ea56d39f0c65a47940589eaa"]),
    ("bits", ["046a0d9a1c613b1581ba4b89974962df2c321af55acf6b67e3fb5322bf977d6d", "add3ccc323c411ce41b82c51aa84ee030d5c060bb572e90cc19d1579b5143763", "046a0d9a1c613b1581ba4b89974962df2c321af55acf6b67e3fb5322bf977d6d", "add3ccc323c411ce41b82c51aa84ee030d5c060bb572e90cc19d1579b5143763"]),
    ("bits finite", ["e7491a93f74d9a843e97f6dbe2f6dda8d57a6f001b017906d88f9fd47703d9d9", "82dda1d36650fcddb3c3ee516179f6069de55595642a9c3692757deeb334a572", "d225e13e6a858c59f49ae32559d835a108e18249734676056d1b99f987c22d25", "1b3e16edf81f7196dffb338bd4fdc227e32d1845e9e67a41c4f59fbd73361229"]),
    ("split", ["9a77d0db3e1658f0fd20349b4afd13de87a672ee3c8a6974fd3bf6521b99e058", "fe2e33f124c46f0403c9b98e3380f24b97243c440f56f49d3e37436feed2b7fd", "96ed2fe7d4d2fe2cea90d983bde3068471c993d43c548cc9479c31bde2edf4c8", "a7e1f23925c58167974e4f650acb49563b22574983a2172121a41bbe5534af6d"]),
    ("all_codes", ["785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9", "47c6a3be8f038f8e37cc7a4061c21cbe2e360325f9c8e0686b38c6f2cc27e45c", "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9", "47c6a3be8f038f8e37cc7a4061c21cbe2e360325f9c8e0686b38c6f2cc27e45c"]),
    ("all_codes finite", ["386b55414b91266199b89ff99b3202547c4e5b6d069e7d232b48f857ad392f75", "a78bf85d759be58554bec24ccf6cac3fbd80f1fca2abe721de276be5f8b90e06", "a9895abac92cb88b227f21ea696278a0a00d5d109eed15ab172a9fd6905f5be1", "a64c1f67b3197aba71ba1953fa05a815b5e7ad34bc1ef6970e8fcb2dcd3cd7bf"]),
    ("subnormal", ["442b2b042a5777301335da4a6cf221ded9545deeb6bb6bea3ec907c0c4f99392", "527a573760bed97c1bf6b060f84b8cffa9217ba74b1106fdc80a05c8b2495a51", "3b9cc95ed8ae4c83671e9a62147982c0ee19d19d6f78942d49b4a50942b981d3", "4cc6635e4b9cafc2e915a08bb6d3993e233d45e835f3899694c55fca4f132cfe"]),
    ("special", ["b7407651ca17f2e2413e23e55d93fc49fc3eb13a1d8d0e07f73e764211db0469", "dc7f838805b25e36b0336001a87a0a0d2bfdd68f1044d2db3f118bf10187f0b9", "62e68cec717e4a096cf4a5026895391a2a4e07138d9f4082b48bd2b8b78322f0", "820096adff3f37542bc7bbf7d37f78047a1c0b9384e7df349fc532c14390e243"]),
];

#[test]
fn generator_bytes_are_frozen() {
    let mut got = Vec::new();
    for (name, data) in classes() {
        let s = spec(42, 3, data);
        let mut h = Vec::new();
        for fmt in ["e4m3", "e5m2"] {
            for op in [Operand::A, Operand::B] {
                h.push(sha256_hex(&generate(&s, op, fmt, 16, 64).unwrap()));
            }
        }
        got.push((name, h));
    }
    for (name, h) in &got {
        // Printed so that a deliberate generator change can re-freeze the table (`--nocapture`).
        println!("    (\"{name}\", [\"{}\", \"{}\", \"{}\", \"{}\"]),", h[0], h[1], h[2], h[3]);
    }
    assert_eq!(got.len(), FROZEN.len());
    for ((name, h), (fname, fh)) in got.iter().zip(FROZEN) {
        assert_eq!(name, fname);
        assert_eq!(h, fh, "{name}");
    }
}

#[test]
fn first_bytes_are_frozen() {
    // Frozen as above: the first 16 codes of A of the gaussian class, seed 42, stream 3, e4m3.
    let a = generate(&spec(42, 3, DataClass::Gaussian { scale: 1.0 }), Operand::A, "e4m3", 1, 16).unwrap();
    let hex: String = a.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, FIRST_16);
}

const FIRST_16: &str = "40352cb93331393129b22c3cb0403735";

#[test]
fn streams_operands_and_seeds_are_independent_and_repeatable() {
    let g = |seed, stream, op| generate(&spec(seed, stream, DataClass::Gaussian { scale: 1.0 }), op, "e4m3", 8, 32);
    let base = g(1, 0, Operand::A).unwrap();
    assert_eq!(base, g(1, 0, Operand::A).unwrap());
    assert_ne!(base, g(1, 1, Operand::A).unwrap());
    assert_ne!(base, g(2, 0, Operand::A).unwrap());
    assert_ne!(base, g(1, 0, Operand::B).unwrap());
    // Counter-based: a prefix of a longer operand is the shorter operand (rows are consecutive elements).
    let long = g(1, 0, Operand::A).unwrap();
    let short = generate(&spec(1, 0, DataClass::Gaussian { scale: 1.0 }), Operand::A, "e4m3", 4, 32).unwrap();
    assert_eq!(&long[..short.len()], &short[..]);
    // The JSON form round-trips, so a row's `inputs` regenerates the same bytes.
    let s = spec(9, 4, DataClass::Split { scale: 0.5 });
    let back: InputSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}
