//! `explain` for the command line: a call described by sizes, formats and options (no data), turned
//! into a [`CallPlan`], and the plan's JSON form (docs/reference.md §8.1).

use super::call::CallArgs;
use super::{CommandError, CommandResult, Exit};
use mmaemu_api::env;
use mmaemu_api::model::block_call::{BlockMode, BlockScaledCall};
use mmaemu_api::model::block_gemm::Dims;
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::scaled_mm::{resolve_profile, CallPlan, ScaleTensor, ScaledMm, Validation};
use mmaemu_api::model::splitk::{SplitDecision, SplitRequest};
use mmaemu_api::model::tensor::{Tensor, View};
use mmaemu_api::model::Catalogue;
use mmaemu_api::registry::{OnPlacement, Placement};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

/// One call to explain: what the command line's flags (or a `--cases` line) describe.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// M: rows of mat1.
    pub m: usize,
    /// N: columns of mat2.
    pub n: usize,
    /// K: the reduction length.
    pub k: usize,
    /// Format of A (`e4m3`, `e5m2`, or any torch dtype name).
    pub a: String,
    /// Format of B.
    pub b: String,
    /// out_dtype (None: not passed, the input's dtype).
    pub out: Option<String>,
    /// use_fast_accum: fast (true) or slow accumulation.
    pub fast: bool,
    /// scale_a: the scale of mat1.
    pub scale_a: f32,
    /// scale_b: the scale of mat2.
    pub scale_b: f32,
    /// scale_result: the output scale, if given.
    pub scale_result: Option<f32>,
    /// The scaling mode (`--scales`: a word of `SCALING_NAMES`).
    pub scales: String,
    /// The bias dtype (`--bias`), if any.
    pub bias: Option<String>,
    /// The opt-in to the experimental modes (`--experimental`; MMAEMU_EXPERIMENTAL=1 also opts in).
    pub experimental: bool,
    /// Profile name (None: MMAEMU_PROFILE or the default).
    pub profile: Option<String>,
    /// The split request.
    pub splitk: SplitRequest,
    /// `std` or `out-col` (a column-major out= of shape [M, N]).
    pub layout: String,
    /// The backend.
    pub backend: String,
    /// Where the tensors live (`--device`); None: `auto`.
    pub device: Option<Placement>,
}

impl Default for Case {
    fn default() -> Case {
        Case {
            m: 0,
            n: 0,
            k: 0,
            a: "e4m3".into(),
            b: "e4m3".into(),
            out: None,
            fast: false,
            scale_a: 1.0,
            scale_b: 1.0,
            scale_result: None,
            scales: "tensorwise".into(),
            bias: None,
            experimental: false,
            profile: None,
            splitk: SplitRequest::Auto,
            layout: "std".into(),
            backend: "auto".into(),
            device: None,
        }
    }
}

/// Parse a `--splitk` value: `auto`, an integer, or `S,scheme`. Anything else is a usage error.
pub fn parse_splitk(s: &str) -> Result<SplitRequest, String> {
    if s == "auto" {
        return Ok(SplitRequest::Auto);
    }
    if let Ok(n) = s.trim().parse::<i64>() {
        return Ok(SplitRequest::Count(n));
    }
    if let Some((a, b)) = s.split_once(',') {
        if let Ok(n) = a.trim().parse::<i64>() {
            return Ok(SplitRequest::Pair(n, b.trim().to_string()));
        }
    }
    Err(format!("malformed --splitk '{s}': expected auto, an integer, or S,scheme"))
}

/// The dtype named on the command line (`e4m3`, `fp32`, `bf16`, torch names).
pub fn dtype_arg(s: &str) -> Dtype {
    match s {
        "fp32" => Dtype::Float32,
        "bf16" => Dtype::BFloat16,
        "fp16" => Dtype::Float16,
        other => Dtype::from_name(other),
    }
}

