//! `mmaemu selftest` (docs/reference.md §8.2): run the CUDA kernels' self-test gate on a device and print PASS/FAIL per
//! kernel and a verdict.

// Every kernel of `mmaemu_api::kernels::cuda::KERNELS` serves every capability the kernels compile for and is not gated, so
// each selected kernel is *required*. The gate is the fixed battery of `mmaemu_api::kernels::cuda::gate_cases` (every
// built-in preset and two user-defined ones, four format pairs, seven adversarial shapes), compared bit for bit with
// the model computed at gate time.
//
// Verdicts and exit codes: PASS (0) every required kernel passed; FAIL (1) a required kernel failed; UNAVAILABLE (4) no
// CUDA backend in this build, no driver, no NVRTC, no device, CUDA disabled, or no results. A malformed `--kernels`
// list is a usage error (2).

use super::{CommandError, CommandResult, Exit};
use mmaemu_api::env;
use mmaemu_api::kernels::cuda::{gate_cases, kernel_index, Gpu, KERNELS};
use serde_json::{json, Value};
use std::path::PathBuf;

/// The command line of `selftest`.
#[derive(clap::Args, Debug)]
pub struct SelftestArgs {
    /// The device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// `all`, or a comma-separated list of kernel names (narrow, tiled, generic).
    #[arg(long, default_value = "all")]
    pub kernels: String,
    /// Run even when MMAEMU_DISABLE_CUDA is set.
    #[arg(long)]
    pub force: bool,
    /// Also write the JSON report (format `mmaemu-selftest/1`) to PATH; `-` prints only the JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// How the self-test gate ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Every required kernel passed.
    Pass,
    /// A required kernel failed.
    Fail,
    /// Nothing could run.
    Unavailable,
}

impl Gate {
    /// `PASS`, `FAIL`, `UNAVAILABLE`.
    pub fn name(self) -> &'static str {
        match self {
            Gate::Pass => "PASS",
            Gate::Fail => "FAIL",
            Gate::Unavailable => "UNAVAILABLE",
        }
    }

    /// How the command ends: success, failed, or no device.
    pub fn exit(self) -> Exit {
        match self {
            Gate::Pass => Exit::Success,
            Gate::Fail => Exit::Failed,
            Gate::Unavailable => Exit::NoDevice,
        }
    }
}

/// Parse `--kernels`: `all` or names split on commas and stripped. Err: an unknown or empty name.
pub fn parse_kernels(s: &str) -> Result<Vec<usize>, String> {
    if s.trim() == "all" {
        return Ok((0..KERNELS.len()).collect());
    }
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim) {
        let names: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
        let k = kernel_index(name).ok_or_else(|| {
            format!("unknown kernel '{name}' in --kernels; expected all or a list of {}", names.join(", "))
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// Run the gate: (verdict, JSON report).
pub fn run_gate(device: usize, kernels: &[usize], force: bool) -> (Gate, Value) {
    let opened = if env::cuda_disabled().unwrap_or(true) && !force {
        Err("CUDA disabled by MMAEMU_DISABLE_CUDA (use --force to run anyway)".to_string())
    } else {
        Gpu::open(device)
    };
    let gpu = match opened {
        Ok(g) => g,
        Err(why) => {
            let report = json!({
                "format": "mmaemu-selftest/1",
                "device": format!("none: {why}"),
                "kernels": [],
                "verdict": "UNAVAILABLE",
                "reason": why,
            });
            return (Gate::Unavailable, report);
        }
    };
    let reports = gpu.self_test(kernels);
    let failed: Vec<&str> = reports.iter().filter(|r| r.result.is_err()).map(|r| r.kernel).collect();
    let (verdict, reason) = if reports.is_empty() {
        (Gate::Unavailable, "no kernel selected".to_string())
    } else if failed.is_empty() {
        (Gate::Pass, format!("every required kernel reproduced the model's bits on {}", gpu.description()))
    } else {
        (Gate::Fail, format!("required kernel(s) {} failed; the CPU backend is used instead", failed.join(", ")))
    };
    let report = json!({
        "format": "mmaemu-selftest/1",
        "device": format!("{}: {} (kernels compiled for {})", device, gpu.description(), gpu.arch),
        "gate_cases": gate_cases().len(),
        "kernels": reports.iter().map(|r| json!({
            "name": r.kernel,
            "status": if r.result.is_ok() { "PASS" } else { "FAIL" },
            "required": true,
            "cases": r.cases,
            "why": match &r.result { Ok(()) => format!("{} gate cases bit-identical to the model", r.cases), Err(e) => e.clone() },
        })).collect::<Vec<_>>(),
        "verdict": verdict.name(),
        "reason": reason,
    });
    (verdict, report)
}

/// The report as text.
pub fn text(r: &Value) -> String {
    let mut s = format!("device: {}\n", r["device"].as_str().unwrap_or(""));
    if let Some(n) = r["gate_cases"].as_u64() {
        s.push_str(&format!(
            "gate: {n} cases (5 presets x 4 format pairs x 7 adversarial shapes), expected bits from the model\n"
        ));
    }
    for k in r["kernels"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "  {}: {} (required: {})\n",
            k["name"].as_str().unwrap_or(""),
            k["status"].as_str().unwrap_or(""),
            k["why"].as_str().unwrap_or("")
        ));
    }
    s.push_str(&format!("verdict: {} - {}\n", r["verdict"].as_str().unwrap_or(""), r["reason"].as_str().unwrap_or("")));
    s
}

/// `mmaemu selftest`.
pub fn run(args: &SelftestArgs) -> CommandResult {
    let kernels = parse_kernels(&args.kernels).map_err(CommandError::bad_input)?;
    let (verdict, report) = run_gate(args.device, &kernels, args.force);
    let json_only = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if json_only {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", text(&report));
        if let Some(path) = &args.json {
            let body = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
            mmaemu_datasets::write_file_atomic(path, body.as_bytes())
                .map_err(|e| CommandError::bad_input(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    Ok(verdict.exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_lists() {
        assert_eq!(parse_kernels("all").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse_kernels(" generic , tiled").unwrap(), vec![2, 1]);
        assert_eq!(parse_kernels("tiled,tiled").unwrap(), vec![1]);
        assert!(parse_kernels("tiled, wmma").unwrap_err().contains("unknown kernel 'wmma'"));
        assert!(parse_kernels("").is_err());
    }
}
