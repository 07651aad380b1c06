//! `mmaemu trace`: the trace of one output element (docs/reference.md §2–§4 step by step), of a recorded row or of a
//! call described by flags with operands from the `mmaemu-inputs/1` generator; text (folded) or JSON.

use super::call::GeneratedCall;
use super::explain::{dtype_arg, parse_splitk};
use super::{CommandError, CommandResult, Exit};
use clap::Args;
use mmaemu_api::env;
use mmaemu_api::model::scaled_mm::{ScaleTensor, ScaledMm};
use mmaemu_api::model::tensor::View;
use mmaemu_api::trace::json::trace_json;
use mmaemu_api::trace::{text, trace_scaled_mm, Trace};
use mmaemu_datasets::inputs::{generate, generate_rows, DataClass, InputSpec, Operand, GENERATOR_V1};
use mmaemu_datasets::{limits, read_recording};
use mmaemu_harness::trace::{expected_bits, flat_index, trace_row};
use serde_json::json;
use std::path::PathBuf;

/// The arguments of `mmaemu trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// A recording file: trace an element of its row `--row`.
    pub file: Option<PathBuf>,
    /// The row id (with FILE).
    #[arg(long)]
    pub row: Option<String>,
    /// The element: `I,J` (or `T,I,J` for a batched row); default 0,0.
    #[arg(long, default_value = "0,0")]
    pub element: String,
    /// Show every block and every product (long chains are folded by default).
    #[arg(long)]
    pub unfold: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// A call by flags (with operands from the generator).
    #[command(flatten)]
    pub call: GeneratedCall,
}

fn parse_element(s: &str) -> Result<Vec<usize>, String> {
    let v: Result<Vec<usize>, _> = s.split(',').map(|x| x.trim().parse::<usize>()).collect();
    match v {
        Ok(v) if v.len() == 2 || v.len() == 3 => Ok(v),
        _ => Err(format!("malformed --element '{s}': expected I,J or T,I,J (non-negative integers)")),
    }
}

fn data_class(name: &str) -> Result<DataClass, String> {
    Ok(match name {
        "gaussian" => DataClass::Gaussian { scale: 1.0 },
        "bits" => DataClass::Bits { finite: true },
        "split" => DataClass::Split { scale: 1.0 },
        "all_codes" => DataClass::AllCodes { finite: true },
        "subnormal" => DataClass::Subnormal { scale: 1.0 },
        "special" => DataClass::Special { scale: 1.0 },
        "binades" => DataClass::Binades { scale: 1.0, width: 16, silent: 0, mirror: false },
        other => {
            return Err(format!(
                "unknown --data '{other}': expected gaussian, bits, split, all_codes, subnormal, special or binades"
            ))
        }
    })
}

/// Run `mmaemu trace`.
pub fn run(args: TraceArgs) -> CommandResult {
    let el = parse_element(&args.element).map_err(CommandError::bad_input)?;
    let (trace, expected) = match &args.file {
        Some(path) => {
            let id = args.row.as_deref().ok_or_else(|| CommandError::bad_input("a recording needs --row ID"))?;
            let rec = read_recording(path).map_err(CommandError::bad_input)?;
            let row = rec.rows.iter().find(|r| r.id == id).ok_or_else(|| {
                let ids: Vec<&str> = rec.rows.iter().take(5).map(|r| r.id.as_str()).collect();
                CommandError::bad_input(format!(
                    "{}: no row with id {id:?} (the first ids: {})",
                    path.display(),
                    ids.join(", ")
                ))
            })?;
            let (t, i, j) = if el.len() == 3 { (el[0], el[1], el[2]) } else { (0, el[0], el[1]) };
            let index = flat_index(row, t, i, j).map_err(CommandError::bad_input)?;
            let trace = trace_row(row, index).map_err(|e| CommandError::bad_input(format!("row {id:?}: {e}")))?;
            let expected = expected_bits(row, index, trace.dtype);
            (trace, expected)
        }
        None => (trace_flags(&args, &el)?, None),
    };
    if args.json {
        let mut v = trace_json(&trace);
        if let Some(e) = expected {
            v["recorded_bits"] = json!(e);
            v["matches_recording"] = json!(e == trace.bits);
        }
        v["bits"] = json!(trace.bits);
        println!("{v}");
    } else {
        print!("{}", text::render(&trace, args.unfold));
        if let Some(e) = expected {
            let w = trace.dtype.width() * 2;
            let verdict = if e == trace.bits { "matches" } else { "DIFFERS from" };
            println!("the trace {verdict} the recorded bits 0x{e:0w$X}");
        }
    }
    Ok(Exit::failed_if(expected.is_some_and(|e| e != trace.bits)))
}

