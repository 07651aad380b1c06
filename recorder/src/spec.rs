//! Sweep specs (TOML): which calls a sweep records, and how. One spec describes a grid: the union of its
//! shape blocks, crossed with formats, out dtypes, accumulation modes, scales, scale_result values,
//! workspaces and input classes. `mmaemu-record heuristics --grid SPEC` reads the same file and uses only
//! the key fields (shapes, formats, out dtypes, fast_accum, workspace, caller).
//!
//! ```toml
//! name = "example"            # row ids are "<name>-<case index>"
//! seed = 42                   # the input generator's seed
//! op = "scaled_mm"            # or "gemm" (rows without torch's argument checks)
//! profile = "hopper"          # the profile rows replay under (default: from the GPU, sm_89 ada, sm_90 hopper)
//! caller = "torch"            # or "transformer-engine"
//! workspace = ["caller"]      # "caller" (torch 1 MiB; TE 32 MiB on sm_90+, 4 MiB before) or bytes: 0, 4194304, ...
//! formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"]]   # (mat1, mat2)
//! out_dtypes = ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"]
//! fast_accum = [false, true]
//! scales = [[1.0, 1.0], [0.5, 2.0]]                # (scale_a, scale_b), rounded to fp32
//! scale_result = ["none", 0.5]                     # "none": not passed
//! split_scheme = "auto"       # "auto" (the preset's customOption rule), "unknown", or a scheme name
//! chunk_rows = 64             # cases per chunk (the unit of atomic writes and of resuming)
//! grid_chunk_rows = 4096      # grid keys per chunk of `mmaemu-record heuristics`
//! runs = 2                    # calls per case (>= 2): a difference between runs is recorded and reported
//!
//! [storage]
//! inline_max_bytes = 4194304  # a + b + result up to this: stored; above: generator spec + sha256 + samples
//! samples = 16                # result elements kept for rows that store only the sha256
//!
//! [[shapes]]                  # a grid: m x n x k
//! m = [1, 16, 100]            # a list,
//! n = { from = 16, to = 64, step = 16 }   # an inclusive range,
//! k = { pow2 = [64, 4096] }   # or the powers of two in [lo, hi]; a single number is a list of one
//!
//! [[shapes]]
//! mnk = [[16, 32, 4096], [128, 256, 8192]]   # explicit triples
//!
//! [[inputs]]                  # data classes (see mmaemu_datasets::inputs)
//! class = "gaussian"
//! scale = 1.0
//! ```
//!
//! Cases are numbered in a fixed order (shape, input, formats, out dtype, fast_accum, scales, scale_result,
//! workspace; the first varies slowest), so a case index names the same call on every run. Duplicate
//! shapes are recorded once. Calls torch rejects before cuBLASLt (K or N not a multiple of 16, e5m2 x
//! e5m2, zero sizes) keep their index but are skipped.

use crate::descriptor::{torch_rejects_before_cublas, Caller};
use mmaemu_datasets::inputs::{DataClass, InputSpec, GENERATOR_V1};
use mmaemu_model::{Format, OutDtype, Profile, Scheme};
use serde::Deserialize;
use std::collections::HashSet;

/// The op recorded rows replay as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// The whole `torch._scaled_mm` call of the row's profile.
    #[default]
    ScaledMm,
    /// The numerics without torch's argument checks.
    Gemm,
}

/// One dimension of a shape block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a dimension: a number, a list of numbers, { from, to, step } or { pow2 = [lo, hi] }"
)]
pub enum Dim {
    /// One value.
    One(u64),
    /// A list of values.
    List(Vec<u64>),
    /// `{ from, to, step }`: from, from + step, ... <= to.
    Range { from: u64, to: u64, step: u64 },
    /// `{ pow2 = [lo, hi] }`: the powers of two in [lo, hi].
    Pow2 { pow2: [u64; 2] },
}

