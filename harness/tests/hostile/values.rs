//! The fuzzer's random material: a seeded generator and the extreme numbers, garbage text, call objects,
//! input specs and samples it writes into mutated recordings.

#[allow(unused_imports)]
use super::*;

/// The fuzzer's generator: the workspace's seeded ChaCha8 ([`mmaemu_testkit::seed::Rng`]), one stream per case.
pub(crate) struct Rng(mmaemu_testkit::seed::Rng);

impl Rng {
    pub(crate) fn of_case(base: u64, trial: &str, case: u64) -> Rng {
        Rng(mmaemu_testkit::seed::Rng::from_seed(trial_seed(base, &format!("{trial}#{case}"))))
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0.random()
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n.max(1))
    }
    pub(crate) fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n.max(1))
    }
    pub(crate) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub(crate) const EXTREME: &[i64] = &[
    -1,
    0,
    1,
    2,
    15,
    16,
    17,
    255,
    1 << 16,
    (1 << 31) - 1,
    1 << 31,
    1 << 32,
    1 << 36,
    1 << 40,
    1 << 62,
    i64::MAX,
    i64::MIN,
    -(1 << 62),
];

pub(crate) const DTYPES: &[&str] = &[
    "float32",
    "bfloat16",
    "float16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float64",
    "int8",
    "bool",
    "e4m3",
    "e5m2",
    "",
    "garbage",
];

pub(crate) fn extreme_number(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0..=2 => json!(*rng.pick(EXTREME)),
        3 => json!(u64::MAX),
        4 => json!(*rng.pick(&[1e300, -1e300, 0.5, -0.0, 1e-320, 3.0e38, 65504.0])),
        _ => json!((rng.next() as i64) >> rng.below(64)),
    }
}

pub(crate) fn garbage_text(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => String::new(),
        1 => "[".repeat(1 + rng.below(100_000)),
        2 => format!("{{\"{}", "a".repeat(rng.below(1000))),
        3 => (*rng.pick(&["null", "[]", "{}", "1e999", "-0", "\"\"", "true", "{\"a\":1,\"a\":2}"])).to_string(),
        4 => "x".repeat(rng.below(1 << 20)),
        _ => {
            let n = rng.below(200);
            String::from_utf8_lossy(&rng.bytes(n)).into_owned()
        }
    }
}