/// Explain one case (a bad MMAEMU_PROFILE or MMAEMU_SPLITK_STRICT is exit 2).
pub fn explain_case(c: &Case) -> Result<CallPlan, CommandError> {
    let bad = |e: mmaemu_api::model::Error| CommandError::bad_input(e.message());
    let (da, db) = (dtype_arg(&c.a), dtype_arg(&c.b));
    let od = c.out.as_deref().map(dtype_arg);
    // Operands without data: explain reads shapes, strides, offsets and dtypes only.
    let input = View { dtype: da.clone(), shape: vec![c.m, c.k], strides: vec![c.k, 1], offset: 0, storage: &[] };
    let mat2 = View { dtype: db, shape: vec![c.k, c.n], strides: vec![1, c.k], offset: 0, storage: &[] };
    let out = (c.layout == "out-col").then(|| Tensor {
        dtype: od.clone().unwrap_or_else(|| da.clone()),
        shape: vec![c.m, c.n],
        strides: vec![1, c.m.max(1)],
        offset: 0,
        storage: vec![],
    });
    let catalogue = mmaemu_api::catalogue();
    if let Some(mode) = BlockMode::from_name(&c.scales) {
        return explain_block(c, mode, &catalogue);
    }
    let (scale_a, scale_b) = super::call::call_scales(&c.scales, c.scale_a, c.scale_b, c.m, c.n)?;
    let call = ScaledMm {
        input,
        mat2,
        scale_a,
        scale_b,
        bias: super::call::call_bias(c.bias.as_deref(), c.n),
        scale_result: c.scale_result.map(ScaleTensor::scalar),
        out_dtype: od,
        use_fast_accum: c.fast,
        out,
        profile: env::profile_arg(c.profile.as_deref()).map_err(bad)?,
        catalogue: &catalogue,
        splitk: c.splitk.clone(),
        backend: c.backend.clone(),
        strict: env::strict().map_err(bad)?,
        experimental: env::experimental_or(c.experimental.then_some(true)).map_err(bad)?,
    };
    Ok(call.explain_on(&OnPlacement(c.device.unwrap_or_else(Placement::auto))))
}

/// Explain a block-scaled call (docs/reference.md §12.7): the model's checks and description of it, on the profile
/// of `--profile`, MMAEMU_PROFILE or hopper. `--splitk`, `--layout` and `--scale-result` do not apply (usage error).
fn explain_block(c: &Case, mode: BlockMode, catalogue: &Catalogue) -> Result<CallPlan, CommandError> {
    let bad = |e: mmaemu_api::model::Error| CommandError::bad_input(e.message());
    if c.splitk != SplitRequest::Auto || c.layout != "std" || c.scale_result.is_some() {
        return Err(CommandError::bad_input(format!(
            "--splitk, --layout and --scale-result do not apply to --scales {}: a block-scaled call runs one chain \
             per output into a new tensor, its scales the mode's",
            mode.name()
        )));
    }
    let fp8 = (mode != BlockMode::Nvfp4).then(|| (dtype_arg(&c.a), dtype_arg(&c.b)));
    let call = BlockScaledCall {
        mode,
        dims: Dims { m: c.m, n: c.n, k: c.k },
        dtypes: fp8,
        out: c.out.as_deref().map_or(Dtype::BFloat16, dtype_arg),
        fast: c.fast,
        bias: c.bias.is_some(),
        experimental: env::experimental_or(c.experimental.then_some(true)).map_err(bad)?,
    };
    let profile = env::profile_arg(c.profile.as_deref()).map_err(bad)?;
    Ok(call.explain(resolve_profile(&profile, catalogue)))
}

/// A split decision as JSON.
pub fn split_json(d: &SplitDecision) -> Value {
    json!({
        "s": d.s,
        "scheme": d.scheme.name(),
        "source": d.source.name(),
        "verified": d.verified,
        "table_id": d.table_id,
        "note": d.note,
    })
}

/// The plan as the JSON object of `explain --json`.
pub fn plan_json(p: &CallPlan) -> Value {
    let validation = match &p.validation {
        Validation::Ok => json!("ok"),
        Validation::Error { name, message } => json!({"error": name, "message": super::in_flag_words(message)}),
    };
    let mut v = json!({
        "validation": validation,
        "profile": p.profile,
        "preset": p.preset,
        "preset_maturity": p.preset_maturity,
        "split": p.split.as_ref().map(split_json),
        "backend": p.backend,
        "fallbacks": p.fallbacks,
        "warnings": p.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    });
    // Only a call that runs a modelled kernel (row-wise and block-scaled calls) names it.
    if let (Some(kernel), Some(o)) = (&p.kernel, v.as_object_mut()) {
        o.insert("kernel".into(), json!(kernel));
    }
    v
}

