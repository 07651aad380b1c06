//! Sweep specs (TOML): which calls a sweep records, and how; or which keys a heuristic grid queries. A
//! spec says which it is (`kind`), and the other command refuses it. One spec describes a grid: the union
//! of its shape blocks, crossed with formats, out dtypes, accumulation modes, scales, scale_result values,
//! workspaces, input classes and operand layouts. Field types: [`fields`]; case numbering: [`cases`].
//!
//! ```toml
//! kind = "sweep"              # "sweep" (mmaemu-record sweep) or "grid" (mmaemu-record heuristics --grid)
//! name = "example"            # row ids are "<name>-<case index>"
//! seed = 42                   # the input generator's seed
//! op = "scaled_mm"            # or "gemm" (rows without torch's argument checks)
//! profile = "hopper"          # the profile rows replay under (default: from the GPU, sm_89 ada, sm_90 hopper)
//! caller = "torch-2.7"        # torch-2.7 (= "torch"), torch-2.10, torch-2.10-nodscale, transformer-engine
//! workspace = ["caller"]      # "caller" (torch 1 MiB; TE 32 MiB on sm_90+, 4 MiB before) or bytes: 0, 4194304, ...
//! formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"]]   # (mat1, mat2)
//! out_dtypes = ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"]
//! fast_accum = [false, true]
//! scales = [[1.0, 1.0], [0.5, 2.0]]                # (scale_a, scale_b), rounded to fp32
//! scaling = ["tensorwise", "rowwise"]              # scale recipes (crate::scaling): tensorwise, rowwise,
//!                                                  # blockwise_1x128, blockwise_1x128_128x128, mxfp8
//! scale_result = ["none", 0.5]                     # "none": not passed
//! split_scheme = "auto"       # "auto" (the preset's customOption rule), "unknown", or a scheme name
//! chunk_rows = 64             # cases per chunk (the unit of atomic writes, resuming and shards)
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
//!
//! [[layouts]]                 # operand layouts, as torch tensors hold them (default: the standard call)
//! mat1 = { layout = "std", ld_pad = 16, offset = 0 }    # std (row-major) or col; ld_pad, offset in elements
//! mat2 = { layout = "std", ld_pad = 0, offset = 32 }    # std (the transpose of a row-major [n, k]) or row
//! ```
//!
//! A grid (`kind = "grid"`) has the key fields only: name, description, profile (the simulated device's),
//! caller, workspace, shapes, formats, out_dtypes, fast_accum, and `grid_chunk_rows` (keys per chunk,
//! default 4096); a sweep has every field but `grid_chunk_rows`.
//!
//! Cases are numbered in a fixed order (shape, input, formats, out dtype, fast_accum, scales, scaling,
//! scale_result, workspace, layout; the first varies slowest), so a case index names the same call on every run.
//! Duplicate shapes are recorded once. Calls torch rejects before cuBLASLt (K or N not a multiple of 16,
//! e5m2 x e5m2, zero sizes, a column-major mat1 or a row-major mat2) and settings the caller cannot pass
//! (a D scale for a 16/32-bit output through Transformer Engine; scale_result on an FP8 output through
//! torch-2.10-nodscale, which drops it) keep their index but are skipped.
//!
//! `scaling` other than `tensorwise`: [`crate::scaling`] (modes, scale tensors, gates, `ScaleRecipe::scale_pair`:
//! the `scales` pairs each recipe records); `nvfp4`, `op = "gemm"` and transformer-engine refuse it.

pub mod cases;
pub mod fields;

pub use cases::{Case, GridKey};
pub use fields::{
    CallerWorkspace, Dim, LayoutSpec, NoneWord, OpKind, OperandSpec, ScaleResultSel, ShapeBlock, Storage, WorkspaceSel,
};

use crate::caller::Caller;
use crate::geometry::Geometry;
use crate::scaling::ScaleRecipe;
use mmaemu_datasets::inputs::DataClass;
use mmaemu_model::{Format, OutDtype, Scheme, Table};
use serde::Deserialize;
use std::collections::HashSet;

/// Which command a spec is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecKind {
    /// `mmaemu-record sweep SPEC`: GEMMs recorded into a recording.
    Sweep,
    /// `mmaemu-record heuristics --grid SPEC`: heuristic queries into a split-K table.
    Grid,
}

