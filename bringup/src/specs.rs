//! The specs bring-up records, as the recorder's TOML (recorder/sweeps/ holds their patterns): the heuristic grid,
//! the instruction sweeps (unsplit fast accumulators, unsplit slow calls whose K reveals the slow chunk), held-out
//! calls, and the split sweeps, chosen from the recorded table's split keys, each customOption's own.

use crate::fits::Designer;
use mmaemu_datasets::splitk_table::SplitKTable;
use std::collections::BTreeMap;

/// How much to record: a GPU's window holds the full plan, the simulated device (CI) a small one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A few calls per stage (the simulated device, 2 cores).
    Small,
    /// The GPU plan (recorder/sweeps/h200-grid.toml's settings, more shapes per stage).
    Full,
}

/// The workspace every call is given (torch 2.7.1's cuBLASLt workspace): the grid's and the sweeps'.
pub const WORKSPACE: u64 = 1 << 20;

/// The heuristic grid.
pub fn grid(name: &str, size: Size) -> String {
    let (m, n, k, outs) = match size {
        Size::Small => ("[1, 16, 48]", "[16, 208, 240]", "[1024, 8192, 12288, 16384]", r#"["float32", "bfloat16"]"#),
        Size::Full => (
            "[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]",
            "[16, 64, 128, 256, 512, 1024, 2048, 4096, 8192]",
            "[1024, 2048, 4096, 5760, 8192, 12288, 16384]",
            r#"["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"]"#,
        ),
    };
    format!(
        "kind = \"grid\"\nname = \"{name}-grid\"\ndescription = \"bring-up: the heuristic's split decisions\"\n\
         profile = \"{name}\"\nformats = [[\"e4m3\", \"e4m3\"], [\"e4m3\", \"e5m2\"], [\"e5m2\", \"e4m3\"]]\n\
         out_dtypes = {outs}\nfast_accum = [false, true]\nworkspace = [{WORKSPACE}]\n\n[[shapes]]\nm = {m}\nn = {n}\nk = {k}\n"
    )
}

/// One sweep spec.
struct Sweep<'a> {
    name: String,
    description: &'a str,
    seed: u64,
    op: &'a str,
    formats: &'a str,
    outs: &'a str,
    fast: &'a str,
    scales: Option<&'a str>,
    /// The recorder's `scaling` list (None: tensor-wise).
    scaling: Option<&'a str>,
    split_unknown: bool,
    /// The workspace in bytes: [`WORKSPACE`], or 0 where the call must run unsplit.
    workspace: u64,
    mnk: Vec<[u64; 3]>,
    classes: &'a [&'a str],
}

impl Sweep<'_> {
    fn text(&self, profile: &str) -> String {
        let mut t = format!(
            "kind = \"sweep\"\nname = \"{}\"\ndescription = \"{}\"\nseed = {}\nop = \"{}\"\nprofile = \"{profile}\"\n\
             formats = {}\nout_dtypes = {}\nfast_accum = {}\nworkspace = [{}]\nchunk_rows = 16\n",
            self.name, self.description, self.seed, self.op, self.formats, self.outs, self.fast, self.workspace
        );
        if let Some(s) = self.scales {
            t += &format!("scales = {s}\n");
        }
        if let Some(s) = self.scaling {
            t += &format!("scaling = {s}\n");
        }
        if self.split_unknown {
            t += "split_scheme = \"unknown\"\n";
        }
        let mnk: Vec<String> = self.mnk.iter().map(|[m, n, k]| format!("[{m}, {n}, {k}]")).collect();
        t += &format!("\n[[shapes]]\nmnk = [{}]\n", mnk.join(", "));
        for c in self.classes {
            t += &format!("\n[[inputs]]\nclass = \"{c}\"\n");
        }
        t
    }
}

const ALL_FORMATS: &str = r#"[["e4m3", "e4m3"], ["e4m3", "e5m2"], ["e5m2", "e4m3"]]"#;