/// The plan as text: one line per field.
pub fn plan_text(c: &Case, p: &CallPlan) -> String {
    let mut s = format!(
        "explain M={} N={} K={} {} x {} -> {}, use_fast_accum={}, device={}\n",
        c.m,
        c.n,
        c.k,
        c.a,
        c.b,
        c.out.as_deref().unwrap_or(if BlockMode::from_name(&c.scales).is_some() {
            "default (bfloat16)"
        } else {
            "default (input dtype)"
        }),
        c.fast,
        c.device.unwrap_or_else(Placement::auto).name()
    );
    let validation = match &p.validation {
        Validation::Ok => "ok".to_string(),
        Validation::Error { name, message } => format!("{name}: {}", super::in_flag_words(message)),
    };
    let split = match &p.split {
        None => "None".to_string(),
        Some(d) => format!(
            "S={} scheme={} source={} verified={} table_id={} note={:?}",
            d.s,
            d.scheme.name(),
            d.source.name(),
            d.verified,
            d.table_id.as_deref().unwrap_or("None"),
            d.note
        ),
    };
    for (k, v) in [
        ("validation", validation),
        ("profile", p.profile.clone()),
        ("preset", p.preset.clone()),
        ("preset_maturity", p.preset_maturity.clone()),
        ("split", split),
        ("backend", p.backend.clone()),
        ("fallbacks", format!("{:?}", p.fallbacks)),
        ("warnings", format!("{:?}", p.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>())),
    ] {
        s.push_str(&format!("  {k:<16}{v}\n"));
    }
    if let Some(kernel) = &p.kernel {
        s.push_str(&format!("  {:<16}{kernel}\n", "kernel"));
    }
    s
}

/// Read one `--cases` line: a JSON object with keys id, m, n, k, a, b, out, fast, profile, splitk, layout
/// The keys of an `explain --cases` line.
pub const CASE_KEYS: [&str; 11] = ["id", "m", "n", "k", "a", "b", "out", "fast", "profile", "splitk", "layout"];

/// The layouts `--layout` and a case's `layout` take.
pub const LAYOUTS: [&str; 2] = ["std", "out-col"];

/// (missing keys take `defaults`' values). Returns (id, case).
pub fn parse_case_line(line: &str, defaults: &Case) -> Result<(Value, Case), String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let o = v.as_object().ok_or("not a JSON object")?;
    // A misspelt key would otherwise be ignored and its default used: refuse it.
    if let Some(unknown) = o.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key '{unknown}'; the keys are {}", CASE_KEYS.join(", ")));
    }
    if let Some(missing) = ["m", "n", "k"].into_iter().find(|k| !o.contains_key(*k)) {
        return Err(format!("'{missing}' is missing (every case gives m, n and k)"));
    }
    let mut c = defaults.clone();
    let size = |key: &str, d: usize| -> Result<usize, String> {
        match o.get(key) {
            None => Ok(d),
            Some(x) => x.as_u64().map(|u| u as usize).ok_or(format!("'{key}' must be a non-negative integer")),
        }
    };
    c.m = size("m", c.m)?;
    c.n = size("n", c.n)?;
    c.k = size("k", c.k)?;
    let string = |key: &str| -> Result<Option<String>, String> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("'{key}' must be a string")),
        }
    };
    if let Some(a) = string("a")? {
        c.a = a;
    }
    if let Some(b) = string("b")? {
        c.b = b;
    }
    if let Some(out) = string("out")? {
        c.out = Some(out);
    }
    if let Some(p) = string("profile")? {
        c.profile = Some(p);
    }
    if let Some(l) = string("layout")? {
        if !LAYOUTS.contains(&l.as_str()) {
            return Err(format!("'layout' must be one of {}, got '{l}'", LAYOUTS.join(", ")));
        }
        c.layout = l;
    }
    match o.get("fast") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => c.fast = *b,
        Some(_) => return Err("'fast' must be a boolean".into()),
    }
    match o.get("splitk") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => c.splitk = parse_splitk(s)?,
        Some(Value::Number(n)) => c.splitk = SplitRequest::Count(n.as_i64().ok_or("'splitk' must be an integer")?),
        Some(Value::Array(a)) if a.len() == 2 => {
            let s = a[0].as_i64().ok_or("'splitk' [S, scheme]: S must be an integer")?;
            let scheme = a[1].as_str().ok_or("'splitk' [S, scheme]: scheme must be a string")?;
            c.splitk = SplitRequest::Pair(s, scheme.to_string());
        }
        Some(_) => return Err("'splitk' must be \"auto\", an integer, \"S,scheme\" or [S, scheme]".into()),
    }
    let id = o.get("id").cloned().unwrap_or(Value::Null);
    Ok((id, c))
}