impl SpecKind {
    /// `sweep` or `grid`.
    pub fn name(self) -> &'static str {
        match self {
            SpecKind::Sweep => "sweep",
            SpecKind::Grid => "grid",
        }
    }
}

/// The fields only a sweep has.
const SWEEP_ONLY: &[&str] = &[
    "seed",
    "op",
    "preset",
    "scales",
    "scaling",
    "scale_result",
    "inputs",
    "split_scheme",
    "storage",
    "chunk_rows",
    "runs",
    "layouts",
];
/// The fields only a grid has.
const GRID_ONLY: &[&str] = &["grid_chunk_rows"];

/// A sweep spec as written in TOML (see the module documentation).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// `sweep` or `grid`: the command the spec is for.
    pub kind: SpecKind,
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
    /// The caller ([`Caller::parse`]).
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
    /// Scale recipes ([`ScaleRecipe`]).
    #[serde(default = "default_scaling")]
    pub scaling: Vec<ScaleRecipe>,
    /// scale_result values.
    #[serde(default = "default_scale_result")]
    pub scale_result: Vec<ScaleResultSel>,
    /// Input data classes.
    #[serde(default = "default_inputs")]
    pub inputs: Vec<DataClass>,
    /// `auto`, `unknown`, or a scheme name.
    #[serde(default = "default_split_scheme")]
    pub split_scheme: String,
    /// Operand layouts (default: the standard call).
    #[serde(default)]
    pub layouts: Vec<LayoutSpec>,
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
fn default_scaling() -> Vec<ScaleRecipe> {
    vec![ScaleRecipe::Tensorwise]
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
    /// The `split_scheme` column of a split of `s` parts with customOption `custom` under a profile whose split-K
    /// table is `table` (auto: the table's scheme of that customOption; `unknown` without a table, or where the
    /// scheme is a rule the recording format has no word for: the profile's table decides it at replay).
    pub fn name(self, table: Option<Table>, s: i64, custom: i64) -> std::borrow::Cow<'static, str> {
        if s <= 1 {
            return "none".into();
        }
        let name = match self {
            SchemePolicy::Fixed(x) => x.name(),
            SchemePolicy::Unknown => "unknown".into(),
            SchemePolicy::Auto => table.and_then(|t| t.custom_scheme(custom)).map_or("unknown".into(), Scheme::name),
        };
        if mmaemu_datasets::SPLIT_SCHEMES.contains(&name.as_ref()) {
            name
        } else {
            "unknown".into()
        }
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
    /// The caller (the spec's, or the command line's through [`Sweep::set_caller`]).
    pub caller: Caller,
    /// The operand layouts (the standard call when the spec has none).
    pub layouts: Vec<Geometry>,
    /// The split scheme policy.
    pub scheme: SchemePolicy,
    /// sha256 of the spec file's bytes.
    pub sha256: String,
}