impl Dim {
    /// The values, in order.
    pub fn values(&self) -> Result<Vec<u64>, String> {
        match self {
            Dim::One(v) => Ok(vec![*v]),
            Dim::List(v) => Ok(v.clone()),
            Dim::Range { from, to, step } => {
                if *step == 0 {
                    return Err("a range needs step >= 1".into());
                }
                if to < from {
                    return Err(format!("range from {from} to {to} is empty"));
                }
                let count = (to - from) / step + 1;
                if count > 1 << 20 {
                    return Err(format!("range from {from} to {to} step {step} has {count} values (limit 2^20)"));
                }
                Ok((0..count).map(|i| from + i * step).collect())
            }
            Dim::Pow2 { pow2: [lo, hi] } => {
                let mut v = Vec::new();
                let mut p = 1u64;
                while p <= *hi {
                    if p >= *lo {
                        v.push(p);
                    }
                    match p.checked_mul(2) {
                        Some(q) => p = q,
                        None => break,
                    }
                }
                if v.is_empty() {
                    return Err(format!("no power of two in [{lo}, {hi}]"));
                }
                Ok(v)
            }
        }
    }
}

/// One `[[shapes]]` block: a grid m x n x k, or explicit triples.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a shape block: m, n and k (each a number, a list, { from, to, step } or { pow2 = [lo, hi] }), \
                 or mnk = [[m, n, k], ...], and nothing else"
)]
pub enum ShapeBlock {
    /// The cartesian product of three dimensions.
    Grid { m: Dim, n: Dim, k: Dim },
    /// Explicit (m, n, k) triples.
    List { mnk: Vec<[u64; 3]> },
}

/// A workspace entry: `"caller"` or a byte count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(untagged)]
pub enum WorkspaceSel {
    /// A byte count.
    Bytes(u64),
    /// `"caller"`: the caller's default on the GPU.
    Named(CallerWorkspace),
}

/// The only named workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerWorkspace {
    /// The caller's default workspace.
    Caller,
}

impl WorkspaceSel {
    /// The byte count on a GPU of compute capability `cap`.
    pub fn bytes(self, caller: Caller, cap: (u32, u32)) -> u64 {
        match self {
            WorkspaceSel::Bytes(b) => b,
            WorkspaceSel::Named(CallerWorkspace::Caller) => caller.default_workspace(cap),
        }
    }
}

/// A scale_result entry: `"none"` (not passed) or a value.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScaleResultSel {
    /// A value (rounded to fp32).
    Value(f64),
    /// `"none"`.
    Named(NoneWord),
}

/// The word `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoneWord {
    /// Not passed.
    None,
}

impl ScaleResultSel {
    /// The fp32 value, None when not passed.
    pub fn value(self) -> Option<f32> {
        match self {
            ScaleResultSel::Value(v) => Some(v as f32),
            ScaleResultSel::Named(NoneWord::None) => None,
        }
    }
}

/// `[storage]`: when rows ship operands and results, and when only their hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Storage {
    /// a + b + result bytes up to this are stored in the row.
    pub inline_max_bytes: u64,
    /// Result elements kept for rows above the limit.
    pub samples: usize,
}

impl Default for Storage {
    fn default() -> Self {
        Storage { inline_max_bytes: 4 << 20, samples: 16 }
    }
}

fn default_seed() -> u64 {
    1
}
fn default_workspace() -> Vec<WorkspaceSel> {
    vec![WorkspaceSel::Named(CallerWorkspace::Caller)]
}
fn default_formats() -> Vec<[String; 2]> {
    vec![["e4m3".into(), "e4m3".into()]]
}
fn default_out() -> Vec<String> {
    vec!["float32".into()]
}
fn default_fast() -> Vec<bool> {
    vec![false]
}
fn default_scales() -> Vec<[f64; 2]> {
    vec![[1.0, 1.0]]
}
fn default_scale_result() -> Vec<ScaleResultSel> {
    vec![ScaleResultSel::Named(NoneWord::None)]
}
fn default_inputs() -> Vec<DataClass> {
    vec![DataClass::Gaussian { scale: 1.0 }]
}
fn default_split_scheme() -> String {
    "auto".into()
}
fn default_chunk_rows() -> usize {
    64
}
fn default_runs() -> usize {
    2
}
fn default_grid_chunk_rows() -> usize {
    4096
}

