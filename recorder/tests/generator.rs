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
        ("binades", DataClass::Binades { scale: 1.0, width: 16, silent: 1, mirror: false }),
        ("binades mirror", DataClass::Binades { scale: 2.0, width: 32, silent: 0, mirror: true }),
    ]
}

/// sha256 of A and B ([16, 64] each) of seed 42, stream 3, for e4m3 then e5m2. Frozen (see the module doc).
const FROZEN: &[(&str, [&str; 4])] = &[
    (
        "gaussian",
        [
            "d6d749405e2d6fc92357724b2e1efa74ca3414592861150e4f87b256cf1669cd",
            "4024104330330e17750760b69d818976e3becebd334f88d97d51166d6209b8a2",
            "e26fabfae4798050e5fd666002755c04bff645a4c6f51a06c4e98c9b827e04d8",
            "03d09cbaf446c734bccd07a83900a02484b0c9891768b65c97ab93613b61bdde",
        ],
    ),
    (
        "gaussian x 8",
        [
            "e4480992d1861973bcdc51387487a1ba5acb8c4fbd5e800665ef480931630eff",
            "32c2bac18f69aa69e0919bac7c4ad5378f907695c88e2fd1db1595d292564eb7",
            "d5a60c9f83e7ad022c23b8465c428d0e38b7e116ffdc608a21833794efcbd740",
            "86e6f1fd0611d91a78a988d2afeafdbc4f5c2bcf3d69ebc17cdb4dd9e8cb688f",
        ],
    ),
    (
        "bits",
        [
            "046a0d9a1c613b1581ba4b89974962df2c321af55acf6b67e3fb5322bf977d6d",
            "add3ccc323c411ce41b82c51aa84ee030d5c060bb572e90cc19d1579b5143763",
            "046a0d9a1c613b1581ba4b89974962df2c321af55acf6b67e3fb5322bf977d6d",
            "add3ccc323c411ce41b82c51aa84ee030d5c060bb572e90cc19d1579b5143763",
        ],
    ),
    (
        "bits finite",
        [
            "e7491a93f74d9a843e97f6dbe2f6dda8d57a6f001b017906d88f9fd47703d9d9",
            "82dda1d36650fcddb3c3ee516179f6069de55595642a9c3692757deeb334a572",
            "d225e13e6a858c59f49ae32559d835a108e18249734676056d1b99f987c22d25",
            "1b3e16edf81f7196dffb338bd4fdc227e32d1845e9e67a41c4f59fbd73361229",
        ],
    ),
    (
        "split",
        [
            "bff0a3a723d63e77d6bbc767d4d009d3835f9d740404c957e5ae1e54c3461ce1",
            "48879b4f9a6aaebababf2642cd476394cb27abbee3b3378061b2d3794c54524a",
            "8b43219498254e55384edbdb416035e2a5ba887b93429b4a0f171d015a397188",
            "84a33cf033e02cd457641ccbf4fbbf4babf3768908e40129102f023e448ffa7b",
        ],
    ),
    (
        "all_codes",
        [
            "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9",
            "47c6a3be8f038f8e37cc7a4061c21cbe2e360325f9c8e0686b38c6f2cc27e45c",
            "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9",
            "47c6a3be8f038f8e37cc7a4061c21cbe2e360325f9c8e0686b38c6f2cc27e45c",
        ],
    ),
    (
        "all_codes finite",
        [
            "386b55414b91266199b89ff99b3202547c4e5b6d069e7d232b48f857ad392f75",
            "a78bf85d759be58554bec24ccf6cac3fbd80f1fca2abe721de276be5f8b90e06",
            "a9895abac92cb88b227f21ea696278a0a00d5d109eed15ab172a9fd6905f5be1",
            "a64c1f67b3197aba71ba1953fa05a815b5e7ad34bc1ef6970e8fcb2dcd3cd7bf",
        ],
    ),
    (
        "subnormal",
        [
            "ee93a54e3f5fb9c03aaf20f85713e949c59007d0e0e5b117628a7009920c7842",
            "0c3e40db0c5a8e0c64abf0866ade0ff38d46f5d22c22f54c6cc98ed8dbe1bd44",
            "227baf12438995f98856963f79d57557572c1487a7c6c4767952a34be7590467",
            "256424277b87f538bcd27637b59f056ff275c2b198cebca1d51e78d41ad0ce98",
        ],
    ),
    (
        "special",
        [
            "263b11cc9bbb3d5acac6e691140a6befac7a0ee9b4106eb7ecfc1543533a1b8b",
            "41a39a21f02bb6c57828110d1f85168effe9cd7b204ee51f3073aa6e664dc628",
            "2d0a6b096a6e5545d79ba1447b51e29c14387472be39d037d074285c99bae031",
            "db7bff804cb332b5b53a7fe010ad6c7f04acfee077f2d24047c2c42014372581",
        ],
    ),
    (
        "binades",
        [
            "259801928bbadc7537a15d318ac746448898bb8cf8fe5ed476ef06022818c691",
            "46600bfcff4be3889435beb45db43cfac8a2c9904d156f503f5cd48e1a03a261",
            "24e650ae9299ae6a1ac87e6e3a6ed97976d83e061958735fa79d0300c8cffabb",
            "5fd09bdfd37d19c9917fc2355ba60e2a07561e9b5dfdfd17820cdd48788b4355",
        ],
    ),
    (
        "binades mirror",
        [
            "321ef769a50d7c6bef1da56b0929e6948403e1c9e16d26c04aaabc116f67c052",
            "f7bf045c38706f2d9e5edd1b61891ec12b9cc10bef6a7d54b8a5c77d28b61b5e",
            "245c8a9b534435bab71c0d84ca90fda6546b37229ff4eecb4108b40cdf79f676",
            "d24e00cc6b9f8c5f23c45090f92edf61cb270b4d5e665d5573b42a3e7c5d2e3e",
        ],
    ),
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

const FIRST_16: &str = "41300fb4b0352e3bbb2fb328b73d21af";

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