pub(crate) fn wild_json(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.one_in(2)),
        2 => extreme_number(rng),
        3 => json!(*rng.pick(DTYPES)),
        4 => Value::Array((0..rng.below(4)).map(|_| wild_json(rng, depth + 1)).collect()),
        _ => {
            let keys = ["dtype", "shape", "value", "len", "layout", "offset", "ld_pad", "algo_id", "zzz"];
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                m.insert((*rng.pick(&keys)).to_string(), wild_json(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

pub(crate) fn shape(rng: &mut Rng) -> Value {
    Value::Array((0..rng.below(4)).map(|_| extreme_number(rng)).collect())
}

/// A call object: mostly the row's own with one to three values set to extremes, sometimes garbage.
pub(crate) fn call_json(rng: &mut Rng, existing: Option<&str>, garbage: bool) -> String {
    match rng.below(12) {
        0 if garbage => return garbage_text(rng),
        1 if garbage => return wild_json(rng, 0).to_string(),
        _ => {}
    }
    let mut v =
        existing.and_then(|s| serde_json::from_str::<Value>(s).ok()).filter(Value::is_object).unwrap_or(json!({}));
    for _ in 0..1 + rng.below(3) {
        let key = *rng.pick(&[
            "mat1",
            "mat2",
            "scale_a",
            "scale_b",
            "scale_result",
            "bias",
            "out",
            "positional_bias",
            "out_dtype_passed",
            "use_fast_accum_passed",
            "unknown_key",
        ]);
        let value = match key {
            "mat1" | "mat2" => {
                let mut m = v.get(key).filter(|x| x.is_object()).cloned().unwrap_or(json!({}));
                match rng.below(5) {
                    0 => m["dtype"] = json!(*rng.pick(DTYPES)),
                    1 => m["layout"] = json!(*rng.pick(&["std", "col", "row", "diagonal", ""])),
                    2 => m["ld_pad"] = extreme_number(rng),
                    3 => m["offset"] = extreme_number(rng),
                    _ => m = wild_json(rng, 1),
                }
                m
            }
            "scale_a" | "scale_b" | "scale_result" => match rng.below(6) {
                0 => Value::Null,
                1 => wild_json(rng, 1),
                _ => json!({
                    "dtype": *rng.pick(DTYPES),
                    "shape": shape(rng),
                    "value": match rng.below(3) {
                        0 => json!(*rng.pick(&["nan", "inf", "-inf", "-0.0", "rowwise", "huge"])),
                        1 => extreme_number(rng),
                        _ => json!(1.0),
                    },
                }),
            },
            "bias" => match rng.below(4) {
                0 => Value::Null,
                1 => wild_json(rng, 1),
                _ => json!({"dtype": *rng.pick(DTYPES), "len": extreme_number(rng)}),
            },
            "out" => match rng.below(5) {
                0 => Value::Null,
                1 => wild_json(rng, 1),
                _ => {
                    let mut o = json!({"dtype": *rng.pick(DTYPES), "shape": shape(rng), "contiguous": rng.one_in(2)});
                    if rng.one_in(2) {
                        o["fill"] = match rng.below(3) {
                            0 => json!(*rng.pick(&["nan", "inf", "-inf"])),
                            _ => extreme_number(rng),
                        };
                    }
                    o
                }
            },
            _ => wild_json(rng, 1),
        };
        v[key] = value;
    }
    v.to_string()
}

pub(crate) fn sha_like(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => wild_json(rng, 2),
        1 => json!("ABCDEF".repeat(11)),
        _ => json!((0..4).map(|_| format!("{:016x}", rng.next())).collect::<String>()),
    }
}

/// An `inputs` object: mostly well formed (with digests that do not match), sometimes broken.
pub(crate) fn inputs_value(rng: &mut Rng) -> String {
    if rng.one_in(6) {
        return if rng.one_in(2) { garbage_text(rng) } else { wild_json(rng, 0).to_string() };
    }
    let class = *rng.pick(&["gaussian", "bits", "split", "all_codes", "subnormal", "special", "nope"]);
    let mut data = json!({"class": class});
    if rng.one_in(2) {
        data["scale"] = match rng.below(4) {
            0 => json!(*rng.pick(&[1e308, -0.0, 1e-300, 0.0, -1.0])),
            1 => json!("nan"),
            2 => Value::Null,
            _ => json!(1.0),
        };
    }
    if rng.one_in(3) {
        data["finite"] = wild_json(rng, 3);
    }
    let generator = *rng.pick(&[GENERATOR_V1, GENERATOR_V1, GENERATOR_V1, "mmaemu-inputs/2", ""]);
    let mut v = json!({
        "spec": {"generator": generator, "seed": rng.next(), "stream": rng.next() >> rng.below(64), "data": data},
        "a_sha256": sha_like(rng),
        "b_sha256": sha_like(rng),
    });
    if rng.one_in(8) {
        v["extra"] = json!(1);
    }
    v.to_string()
}

pub(crate) fn samples_value(rng: &mut Rng) -> String {
    if rng.one_in(5) {
        return if rng.one_in(2) { garbage_text(rng) } else { wild_json(rng, 0).to_string() };
    }
    let n = if rng.one_in(10) { rng.below(100_000) } else { rng.below(5) };
    let index: Vec<Value> = (0..n)
        .map(|_| match rng.below(4) {
            0 => json!(*rng.pick(&[u64::MAX, 1u64 << 62, 1 << 32])),
            1 => json!(-1),
            _ => json!(rng.below(64)),
        })
        .collect();
    let m = if rng.one_in(4) { n + 1 } else { n };
    let bits: Vec<Value> =
        (0..m).map(|_| if rng.one_in(20) { json!(1u64 << 32) } else { json!(rng.next() as u32) }).collect();
    json!({"index": index, "bits": bits}).to_string()
}

pub(crate) const LABELS: &[(&str, &[&str])] = &[
    ("op", &["scaled_mm", "gemm", "accumulator", "mma", "MMA", ""]),
    ("preset", &["ada", "hopper", "b200_mma_sync", "volta", ""]),
    ("profile", &["ada", "hopper", "ada-te", "b200", "h100", "volta"]),
    ("truth", &["hardware", "model", "simulated"]),
    ("fmt_a", &["e4m3", "e5m2", "bfloat16", "float32", "int4", "float8_e4m3fnuz"]),
    ("fmt_b", &["e4m3", "e5m2", "bfloat16", "float16", "float8_e8m0fnu"]),
    ("out_dtype", &["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float64", "int32"]),
    ("split_scheme", &["none", "serial", "pairwise", "contiguous", "unknown", "random"]),
    ("out_select", &["diagonal", "full", ""]),
    ("scope", &["in", "out:bias", "out:", "elsewhere"]),
    ("expected_error", &["ReferenceRejectsError", "UnsupportedFeatureError", "RuntimeError"]),
    ("expected_sha256", &["00", "not hex"]),
    ("gpu", &["RTX 4060", "", "none"]),
    ("id", &[""]),
    ("origin", &[""]),
];

pub(crate) const BINARIES: &[&str] = &["a", "b", "c", "expected"];
pub(crate) const SCALARS_U32: &[&str] = &["scale_a", "scale_b", "scale_result"];
pub(crate) const DIMS: &[&str] = &["batch", "m", "n", "k"];
pub(crate) const ALL_COLUMNS: &[&str] = &[
    "id",
    "op",
    "preset",
    "profile",
    "gpu",
    "truth",
    "fmt_a",
    "fmt_b",
    "batch",
    "m",
    "n",
    "k",
    "a",
    "b",
    "c",
    "scale_a",
    "scale_b",
    "scale_result",
    "out_dtype",
    "fast_accum",
    "split_s",
    "split_scheme",
    "algo",
    "call",
    "out_select",
    "expected",
    "expected_sha256",
    "expected_error",
    "scope",
    "origin",
    "inputs",
    "expected_samples",
    "note",
];