impl Sweep {
    /// Parses and checks a spec; `sha256` is the file's.
    pub fn parse(text: &str, sha256: String) -> Result<Sweep, String> {
        let spec: SweepSpec = toml::from_str(text).map_err(|e| e.to_string())?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        let (own, other) = match spec.kind {
            SpecKind::Sweep => (SpecKind::Sweep, GRID_ONLY),
            SpecKind::Grid => (SpecKind::Grid, SWEEP_ONLY),
        };
        if let Some(key) = other.iter().find(|k| table.contains_key(**k)) {
            return Err(format!("`{key}` is not a field of a {} spec (kind = \"{}\")", own.name(), own.name()));
        }
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
            ("scaling", spec.scaling.is_empty()),
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
            None => Caller::Torch27,
            Some(c) => Caller::parse(c).ok_or_else(|| format!("caller {c:?} is not {}", Caller::SPELLINGS))?,
        };
        let layouts = if spec.layouts.is_empty() {
            vec![Geometry::STANDARD]
        } else {
            spec.layouts
                .iter()
                .enumerate()
                .map(|(i, l)| l.geometry().map_err(|e| format!("layouts[{i}]: {e}")))
                .collect::<Result<Vec<_>, _>>()?
        };
        if let Some(why) = spec.scaling.iter().find_map(|r| r.refusal()) {
            return Err(why);
        }
        let recipes = spec.scaling.iter().any(|r| *r != ScaleRecipe::Tensorwise);
        if spec.op == OpKind::Gemm && (recipes || layouts.iter().any(|g| !g.is_standard())) {
            return Err("op = \"gemm\" rows have no call object: layouts and scaling need op = \"scaled_mm\"".into());
        }
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
            mmaemu_api::catalogue().profile(p).map_err(|e| format!("profile: {e}"))?;
        }
        if let Some(p) = &spec.preset {
            mmaemu_api::catalogue().preset(p).map_err(|e| format!("preset: {e}"))?;
        }
        if spec.chunk_rows == 0 || spec.grid_chunk_rows == 0 {
            return Err("chunk_rows and grid_chunk_rows must be at least 1".into());
        }
        if spec.runs < 2 {
            return Err("runs must be at least 2 (each call runs twice to check determinism)".into());
        }
        let mut sweep = Sweep { spec, shapes, formats, outs, caller, layouts, scheme, sha256 };
        sweep.set_caller(caller)?;
        Ok(sweep)
    }

    /// The spec's kind.
    pub fn kind(&self) -> SpecKind {
        self.spec.kind
    }

    /// Makes the calls as `caller` (the command line's `--caller`), or says why the spec's calls cannot be
    /// made that way: Transformer Engine passes contiguous operands (TE 2.3 `CanonicalizeGemmInput`: lda
    /// = ldb = k), so padded or transposed layouts are refused; storage offsets are kept.
    pub fn set_caller(&mut self, caller: Caller) -> Result<(), String> {
        if caller == Caller::TransformerEngine {
            if let Some(r) = self.spec.scaling.iter().find(|r| **r != ScaleRecipe::Tensorwise) {
                return Err(format!(
                    "caller transformer-engine is recorded with tensor-wise scales only; scaling {:?} is a torch call",
                    r.word()
                ));
            }
            if let Some(g) = self.layouts.iter().find(|g| !g.is_contiguous()) {
                return Err(format!(
                    "caller transformer-engine passes contiguous operands only (lda = ldb = k); layout {} is not",
                    g.describe()
                ));
            }
        }
        self.caller = caller;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
        kind = "sweep"
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
        let p0 = c0.problem;
        assert_eq!((p0.m, p0.n, p0.k), (1, 16, 32));
        assert_eq!((p0.fa, p0.fb, p0.out, p0.fast), (Format::E4m3, Format::E4m3, OutDtype::BFloat16, false));
        assert_eq!(c0.scale_result, None);
        assert_eq!(c0.workspace, WorkspaceSel::Named(CallerWorkspace::Caller));
        assert_eq!(c0.inputs.data, DataClass::Gaussian { scale: 2.0 });
        let c1 = s.case(1);
        assert_eq!(c1.workspace, WorkspaceSel::Bytes(0));
        assert_eq!(c1.inputs.stream, c0.inputs.stream);
        let last = s.case(s.case_count() - 1);
        assert_eq!((last.problem.m, last.problem.n, last.problem.k), (3, 17, 32));
        assert!(last.skip.is_some(), "e5m2 x e5m2 and N = 17 are rejected by torch");
        assert_eq!(s.grid_count(), 13 * 2 * 2 * 2 * 2);
        assert_eq!(s.caller, Caller::Torch27);
        assert_eq!(s.scheme, SchemePolicy::Auto);
    }

    #[test]
    fn refuses_bad_specs() {
        for (text, needle) in [
            ("kind = \"sweep\"\nname = \"t\"\n", "shapes"),
            (
                "kind = \"sweep\"\nname = \"t\"\nformats = [[\"e4m3\", \"fp16\"]]\n[[shapes]]\nm = 1\nn = 16\nk = 16\n",
                "e4m3 / e5m2",
            ),
            (
                "kind = \"sweep\"\nname = \"t\"\nout_dtypes = [\"int8\"]\n[[shapes]]\nm = 1\nn = 16\nk = 16\n",
                "out_dtypes",
            ),
            ("kind = \"sweep\"\nname = \"t\"\ncaller = \"jax\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "caller"),
            ("kind = \"sweep\"\nname = \"t\"\nruns = 1\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "runs"),
            ("kind = \"sweep\"\nname = \"t\"\nbogus = 1\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "bogus"),
            (
                "kind = \"sweep\"\nname = \"t\"\n[[shapes]]\nm = 1\nn = { from = 16, to = 8, step = 1 }\nk = 16\n",
                "empty",
            ),
            ("kind = \"sweep\"\nname = \"t\"\nprofile = \"h200\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "profile"),
            (
                "kind = \"sweep\"\nname = \"t\"\nsplit_scheme = \"none\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n",
                "split_scheme",
            ),
            ("kind = \"sweep\"\nname = \"a b\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n", "name"),
            ("kind = \"sweep\"\nname = \"t\"\n[[shapes]]\nm = 1\nn = 16\nk = 4194304\n", "2^21"),
            (
                "kind = \"sweep\"\nname = \"t\"\n[[inputs]]\nclass = \"perlin\"\n[[shapes]]\nm = 1\nn = 16\nk = 16\n",
                "perlin",
            ),
            ("name = [\n", ""),
        ] {
            let err = Sweep::parse(text, String::new()).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn kinds_keep_their_fields() {
        let grid = "kind = \"grid\"\nname = \"g\"\ngrid_chunk_rows = 8\n[[shapes]]\nm = 1\nn = 16\nk = 16\n";
        assert_eq!(Sweep::parse(grid, String::new()).unwrap().kind(), SpecKind::Grid);
        for (text, needle) in [
            (grid.replace("grid_chunk_rows = 8", "runs = 3"), "`runs` is not a field of a grid spec"),
            (grid.replace("kind = \"grid\"", "kind = \"sweep\""), "`grid_chunk_rows` is not a field of a sweep"),
            (grid.replace("kind = \"grid\"\n", ""), "kind"),
            (grid.replace("\"grid\"", "\"table\""), "table"),
        ] {
            let err = Sweep::parse(&text, String::new()).unwrap_err();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn layouts_are_the_fastest_radix_and_checked_against_the_caller() {
        let text = "kind = \"sweep\"\nname = \"l\"\n[[shapes]]\nmnk = [[16, 32, 64]]\n[[layouts]]\n\
                    [[layouts]]\nmat1 = { ld_pad = 16 }\n[[layouts]]\nmat2 = { layout = \"row\" }\n\
                    [[layouts]]\nmat2 = { offset = 16 }\n";
        let mut s = Sweep::parse(text, String::new()).unwrap();
        assert_eq!(s.case_count(), 4);
        assert!(s.case(0).geometry.is_standard() && s.case(0).skip.is_none());
        assert_eq!(s.case(1).geometry.mat1.ld_pad, 16);
        assert!(s.case(2).skip.as_deref().unwrap().contains("mat2 is not column-major"));
        assert_eq!(s.case(3).geometry.mat2.offset, 16);
        let err = s.set_caller(Caller::TransformerEngine).unwrap_err();
        assert!(err.contains("contiguous operands only"), "{err}");
        for (bad, needle) in [
            ("mat1 = { layout = \"row\" }", "mat1.layout"),
            ("mat2 = { ld_pad = 1000000 }", "at most"),
            ("mat3 = {}", "mat3"),
        ] {
            let t = format!("kind = \"sweep\"\nname = \"l\"\n[[shapes]]\nmnk = [[16, 32, 64]]\n[[layouts]]\n{bad}\n");
            let err = Sweep::parse(&t, String::new()).unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
        let gemm = text.replace("name = \"l\"", "name = \"l\"\nop = \"gemm\"");
        assert!(Sweep::parse(&gemm, String::new()).unwrap_err().contains("call object"));
    }

    #[test]
    fn callers_skip_what_they_cannot_pass() {
        let text = "kind = \"sweep\"\nname = \"c\"\ncaller = \"transformer-engine\"\n\
                    out_dtypes = [\"bfloat16\", \"float8_e4m3fn\"]\nscale_result = [\"none\", 0.5]\n\
                    [[shapes]]\nmnk = [[16, 32, 64]]\n";
        let mut s = Sweep::parse(text, String::new()).unwrap();
        let skipped: Vec<bool> = (0..4).map(|i| s.case(i).skip.is_some()).collect();
        // bf16 with a D scale is not a TE call; FP8 outputs always have one.
        assert_eq!(skipped, [false, true, false, false]);
        s.set_caller(Caller::Torch210NoDScale).unwrap();
        let skipped: Vec<bool> = (0..4).map(|i| s.case(i).skip.is_some()).collect();
        assert_eq!(skipped, [false, false, false, true]);
    }
}