/// `mmaemu explain` arguments: the call ([`CallArgs`]; its shape also as positional M N K) and where it runs.
#[derive(clap::Args)]
pub struct ExplainArgs {
    /// M (rows of mat1); or --m.
    #[arg(value_name = "M", required_unless_present_any = ["cases", "m"], conflicts_with = "m")]
    pub pos_m: Option<usize>,
    /// N (columns of mat2); or --n.
    #[arg(value_name = "N", required_unless_present_any = ["cases", "n"], conflicts_with = "n")]
    pub pos_n: Option<usize>,
    /// K: the reduction length; or --k.
    #[arg(value_name = "K", required_unless_present_any = ["cases", "k"], conflicts_with = "k")]
    pub pos_k: Option<usize>,
    /// The call.
    #[command(flatten)]
    pub call: CallArgs,
    /// std, or out-col (a column-major out= of shape [M, N]).
    #[arg(long, default_value = "std", value_parser = LAYOUTS)]
    pub layout: String,
    /// Backend: auto, reference, cpu, cpu:<simd>, cuda, cuda:<kernel>.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Where the tensors live: auto (CUDA if available and not disabled, else cpu), cpu, cuda, cuda:N.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Explain many calls: one JSON object per line (id, m, n, k, a, b, out, fast, profile, splitk, layout);
    /// `-` reads standard input.
    #[arg(long, conflicts_with_all = ["m", "n", "k", "pos_m", "pos_n", "pos_k"])]
    pub cases: Option<PathBuf>,
}

/// `mmaemu explain`: the call would run (success), would raise (failed), a usage error, or an unusable
/// device.
pub fn run(args: ExplainArgs) -> CommandResult {
    let call = args.call;
    let splitk = parse_splitk(&call.splitk).map_err(CommandError::bad_input)?;
    if let Some(p) = &call.profile {
        super::vars::profile("--profile", p)?;
    }
    super::vars::backend("--backend", &args.backend)?;
    let device = match Placement::parse(&args.device) {
        Err(usage) => return Err(CommandError::bad_input(usage)),
        Ok(Err(why)) => {
            return Err(CommandError::no_device(format!("explain unavailable: device '{}': {why}", args.device)))
        }
        Ok(Ok(p)) => p,
    };
    let positional = args.pos_m.zip(args.pos_n).zip(args.pos_k).map(|((m, n), k)| (m, n, k));
    // With --cases the shape comes from each line: none here.
    let (m, n, k) = if args.cases.is_some() { (0, 0, 0) } else { call.shape(positional)? };
    let case = Case {
        m,
        n,
        k,
        a: call.a,
        b: call.b,
        out: call.out,
        fast: call.fast,
        scale_a: call.scale_a,
        scale_b: call.scale_b,
        scale_result: call.scale_result,
        scales: call.scales,
        bias: call.bias,
        experimental: call.experimental,
        profile: call.profile,
        splitk,
        layout: args.layout,
        backend: args.backend,
        device: Some(device),
    };
    if let Some(path) = args.cases {
        return explain_cases(&path, &case);
    }
    let plan = explain_case(&case)?;
    if args.json {
        println!("{}", plan_json(&plan));
    } else {
        print!("{}", plan_text(&case, &plan));
    }
    Ok(Exit::failed_if(plan.validation != Validation::Ok))
}

/// `explain --cases FILE`: one output line per input line; exit 1 if any call would raise, 2 on a bad line.
fn explain_cases(path: &std::path::Path, defaults: &Case) -> CommandResult {
    let text = read_lines_input(path, MAX_CASES_BYTES)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut any_error = false;
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (id, case) = parse_case_line(line, defaults)
            .map_err(|e| CommandError::bad_input(format!("{}:{}: {e}", path.display(), no + 1)))?;
        let plan = explain_case(&case)?;
        any_error |= plan.validation != Validation::Ok;
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), id);
        if let serde_json::Value::Object(fields) = plan_json(&plan) {
            obj.extend(fields);
        }
        writeln!(out, "{}", serde_json::Value::Object(obj))
            .map_err(|e| CommandError::bad_input(format!("cannot write the output: {e}")))?;
    }
    Ok(Exit::failed_if(any_error))
}

/// The most bytes `explain --cases` reads (64 MiB: about a million cases).
pub const MAX_CASES_BYTES: u64 = 64 << 20;

/// The text of a JSON-lines input: `-` is standard input; a path must be a regular file. At most `limit`
/// bytes are read; a larger input is refused rather than read without end (`/dev/zero`).
pub fn read_lines_input(path: &std::path::Path, limit: u64) -> Result<String, CommandError> {
    use std::io::Read;
    let shown = path.display();
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(mmaemu_datasets::open_regular(path).map_err(CommandError::bad_input)?)
    };
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CommandError::bad_input(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(CommandError::bad_input(format!("{shown} is larger than {limit} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| CommandError::bad_input(format!("{shown} is not UTF-8 text")))
}