/// A sweep spec as written in TOML (see the module documentation).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The sweep's name (row ids are `<name>-<index>`).
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// The input generator's seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The op of the recorded rows.
    #[serde(default)]
    pub op: OpKind,
    /// The profile rows replay under.
    #[serde(default)]
    pub profile: Option<String>,
    /// The preset rows are evidence for (default: the profile's).
    #[serde(default)]
    pub preset: Option<String>,
    /// `torch` or `transformer-engine`.
    #[serde(default)]
    pub caller: Option<String>,
    /// Workspaces.
    #[serde(default = "default_workspace")]
    pub workspace: Vec<WorkspaceSel>,
    /// Shape blocks (their union).
    pub shapes: Vec<ShapeBlock>,
    /// (mat1, mat2) formats.
    #[serde(default = "default_formats")]
    pub formats: Vec<[String; 2]>,
    /// Out dtypes (torch names or short aliases).
    #[serde(default = "default_out")]
    pub out_dtypes: Vec<String>,
    /// use_fast_accum values.
    #[serde(default = "default_fast")]
    pub fast_accum: Vec<bool>,
    /// (scale_a, scale_b) pairs.
    #[serde(default = "default_scales")]
    pub scales: Vec<[f64; 2]>,
    /// scale_result values.
    #[serde(default = "default_scale_result")]
    pub scale_result: Vec<ScaleResultSel>,
    /// Input data classes.
    #[serde(default = "default_inputs")]
    pub inputs: Vec<DataClass>,
    /// `auto`, `unknown`, or a scheme name.
    #[serde(default = "default_split_scheme")]
    pub split_scheme: String,
    /// Storage limits.
    #[serde(default)]
    pub storage: Storage,
    /// Cases per chunk.
    #[serde(default = "default_chunk_rows")]
    pub chunk_rows: usize,
    /// Calls per case.
    #[serde(default = "default_runs")]
    pub runs: usize,
    /// Grid keys per chunk of `mmaemu-record heuristics`.
    #[serde(default = "default_grid_chunk_rows")]
    pub grid_chunk_rows: usize,
}

/// How the split scheme of a recorded split is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemePolicy {
    /// The preset's customOption rule (ada: the RTX 4060 table's, hopper: contiguous), else `unknown`.
    Auto,
    /// Always `unknown` (rows for split-K rule fitting).
    Unknown,
    /// This scheme for every split.
    Fixed(Scheme),
}

impl SchemePolicy {
    /// The `split_scheme` column of a split of `s` parts with customOption `custom` on `preset`.
    pub fn name(self, preset: &str, s: i64, custom: i64) -> &'static str {
        if s <= 1 {
            return "none";
        }
        match self {
            SchemePolicy::Fixed(x) => x.name(),
            SchemePolicy::Unknown => "unknown",
            SchemePolicy::Auto => auto_scheme(preset, custom).map_or("unknown", Scheme::name),
        }
    }
}

/// The customOption -> scheme rule of a preset's recorded table (behaviour.md §6.4): ada (the RTX 4060
/// table) 1 -> pairwise, any other -> serial; hopper (the H100 PCIe table) -> contiguous. None for a preset
/// without a recorded rule.
pub fn auto_scheme(preset: &str, custom: i64) -> Option<Scheme> {
    match preset {
        "ada" => Some(if custom == 1 { Scheme::Pairwise } else { Scheme::Serial }),
        "hopper" => Some(Scheme::Contiguous),
        _ => None,
    }
}

/// A parsed and checked spec, ready to enumerate cases.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The spec as written.
    pub spec: SweepSpec,
    /// Unique shapes, in order.
    pub shapes: Vec<(usize, usize, usize)>,
    /// Parsed formats.
    pub formats: Vec<(Format, Format)>,
    /// Parsed out dtypes.
    pub outs: Vec<OutDtype>,
    /// The caller.
    pub caller: Caller,
    /// The split scheme policy.
    pub scheme: SchemePolicy,
    /// sha256 of the spec file's bytes.
    pub sha256: String,
}

/// One call of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The case index (stable across runs).
    pub index: u64,
    /// Torch's M.
    pub m: usize,
    /// Torch's N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// mat1's format.
    pub fmt_a: Format,
    /// mat2's format.
    pub fmt_b: Format,
    /// The out dtype.
    pub out: OutDtype,
    /// use_fast_accum.
    pub fast: bool,
    /// scale_a (fp32).
    pub scale_a: f32,
    /// scale_b (fp32).
    pub scale_b: f32,
    /// scale_result (fp32), if passed.
    pub scale_result: Option<f32>,
    /// The workspace entry.
    pub workspace: WorkspaceSel,
    /// The generator spec of the operands.
    pub inputs: InputSpec,
    /// Why torch would not call cuBLASLt, if it would not.
    pub skip: Option<String>,
}

