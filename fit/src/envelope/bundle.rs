//! The fitted envelope as a bundle takes it (`mmaemu fit envelope --out`, `mmaemu-envelope/1`): the split-K table
//! sidecar's `envelope` object of the fitted rule, its inference claimed only where the sealed held-out test passed.

use super::*;
use mmaemu_datasets::platform::{FittedEnvelope, ENVELOPE_FORMAT};

/// The envelope document of a fit: `max_split_MN` (the model bounds each setting by the table's own largest split
/// M·N times the margin; inference only if no held-out row split above its bound) or `k_grid` (the bounds fitted on
/// the training rows, and per workspace the held-out test: `validated` where rows were tested and none split).
pub fn fitted(r: &EnvelopeReport) -> FittedEnvelope {
    let env = &r.envelope;
    let h = &r.heldout;
    let provenance = format!(
        "`mmaemu fit envelope --seed {} --holdout {} --margin {} --rule {}` on {} (sha256 {}): fitted on {} rows, \
         sealed held-out test on {} rows ({} shapes): {} above their bound, {} of them split",
        r.seed,
        r.holdout,
        env.margin,
        env.rule.name(),
        r.table,
        r.table_sha256,
        r.train_rows,
        h.rows,
        h.shapes,
        h.tested,
        h.violations.len()
    );
    let envelope = match env.rule {
        RuleKind::MaxSplitMn => json!({
            "kind": "max_split_MN",
            "inference": h.violations.is_empty(),
            "margin": env.margin,
            "claim": "M * N > margin * max_split_MN(setting): S = 1 (K plays no part)",
            "note": provenance,
        }),
        RuleKind::KGrid => {
            let bounds: Vec<Value> = env
                .per_grid
                .iter()
                .map(|(s, b)| {
                    let mut v = setting_json(s);
                    v["B"] = json!(b);
                    v
                })
                .collect();
            let validation: serde_json::Map<String, Value> = env
                .per_grid
                .keys()
                .map(|s| s.0)
                .collect::<BTreeSet<i64>>()
                .into_iter()
                .map(|ws| {
                    let (tested, split) = h.by_workspace.get(&ws).copied().unwrap_or((0, 0));
                    let status = if tested > 0 && split == 0 { "validated" } else { "unvalidated" };
                    (ws.to_string(), json!({"status": status, "tested": tested, "split_above_bound": split}))
                })
                .collect();
            json!({
                "kind": "k_grid",
                "inference": true,
                "margin": env.margin,
                "K_min": env.grid.first().copied().unwrap_or(0),
                "K_max": env.grid.last().copied().unwrap_or(0),
                "K_grid": env.grid,
                "K_lookup": "B at the smallest grid K >= K",
                "bounds": bounds,
                "validation": validation,
                "claim": "M * N > B(setting, K) and K_min <= K <= K_max: S = 1",
                "eval": provenance,
            })
        }
    };
    FittedEnvelope { format: ENVELOPE_FORMAT.to_string(), table_sha256: r.table_sha256.clone(), envelope }
}
