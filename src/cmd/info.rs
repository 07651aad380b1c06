//! `mmaemu info` (docs/reference.md §8.2): versions, environment, device, profiles, presets, backends and the
//! embedded split-K tables, as JSON (format `mmaemu-info/1`) or text.

use super::{CommandResult, Exit};
use mmaemu_api::env;
use mmaemu_api::model::splitk::table_info;
use serde_json::{json, Value};

/// The whole report as JSON.
pub fn report() -> Value {
    // GPU 0 through the registry (opened and gated once per process; not touched when MMAEMU_DISABLE_CUDA
    // is set).
    let slot = mmaemu_api::registry().gpu(0);
    let device = match &slot.gpu {
        Ok(g) => format!("0: {}, kernels compiled for {}", g.description(), g.arch),
        Err(why) => format!("none: {why}"),
    };
    let device_match = |gpu_name: Option<&str>, cc: (u32, u32)| match &slot.gpu {
        // Why there is no device is said once, on the `device:` line.
        Err(_) => "no CUDA device to match".to_string(),
        Ok(g) => {
            let same_name = gpu_name.is_some_and(|n| n.eq_ignore_ascii_case(&g.name));
            if same_name && (g.cc.0 as u32, g.cc.1 as u32) == cc {
                "MATCHES this device".to_string()
            } else {
                format!("does not match this device ({})", g.description())
            }
        }
    };
    let catalogue = mmaemu_api::catalogue();
    let profiles: Vec<Value> = catalogue
        .profiles()
        .map(|p| {
            json!({
                "name": p.name,
                "preset": p.preset.name(),
                "gpu_name": p.gpu_name,
                "capability": [p.capability.0, p.capability.1],
                "sm_count": p.sm_count,
                "cublaslt_version": p.cublaslt_version,
                "caller": p.caller.name(),
                "torch_version": p.torch_version,
                "workspace_bytes": p.workspace_bytes,
                "align": p.align,
                "splitk_table": p.splitk_table.map(|t| t.id()),
                "rejects": p.rejects.iter().map(|r| r.message.clone()).collect::<Vec<_>>(),
                "maturity": p.maturity.name(),
                "splitk_maturity": p.splitk_maturity.map(|m| m.name()).unwrap_or("none"),
                "description": p.description,
                "device_match": device_match(p.gpu_name.as_deref(), p.capability),
            })
        })
        .collect();
    let mut builtins: Vec<_> = mmaemu_api::model::catalogue::builtin_presets().iter().collect();
    builtins.sort_by(|a, b| a.preset.name().cmp(b.preset.name()));
    let presets: Vec<Value> = builtins
        .iter()
        .map(|b| {
            let p = &b.preset;
            json!({
                "name": p.name(),
                "aliases": b.aliases,
                "maturity": p.maturity().name(),
                "nfma": p.nfma(),
                "frac": p.frac(),
                "frac_out": p.frac_out(),
                "min_exp": p.min_exp(),
                "c_entry": p.c_entry().name(),
                "slow_chunk": p.slow_chunk(),
                "schemes": catalogue.schemes(p).iter().map(|s| s.name()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let platforms = catalogue.platforms();
    let tables: Vec<Value> = platforms
        .iter()
        .filter_map(|p| p.table.map(|t| (p, t)))
        .map(|(p, t)| match table_info(t) {
            Ok(i) => json!({
                "table_id": i.source.table_id,
                "platform": p.name,
                "file": if p.builtin {
                    format!("datasets/platforms/{}/{}.parquet", p.name, i.source.file_stem)
                } else {
                    format!("{}.parquet", i.source.file_stem)
                },
                "rows": i.source.rows,
                "split_rows": i.source.split_rows,
                "parquet_sha256": i.source.parquet_sha256,
                "embedded": p.builtin,
            }),
            Err(e) => json!({"table_id": t.id(), "platform": p.name, "error": e.message()}),
        })
        .collect();
    let platforms: Vec<Value> = platforms
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "description": p.description,
                "builtin": p.builtin,
                "preset": p.preset.name(),
                "profiles": p.profiles.iter().map(|q| q.name.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "format": "mmaemu-info/1",
        "version": env!("CARGO_PKG_VERSION"),
        "environment": env::report().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "device": device,
        "profiles": profiles,
        "platforms": platforms,
        "presets": presets,
        "backends": mmaemu_api::registry()
            .describe()
            .into_iter()
            .map(|(name, status)| json!({"name": name, "status": status.to_string()}))
            .collect::<Vec<_>>(),
        "tables": tables,
        "unavailable": match &slot.gpu {
            Err(why) => vec![format!("cuda: {why}")],
            Ok(_) if slot.reports.iter().all(|r| r.result.is_err()) => vec!["cuda: every kernel failed its self-test".to_string()],
            Ok(_) => vec![],
        },
    })
}

/// The report as text.
pub fn text(r: &Value) -> String {
    let mut s = format!("mmaemu {}\n\nenvironment:\n", r["version"].as_str().unwrap_or(""));
    if let Some(envs) = r["environment"].as_object() {
        for (k, v) in envs {
            s.push_str(&format!("  {k} = {}\n", v.as_str().unwrap_or("(unset)")));
        }
    }
    s.push_str(&format!("\ndevice: {}\n\nprofiles:\n", r["device"].as_str().unwrap_or("")));
    for p in r["profiles"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "  {:<28} preset {:<14} {} | workspace {} | table {} | declared {} (split-K {}) | {}\n",
            p["name"].as_str().unwrap_or(""),
            p["preset"].as_str().unwrap_or(""),
            p["gpu_name"].as_str().unwrap_or("no reference GPU"),
            p["workspace_bytes"],
            p["splitk_table"].as_str().unwrap_or("none"),
            p["maturity"].as_str().unwrap_or(""),
            p["splitk_maturity"].as_str().unwrap_or(""),
            p["device_match"].as_str().unwrap_or(""),
        ));
    }
    s.push_str(
        "  (declared: the model's own classification; `mmaemu status` computes what the recordings show, \
         instruction-level and GEMM-level evidence apart)\n",
    );
    s.push_str("\npresets:\n");
    for p in r["presets"].as_array().into_iter().flatten() {
        let aliases = p["aliases"].as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>());
        let alias = match aliases.as_deref() {
            Some([]) | None => String::new(),
            Some(a) => format!(" (alias: {})", a.join(", ")),
        };
        s.push_str(&format!(
            "  {}{alias}: declared {} - nfma {}, frac {}/{}, c {}, slow chunk {}\n",
            p["name"].as_str().unwrap_or(""),
            p["maturity"].as_str().unwrap_or(""),
            p["nfma"],
            p["frac"],
            p["frac_out"],
            p["c_entry"].as_str().unwrap_or(""),
            p["slow_chunk"],
        ));
    }
    s.push_str("\nbackends:\n");
    for b in r["backends"].as_array().into_iter().flatten() {
        s.push_str(&format!("  {}: {}\n", b["name"].as_str().unwrap_or(""), b["status"].as_str().unwrap_or("")));
    }
    s.push_str("\nplatforms (built-in bundles and those MMAEMU_PLATFORMS loads):\n");
    for p in r["platforms"].as_array().into_iter().flatten() {
        let profiles: Vec<&str> = p["profiles"].as_array().into_iter().flatten().filter_map(|x| x.as_str()).collect();
        s.push_str(&format!(
            "  {} ({}): preset {}, profiles {} - {}\n",
            p["name"].as_str().unwrap_or(""),
            if p["builtin"].as_bool() == Some(true) { "built-in" } else { "loaded" },
            p["preset"].as_str().unwrap_or(""),
            profiles.join(", "),
            p["description"].as_str().unwrap_or(""),
        ));
    }
    s.push_str("\nsplit-K tables (of the platforms: built-in ones embedded, loaded ones read and encoded at load):\n");
    for t in r["tables"].as_array().into_iter().flatten() {
        let sha = t["parquet_sha256"].as_str().unwrap_or("");
        if let Some(e) = t["error"].as_str() {
            s.push_str(&format!("  {}: {e}\n", t["table_id"].as_str().unwrap_or("")));
            continue;
        }
        s.push_str(&format!(
            "  {} ({}): {} rows, {} split rows, sha256 {}\n",
            t["table_id"].as_str().unwrap_or(""),
            t["file"].as_str().unwrap_or(""),
            t["rows"],
            t["split_rows"],
            &sha[..sha.len().min(16)],
        ));
    }
    s.push_str("\nunavailable components:\n");
    for u in r["unavailable"].as_array().into_iter().flatten() {
        s.push_str(&format!("  {}\n", u.as_str().unwrap_or("")));
    }
    s
}

/// `mmaemu info`: the report as text or JSON.
pub fn run(json: bool) -> CommandResult {
    let r = report();
    if json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    } else {
        print!("{}", text(&r));
    }
    Ok(Exit::Success)
}