impl Sweep {
    /// Parses and checks a spec; `sha256` is the file's.
    pub fn parse(text: &str, sha256: String) -> Result<Sweep, String> {
        let spec: SweepSpec = toml::from_str(text).map_err(|e| e.to_string())?;
        Sweep::new(spec, sha256)
    }

    /// Checks a parsed spec.
    pub fn new(spec: SweepSpec, sha256: String) -> Result<Sweep, String> {
        if spec.name.is_empty() || !spec.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
            return Err(format!("name {:?} must be non-empty ASCII letters, digits, '-', '_' or '.'", spec.name));
        }
        if spec.shapes.is_empty() {
            return Err("no [[shapes]]".into());
        }
        let mut shapes = Vec::new();
        let mut seen = HashSet::new();
        for (i, block) in spec.shapes.iter().enumerate() {
            let triples: Vec<(u64, u64, u64)> = match block {
                ShapeBlock::Grid { m, n, k } => {
                    let (ms, ns, ks) = (
                        m.values().map_err(|e| format!("shapes[{i}].m: {e}"))?,
                        n.values().map_err(|e| format!("shapes[{i}].n: {e}"))?,
                        k.values().map_err(|e| format!("shapes[{i}].k: {e}"))?,
                    );
                    let count = ms.len() * ns.len() * ks.len();
                    if count > 1 << 22 {
                        return Err(format!("shapes[{i}] has {count} shapes (limit 2^22)"));
                    }
                    let mut t = Vec::with_capacity(count);
                    for &m in &ms {
                        for &n in &ns {
                            for &k in &ks {
                                t.push((m, n, k));
                            }
                        }
                    }
                    t
                }
                ShapeBlock::List { mnk } => mnk.iter().map(|x| (x[0], x[1], x[2])).collect(),
            };
            for (m, n, k) in triples {
                const LIMIT: u64 = 1 << 21;
                if m >= LIMIT || n >= LIMIT || k >= LIMIT {
                    return Err(format!("shape ({m}, {n}, {k}): dimensions must be below 2^21"));
                }
                let t = (m as usize, n as usize, k as usize);
                if seen.insert(t) {
                    shapes.push(t);
                }
            }
        }
        if shapes.len() > 1 << 22 {
            return Err(format!("{} shapes (limit 2^22)", shapes.len()));
        }
        let formats = spec
            .formats
            .iter()
            .map(|[a, b]| match (Format::from_name(a), Format::from_name(b)) {
                (Some(a), Some(b)) => Ok((a, b)),
                _ => Err(format!("formats: [{a:?}, {b:?}] is not a pair of e4m3 / e5m2")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outs = spec
            .out_dtypes
            .iter()
            .map(|o| {
                OutDtype::from_name(o).ok_or_else(|| {
                    format!("out_dtypes: {o:?} is not one of float32, bfloat16, float16, float8_e4m3fn, float8_e5m2")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (what, empty) in [
            ("formats", formats.is_empty()),
            ("out_dtypes", outs.is_empty()),
            ("fast_accum", spec.fast_accum.is_empty()),
            ("scales", spec.scales.is_empty()),
            ("scale_result", spec.scale_result.is_empty()),
            ("workspace", spec.workspace.is_empty()),
            ("inputs", spec.inputs.is_empty()),
        ] {
            if empty {
                return Err(format!("{what} is empty"));
            }
        }
        for s in &spec.scales {
            if s.iter().any(|x| !x.is_finite()) {
                return Err(format!("scales: {s:?} are not finite"));
            }
        }
        for d in &spec.inputs {
            d.check()?;
        }
        let caller = match &spec.caller {
            None => Caller::Torch,
            Some(c) => Caller::parse(c).ok_or_else(|| format!("caller {c:?} is not torch or transformer-engine"))?,
        };
        let scheme = match spec.split_scheme.as_str() {
            "auto" => SchemePolicy::Auto,
            "unknown" => SchemePolicy::Unknown,
            s => match Scheme::from_name(s) {
                Some(Scheme::None) | None => {
                    return Err(format!("split_scheme {s:?} is not auto, unknown, serial, pairwise or contiguous"))
                }
                Some(x) => SchemePolicy::Fixed(x),
            },
        };
        if let Some(p) = &spec.profile {
            Profile::by_name(p).map_err(|e| format!("profile: {e}"))?;
        }
        if let Some(p) = &spec.preset {
            mmaemu_model::Preset::by_name(p).map_err(|e| format!("preset: {e}"))?;
        }
        if spec.chunk_rows == 0 || spec.grid_chunk_rows == 0 {
            return Err("chunk_rows and grid_chunk_rows must be at least 1".into());
        }
        if spec.runs < 2 {
            return Err("runs must be at least 2 (each call runs twice to check determinism)".into());
        }
        Ok(Sweep { spec, shapes, formats, outs, caller, scheme, sha256 })
    }

    /// The sizes of the mixed-radix case index, slowest first.
    fn radices(&self) -> [usize; 8] {
        let s = &self.spec;
        [
            self.shapes.len(),
            s.inputs.len(),
            self.formats.len(),
            self.outs.len(),
            s.fast_accum.len(),
            s.scales.len(),
            s.scale_result.len(),
            s.workspace.len(),
        ]
    }

    /// Number of cases (skipped ones included).
    pub fn case_count(&self) -> u64 {
        self.radices().iter().fold(1u64, |a, &r| a.saturating_mul(r as u64))
    }

    /// Case `index` (< [`Sweep::case_count`]).
    pub fn case(&self, index: u64) -> Case {
        let radices = self.radices();
        let mut digits = [0usize; 8];
        let mut rest = index;
        for (d, &r) in digits.iter_mut().zip(radices.iter()).rev() {
            *d = (rest % r as u64) as usize;
            rest /= r as u64;
        }
        let [shape, input, fmts, out, fast, scales, sr, ws] = digits;
        let s = &self.spec;
        let (m, n, k) = self.shapes[shape];
        let (fmt_a, fmt_b) = self.formats[fmts];
        // Operands depend on the shape and the input class only, so every setting of a shape sees the
        // same data (and the Parquet dictionary stores it once).
        let stream = (shape * s.inputs.len() + input) as u64;
        Case {
            index,
            m,
            n,
            k,
            fmt_a,
            fmt_b,
            out: self.outs[out],
            fast: s.fast_accum[fast],
            scale_a: s.scales[scales][0] as f32,
            scale_b: s.scales[scales][1] as f32,
            scale_result: s.scale_result[sr].value(),
            workspace: s.workspace[ws],
            inputs: InputSpec { generator: GENERATOR_V1.into(), seed: s.seed, stream, data: s.inputs[input].clone() },
            skip: torch_rejects_before_cublas(m, n, k, fmt_a, fmt_b),
        }
    }
}

/// A heuristic-grid key: torch's problem and the settings the heuristic sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GridKey {
    /// Torch's M.
    pub m: usize,
    /// Torch's N.
    pub n: usize,
    /// K.
    pub k: usize,
    /// mat1's format.
    pub fmt_a: Format,
    /// mat2's format.
    pub fmt_b: Format,
    /// The out dtype.
    pub out: OutDtype,
    /// use_fast_accum.
    pub fast: bool,
    /// The workspace entry.
    pub workspace: WorkspaceSel,
}

impl Sweep {
    /// Number of grid keys (the heuristic grid ignores inputs, scales and scale_result).
    pub fn grid_count(&self) -> u64 {
        let s = &self.spec;
        [self.shapes.len(), self.formats.len(), self.outs.len(), s.fast_accum.len(), s.workspace.len()]
            .iter()
            .fold(1u64, |a, &r| a.saturating_mul(r as u64))
    }

    /// Grid key `index` (< [`Sweep::grid_count`]), and why torch would not call cuBLASLt for it.
    pub fn grid_key(&self, index: u64) -> (GridKey, Option<String>) {
        let s = &self.spec;
        let radices = [self.shapes.len(), self.formats.len(), self.outs.len(), s.fast_accum.len(), s.workspace.len()];
        let mut digits = [0usize; 5];
        let mut rest = index;
        for (d, &r) in digits.iter_mut().zip(radices.iter()).rev() {
            *d = (rest % r as u64) as usize;
            rest /= r as u64;
        }
        let [shape, fmts, out, fast, ws] = digits;
        let (m, n, k) = self.shapes[shape];
        let (fmt_a, fmt_b) = self.formats[fmts];
        let key = GridKey {
            m,
            n,
            k,
            fmt_a,
            fmt_b,
            out: self.outs[out],
            fast: s.fast_accum[fast],
            workspace: s.workspace[ws],
        };
        (key, torch_rejects_before_cublas(m, n, k, fmt_a, fmt_b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
        name = "t"
        seed = 7
        formats = [["e4m3", "e4m3"], ["e5m2", "e5m2"]]
        out_dtypes = ["bf16", "float8_e4m3fn"]
        fast_accum = [false, true]
        scale_result = ["none", 0.5]
        workspace = ["caller", 0]
        [[shapes]]
        m = [1, 16]
        n = { from = 16, to = 48, step = 16 }
        k = { pow2 = [32, 64] }
        [[shapes]]
        mnk = [[1, 16, 32], [3, 17, 32]]
        [[inputs]]
        class = "gaussian"
        scale = 2.0
        [[inputs]]
        class = "all_codes"
        finite = true
    "#;

    #[test]
    fn parses_and_enumerates() {
        let s = Sweep::parse(SPEC, "x".into()).unwrap();
        // 2 * 3 * 2 grid shapes + 1 new triple (the other is a duplicate).
        assert_eq!(s.shapes.len(), 13);
        assert_eq!(s.shapes[12], (3, 17, 32));
        // shapes x inputs x formats x out dtypes x fast x scales (1) x scale_result x workspaces
        assert_eq!(s.case_count(), 13 * 2 * 2 * 2 * 2 * 2 * 2);
        let c0 = s.case(0);
        assert_eq!((c0.m, c0.n, c0.k), (1, 16, 32));
        assert_eq!((c0.fmt_a, c0.fmt_b, c0.out, c0.fast), (Format::E4m3, Format::E4m3, OutDtype::BFloat16, false));
        assert_eq!(c0.scale_result, None);
        assert_eq!(c0.workspace, WorkspaceSel::Named(CallerWorkspace::Caller));
        assert_eq!(c0.inputs.data, DataClass::Gaussian { scale: 2.0 });
        let c1 = s.case(1);
        assert_eq!(c1.workspace, WorkspaceSel::Bytes(0));
        assert_eq!(c1.inputs.stream, c0.inputs.stream);
        let last = s.case(s.case_count() - 1);
        assert_eq!((last.m, last.n, last.k), (3, 17, 32));
        assert!(last.skip.is_some(), "e5m2 x e5m2 and N = 17 are rejected by torch");
        assert_eq!(s.grid_count(), 13 * 2 * 2 * 2 * 2);
        assert_eq!(s.caller, Caller::Torch);
        assert_eq!(s.scheme, SchemePolicy::Auto);
    }

    #[test]
    fn refuses_bad_specs() {
        for (text, needle) in [
            ("name = \"t\"\n", "shapes"),
            ("name = \"t\"\nformats = [[\"e4m3\", \"fp16\"]]\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "e4m3 / e5m2"),
            ("name = \"t\"\nout_dtypes = [\"int8\"]\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "out_dtypes"),
            ("name = \"t\"\ncaller = \"jax\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "caller"),
            ("name = \"t\"\nruns = 1\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "runs"),
            ("name = \"t\"\nbogus = 1\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "bogus"),
            ("name = \"t\"\n[[shapes]]\nm = 1\nn = { from = 16, to = 8, step = 1 }\nk = 16\n", "empty"),
            ("name = \"t\"\nprofile = \"h200\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "profile"),
            ("name = \"t\"\nsplit_scheme = \"none\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "split_scheme"),
            ("name = \"a b\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "name"),
            ("name = \"t\"\n[[shapes]]\nm = 1\nn = 16\nk = 4194304\n", "2^21"),
            ("name = \"t\"\n[[inputs]]\nclass = \"perlin\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "perlin"),
            ("name = [\n", ""),
        ] {
            let err = Sweep::parse(text, String::new()).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