/// The instruction sweeps, (name, spec): unsplit fast accumulators (fp32 out, unit scales) for the instruction's
/// arithmetic, slow calls whose K runs past any slow chunk the fit can find (up to 1024) for the slow chunk, and
/// MXFP8 calls for the block-scaled instruction (a device without it skips them: the fit then takes no scales).
/// Every K is a multiple of 16: torch refuses other FP8 calls before cuBLASLt sees them.
pub fn instruction(name: &str, size: Size) -> Vec<(String, String)> {
    let (fast_mnk, slow_mnk): (Vec<[u64; 3]>, Vec<[u64; 3]>) = match size {
        Size::Small => (vec![[16, 16, 64], [16, 16, 128], [16, 32, 512]], vec![[16, 16, 1040]]),
        Size::Full => (
            vec![[16, 16, 64], [16, 16, 128], [16, 32, 512], [32, 32, 96], [64, 64, 256]],
            vec![[16, 16, 1008], [16, 16, 2512], [32, 16, 1504], [16, 32, 3008]],
        ),
    };
    let fast = Sweep {
        name: format!("{name}-inst"),
        description: "bring-up: the instruction (fp32 out, unit scales, fast, unsplit)",
        seed: 7,
        op: "gemm",
        formats: ALL_FORMATS,
        outs: r#"["float32"]"#,
        fast: "[true]",
        scales: Some("[[1.0, 1.0]]"),
        scaling: None,
        split_unknown: false,
        workspace: WORKSPACE,
        mnk: fast_mnk,
        classes: &["gaussian", "bits", "subnormal", "split"],
    };
    let slow = Sweep {
        name: format!("{name}-slow"),
        description: "bring-up: slow accumulation past the slow chunk (fp32 out, unit scales)",
        seed: 8,
        op: "gemm",
        formats: r#"[["e4m3", "e4m3"]]"#,
        outs: r#"["float32"]"#,
        fast: "[false]",
        scales: Some("[[1.0, 1.0]]"),
        scaling: None,
        split_unknown: true,
        workspace: WORKSPACE,
        mnk: slow_mnk,
        classes: &["gaussian", "split"],
    };
    let mx_mnk: Vec<[u64; 3]> = match size {
        Size::Small => vec![[16, 16, 64], [16, 16, 256]],
        Size::Full => vec![[16, 16, 64], [16, 16, 256], [16, 32, 512], [32, 32, 1024]],
    };
    let mx_text_scales = mx_scales();
    let mx = Sweep {
        name: format!("{name}-mx"),
        description: "bring-up: the block-scaled instruction (MXFP8, fp32 out, unsplit), where the device takes it",
        seed: 9,
        op: "scaled_mm",
        formats: ALL_FORMATS,
        outs: r#"["float32"]"#,
        fast: "[false]",
        scales: Some(&mx_text_scales),
        scaling: Some(r#"["mxfp8"]"#),
        split_unknown: false,
        // No workspace, no split-K: the model's MXFP8 GEMM is one chain per output (docs/reference.md §12.4).
        workspace: 0,
        mnk: mx_mnk,
        classes: &["gaussian", "split", "subnormal"],
    };
    vec![(fast.name.clone(), fast.text(name)), (slow.name.clone(), slow.text(name)), (mx.name.clone(), mx.text(name))]
}

/// The MXFP8 sweep's scale pairs, as powers of two (a, b): the recipe's pattern (±2^3 per block and operand) at
/// (0, 0), then constant e8m0 scales that put unit products at 2^-124 to 2^-146 — about the floors a block-scaled
/// instruction may have, where blocks of small and zero products show it — and at 2^120, where the accumulator's fp32
/// additions overflow.
const MX_SCALES: [(i32, i32); 6] = [(0, 0), (-62, -62), (-66, -66), (-64, -70), (-73, -73), (60, 60)];

/// [`MX_SCALES`] as a spec's `scales` (each value printed exactly).
fn mx_scales() -> String {
    let pair = |(a, b): (i32, i32)| format!("[{:e}, {:e}]", 2f64.powi(a), 2f64.powi(b));
    format!("[{}]", MX_SCALES.map(pair).join(", "))
}

/// Held-out calls the fits never read: other seeds, data classes, out dtypes, scales and slow K's, MXFP8 calls.
pub fn heldout(name: &str, size: Size) -> (String, String) {
    let mnk = match size {
        Size::Small => vec![[5, 32, 96], [16, 48, 1200]],
        Size::Full => vec![[5, 32, 96], [16, 48, 1200], [33, 64, 704], [64, 16, 2112]],
    };
    let s = Sweep {
        name: format!("{name}-heldout"),
        description: "bring-up: held-out calls (not fitted): every out dtype, scales, fast and slow, MXFP8",
        seed: 20261206,
        op: "scaled_mm",
        formats: r#"[["e4m3", "e4m3"], ["e5m2", "e4m3"]]"#,
        outs: r#"["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"]"#,
        fast: "[false, true]",
        scales: Some("[[0.5, 2.0]]"),
        // MXFP8 at constant block scales 2^-1 x 2^1, where the device takes it (fp32, bf16 and f16 out, unfused,
        // K a multiple of 32; the other cases are skipped with torch's reason).
        scaling: Some(r#"["tensorwise", "mxfp8"]"#),
        split_unknown: true,
        workspace: WORKSPACE,
        mnk,
        classes: &["gaussian"],
    };
    (s.name.clone(), s.text(name))
}

/// The split sweeps, fast and slow: per customOption the table splits e4m3 x e4m3 -> fp32 calls with, its split keys
/// of the smallest m·n and then the largest K (the most tiles per split, for the slow restart; `per_custom` of them)
/// whose m·n·k the fits can afford (the split fit replays every output under every candidate rule), recorded with
/// split-discriminating data, the layout unknown. Empty when nothing splits.
pub fn split(name: &str, table: &SplitKTable, size: Size) -> Vec<(String, String)> {
    let (per_custom, max_work) = match size {
        Size::Small => (1, 1u64 << 22),
        Size::Full => (4, 1u64 << 27),
    };
    let mut out = Vec::new();
    for fast in [false, true] {
        let mut by_custom: BTreeMap<i64, Vec<[u64; 3]>> = BTreeMap::new();
        let rows = table.rows.iter().filter(|r| {
            r.decision.split_s > 1
                && (r.m as u64) * (r.n as u64) * (r.k as u64) <= max_work
                && r.workspace_bytes == WORKSPACE as i64
                && r.fast_accum == fast
                && (r.fmt_a, r.fmt_b, r.out_dtype) == ("e4m3", "e4m3", "float32")
        });
        for r in rows {
            let key = [r.m as u64, r.n as u64, r.k as u64];
            let v = by_custom.entry(r.decision.custom_option.into()).or_default();
            if !v.contains(&key) {
                v.push(key);
            }
        }
        let mut mnk = Vec::new();
        for keys in by_custom.values_mut() {
            keys.sort_by_key(|[m, n, k]| (m * n, u64::MAX - k));
            for key in keys.iter().take(per_custom) {
                if !mnk.contains(key) {
                    mnk.push(*key);
                }
            }
        }
        if mnk.is_empty() {
            continue;
        }
        let s = Sweep {
            name: format!("{name}-split-{}", if fast { "fast" } else { "slow" }),
            description: "bring-up: the table's split keys, each customOption's, the layout unknown",
            seed: 12,
            op: "scaled_mm",
            formats: r#"[["e4m3", "e4m3"]]"#,
            outs: r#"["float32"]"#,
            fast: if fast { "[true]" } else { "[false]" },
            scales: None,
            scaling: None,
            split_unknown: true,
            workspace: WORKSPACE,
            mnk,
            classes: &["split"],
        };
        out.push((s.name.clone(), s.text(name)));
    }
    out
}

/// The workspace of a designed call: the split fit's own; for the preset fit's (which must run unsplit), the
/// sweeps' where the recorded `table` answers S = 1 for the problem at it, else none (0 bytes: no split-K).
fn experiment_workspace(designer: Designer, e: &mmaemu_fit::Experiment, table: &SplitKTable) -> u64 {
    if designer == Designer::Split {
        return e.workspace.unwrap_or(WORKSPACE);
    }
    let p = &e.problem;
    let unsplit = table.rows.iter().any(|r| {
        (r.m as usize, r.n as usize, r.k as usize) == (p.m, p.n, p.k)
            && (r.fmt_a, r.fmt_b, r.out_dtype) == (p.fa.name(), p.fb.name(), p.out.name())
            && r.fast_accum == p.fast
            && r.workspace_bytes == WORKSPACE as i64
            && r.decision.split_s <= 1
    });
    if unsplit {
        WORKSPACE
    } else {
        0
    }
}

/// One designed call as a sweep spec (its op, workspace, unit scales and data class; the seed is the
/// experiment's). A sweep's stream is its case's place among the spec's inputs, so the designed stream is reached by
/// repeating the input class: stream n records n + 1 calls, the last one the designed call.
pub fn experiment(
    name: &str,
    index: usize,
    designer: Designer,
    e: &mmaemu_fit::Experiment,
    table: &SplitKTable,
) -> Result<(String, String), String> {
    let p = &e.problem;
    let data = serde_json::to_value(&e.inputs.data).map_err(|e| e.to_string())?;
    let fields: Vec<String> = data
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} = {v}")).collect())
        .ok_or("the data class is not a table")?;
    let stream = usize::try_from(e.inputs.stream).ok().filter(|&s| s < 8).ok_or("a designed stream above 7")?;
    let inputs = format!("\n[[inputs]]\n{}\n", fields.join("\n")).repeat(stream + 1);
    let spec_name = format!("{name}-exp{index:03}");
    // The preset fit reads accumulator rows (op gemm, fp32 out, unit scales) and MXFP8 calls (op scaled_mm at a
    // constant scale pair, unsplit: no workspace); the split fit reads torch's calls.
    let (op, scales, workspace) = match (designer, e.mx_scales) {
        (Designer::Preset, Some((x, y))) => {
            ("scaled_mm", format!("scaling = [\"mxfp8\"]\nscales = [[{:e}, {:e}]]", 2f64.powi(x), 2f64.powi(y)), 0)
        }
        (Designer::Preset, None) => ("gemm", "scales = [[1.0, 1.0]]".into(), experiment_workspace(designer, e, table)),
        (Designer::Split, _) => ("scaled_mm", "scales = [[1.0, 1.0]]".into(), experiment_workspace(designer, e, table)),
    };
    Ok((
        spec_name.clone(),
        format!(
            "kind = \"sweep\"\nname = \"{spec_name}\"\ndescription = \"bring-up experiment: {}\"\nseed = {}\n\
             op = \"{op}\"\nprofile = \"{name}\"\nformats = [[\"{}\", \"{}\"]]\nout_dtypes = [\"{}\"]\n\
             fast_accum = [{}]\nworkspace = [{workspace}]\n{scales}\nsplit_scheme = \"unknown\"\n\n\
             [[shapes]]\nmnk = [[{}, {}, {}]]\n{inputs}",
            e.decides.replace('"', "'"),
            e.inputs.seed,
            p.fa.name(),
            p.fb.name(),
            p.out.name(),
            p.fast,
            p.m,
            p.n,
            p.k,
        ),
    ))
}