/// A call described by flags, operands from the generator.
fn trace_flags(args: &TraceArgs, el: &[usize]) -> Result<Trace, CommandError> {
    let (m, n, _) = args.call.call.shape(None)?;
    if el.len() != 2 {
        return Err(CommandError::bad_input("a call's element is I,J"));
    }
    if el[0] >= m || el[1] >= n {
        return Err(CommandError::bad_input(format!(
            "element ({}, {}) is outside the [{m}, {n}] result",
            el[0], el[1]
        )));
    }
    // The trace reads only row i of A and row j of B: the generator makes those alone (it is counter-based).
    with_call(&args.call, Some((el[0], el[1])), |call| {
        trace_scaled_mm(call, el[0], el[1]).map_err(|e| CommandError {
            exit: Exit::Failed,
            message: e.to_string(),
            verbatim: false,
        })
    })
}

/// Generate the operands of a call by flags and hand the call to `f`.
/// With `element` (i, j), only row i of A and row j of B are generated, the rows before them left zero (the views
/// keep the call's shape; a row past them reads as outside the storage).
pub fn with_call<R>(
    g: &GeneratedCall,
    element: Option<(usize, usize)>,
    run: impl FnOnce(&ScaledMm<'_>) -> Result<R, CommandError>,
) -> Result<R, CommandError> {
    let bad = |e: String| CommandError::bad_input(e);
    let (f, inputs) = (&g.call, &g.inputs);
    let (m, n, k) = f.shape(None)?;
    let spec = InputSpec {
        generator: GENERATOR_V1.into(),
        seed: inputs.seed,
        stream: inputs.stream,
        data: data_class(&inputs.data).map_err(bad)?,
    };
    limits::check_in_force(
        "the operands",
        limits::sum(&[limits::product(&[m as u64, k as u64]), limits::product(&[n as u64, k as u64])]),
    )
    .map_err(bad)?;
    let (da, db) = (dtype_arg(&f.a), dtype_arg(&f.b));
    let make = |operand: Operand, fmt: &str, rows: usize, only: Option<usize>| match only {
        None => generate(&spec, operand, fmt, rows, k),
        Some(r) => {
            let r = r.min(rows.saturating_sub(1));
            // Fallible: under a raised ceiling (--max-bytes) the zeroed rows before r may be more than the machine
            // has: a refusal, not an abort.
            let len = (r + 1).checked_mul(k).ok_or("the operand's size overflows")?;
            let mut v = Vec::new();
            v.try_reserve_exact(len).map_err(|_| format!("cannot allocate the {len} bytes of the operand's rows"))?;
            v.resize(len, 0u8);
            v[r * k..].copy_from_slice(&generate_rows(&spec, operand, fmt, r..r + 1, k)?);
            Ok(v)
        }
    };
    let a = make(Operand::A, da.name(), m, element.map(|e| e.0)).map_err(bad)?;
    let b = make(Operand::B, db.name(), n, element.map(|e| e.1)).map_err(bad)?;
    let catalogue = mmaemu_api::catalogue();
    let (scale_a, scale_b) = super::call::call_scales(&f.scales, f.scale_a, f.scale_b, m, n)?;
    let call = ScaledMm {
        input: View { dtype: da, shape: vec![m, k], strides: vec![k, 1], offset: 0, storage: &a },
        mat2: View { dtype: db, shape: vec![k, n], strides: vec![1, k], offset: 0, storage: &b },
        scale_a,
        scale_b,
        bias: super::call::call_bias(f.bias.as_deref(), n),
        scale_result: f.scale_result.map(ScaleTensor::scalar),
        out_dtype: f.out.as_deref().map(dtype_arg),
        use_fast_accum: f.fast,
        out: None,
        profile: env::profile_arg(f.profile.as_deref()).map_err(|e| bad(e.message().to_string()))?,
        catalogue: &catalogue,
        splitk: parse_splitk(&f.splitk).map_err(bad)?,
        backend: "reference".into(),
        strict: env::strict().map_err(|e| bad(e.message().to_string()))?,
        experimental: env::experimental_or(f.experimental.then_some(true)).map_err(|e| bad(e.message().to_string()))?,
    };
    run(&call)
}
