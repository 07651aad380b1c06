//! `mmaemu platform build` on what a new GPU's bring-up gives it (docs/bring-up.md): a table whose sidecar, as the
//! recorder writes it for a GPU family it has no guess for, maps no customOption to a layout (the bundle builds, and
//! refuses those splits); fitted rules that leave a customOption undecided; a fitted envelope; a rebuild that
//! supersedes the bundle in its place; and a failed build that names the bundle, not its vanished staging directory.

use mmaemu_datasets::platform::{
    build_platform, replace_platform, unknown_layouts, BuildSpec, FittedEnvelope, ENVELOPE_FORMAT,
};
use mmaemu_datasets::splitk_table::read_splitk_table;
use mmaemu_model::{resolve_splitk, Category, Format, OutDtype, SplitKey, SplitRequest, SplitSource};
use std::path::{Path, PathBuf};

const RTX: &str = "rtx4060-cublaslt-12.8.3.14";

/// The RTX 4060's table under another GPU's name, its sidecar as `mmaemu-record heuristics` writes it for a GPU family
/// it has no guess for: no scheme map, no verification, no envelope.
fn recorded_table(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(RTX);
    let table = dir.join("g1-table.parquet");
    std::fs::copy(src.join(format!("{RTX}.parquet")), &table).unwrap();
    let mut sidecar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join(format!("{RTX}.json"))).unwrap()).unwrap();
    sidecar["platform"]["gpu"] = "Lab G1".into();
    sidecar["name"] = "g1-table".into();
    let o = sidecar.as_object_mut().unwrap();
    o.remove("verified_combos");
    o.remove("split_layouts");
    sidecar["envelope"] = serde_json::json!({"kind": "none", "inference": false});
    sidecar["codes"] = serde_json::json!({"custom -> scheme": {}, "ws": [0, 1048576]});
    std::fs::write(dir.join("g1-table.json"), sidecar.to_string()).unwrap();
    table
}

fn spec(table: &Path) -> BuildSpec {
    BuildSpec {
        name: "g1".into(),
        table: Some(table.to_path_buf()),
        preset: "ada".into(),
        profile: "g1".into(),
        caller: "torch._scaled_mm".into(),
        workspace: 1 << 20,
        ..BuildSpec::default()
    }
}

/// A table row of the 1 MiB workspace with customOption 1 that splits (`split`) or does not (S = 1): its key.
fn key(table: &Path, split: bool) -> SplitKey {
    let t = read_splitk_table(table).unwrap();
    let row = t
        .rows
        .iter()
        .find(|r| {
            r.workspace_bytes == 1 << 20
                && (r.decision.split_s > 1) == split
                && (!split || r.decision.custom_option == 1)
        })
        .expect("such a row");
    row.split_key().unwrap()
}

/// The customOptions of the table's split rows.
fn split_customs(table: &Path) -> Vec<u8> {
    let t = read_splitk_table(table).unwrap();
    let set: std::collections::BTreeSet<u8> =
        t.rows.iter().filter(|r| r.decision.split_s > 1).map(|r| r.decision.custom_option).collect();
    set.into_iter().collect()
}

#[test]
fn a_recorded_table_without_layouts_builds_and_its_splits_are_refused_until_rules_name_them() {
    let tmp = tempfile::tempdir().unwrap();
    let table = recorded_table(tmp.path());
    let out = tmp.path().join("platforms/g1");
    let first = build_platform(&spec(&table), &out).unwrap_or_else(|e| panic!("{e}"));
    let g1 = &first.profiles[0];
    // An unsplit table row resolves; a split one is refused, naming the customOption and the way out.
    let (d, _) = resolve_splitk(g1, &key(&table, false), &SplitRequest::Auto, true, false).unwrap();
    assert_eq!((d.s, d.source), (1, SplitSource::Table));
    let e = resolve_splitk(g1, &key(&table, true), &SplitRequest::Auto, true, false).unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown, "{e}");
    assert!(e.message().contains("customOption 1") && e.message().contains("fit splitk"), "{e}");
    let unknown = unknown_layouts(&out, &first).unwrap();
    let customs = split_customs(&table);
    assert!(customs.contains(&1) && customs.len() > 1, "{customs:?}");
    assert_eq!(unknown.iter().map(|u| u.0).collect::<Vec<_>>(), customs, "{unknown:?}");

    // Rules that decide customOption 1 and leave customOption 2 undecided (a null rule): 1 splits by its rule, 0
    // and 2 stay refused (no stand-in), and the rebuilt bundle supersedes the first in its place.
    let rules = tmp.path().join("rules.json");
    std::fs::write(
        &rules,
        serde_json::json!({"schemes": [
            {"gpu": "Lab G1", "label": "customOption 1", "rules": ["interleaved32/tree/restart4"],
             "rule": "interleaved32/tree/restart4"},
            {"gpu": "Lab G1", "label": "customOption 2", "rules": [], "rule": null}
        ]})
        .to_string(),
    )
    .unwrap();
    let rebuilt =
        replace_platform(&BuildSpec { rules: Some(rules), ..spec(&table) }, &out).unwrap_or_else(|e| panic!("{e}"));
    let g1 = &rebuilt.profiles[0];
    let (d, _) = resolve_splitk(g1, &key(&table, true), &SplitRequest::Auto, true, false).unwrap();
    assert_eq!(d.scheme.name(), "interleaved32/tree/restart4");
    assert!(d.s > 1);
    let unknown = unknown_layouts(&out, &rebuilt).unwrap();
    let rest: Vec<u8> = customs.into_iter().filter(|&c| c != 1).collect();
    assert_eq!(unknown.iter().map(|u| u.0).collect::<Vec<_>>(), rest, "{unknown:?}");
    let left: Vec<_> =
        std::fs::read_dir(tmp.path().join("platforms")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["g1"], "nothing but the bundle is left beside it");
}

#[test]
fn a_fitted_envelope_resolves_shapes_outside_the_table_and_only_with_its_table() {
    let tmp = tempfile::tempdir().unwrap();
    let table = recorded_table(tmp.path());
    let outside =
        SplitKey { m: 4096, n: 4096, k: 1000, fa: Format::E4m3, fb: Format::E4m3, out: OutDtype::Float32, fast: true };
    // Without an envelope the shape is unknown.
    let plain = build_platform(&spec(&table), &tmp.path().join("plain")).unwrap();
    let e = resolve_splitk(&plain.profiles[0], &outside, &SplitRequest::Auto, true, false).unwrap_err();
    assert_eq!(e.category(), Category::SplitKUnknown, "{e}");
    // The envelope of docs/reference.md §6.5's max_split_MN rule: 4096 x 4096 is far above twice the largest split
    // M*N of the setting (the table's own statistics), so S = 1.
    let table_sha = mmaemu_datasets::digest::sha256_file(&table).unwrap().0;
    let envelope = |sha: &str| FittedEnvelope {
        format: ENVELOPE_FORMAT.into(),
        table_sha256: sha.into(),
        envelope: serde_json::json!({"kind": "max_split_MN", "inference": true, "margin": 2}),
    };
    let file = tmp.path().join("envelope.json");
    envelope(&table_sha).write(&file).unwrap();
    assert_eq!(FittedEnvelope::read(&file).unwrap(), envelope(&table_sha));
    let with = build_platform(&BuildSpec { envelope: Some(file.clone()), ..spec(&table) }, &tmp.path().join("with"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (d, _) = resolve_splitk(&with.profiles[0], &outside, &SplitRequest::Auto, true, false).unwrap();
    assert_eq!((d.s, d.source), (1, SplitSource::Envelope));
    // An envelope fitted on another table is refused, naming the file.
    envelope(&"0".repeat(64)).write(&file).unwrap();
    let e = build_platform(&BuildSpec { envelope: Some(file.clone()), ..spec(&table) }, &tmp.path().join("other"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("envelope.json") && e.contains("fitted on the table"), "{e}");
    std::fs::write(&file, "{\"format\": \"mmaemu-envelope/0\", \"table_sha256\": \"\", \"envelope\": {}}").unwrap();
    let e = FittedEnvelope::read(&file).unwrap_err().to_string();
    assert!(e.contains("mmaemu-envelope/1"), "{e}");
}

#[test]
fn a_build_that_does_not_load_names_the_bundle_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let table = recorded_table(tmp.path());
    let out = tmp.path().join("platforms/g1");
    let e = build_platform(&BuildSpec { preset: "no-such-preset".into(), ..spec(&table) }, &out).unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&out.display().to_string()) && !text.contains(".mmaemu-platform-"), "{text}");
    assert_eq!(std::fs::read_dir(tmp.path().join("platforms")).unwrap().count(), 0, "{text}");
    // --replace supersedes a bundle only, and never leaves its output without one.
    std::fs::create_dir_all(&out).unwrap();
    let e = replace_platform(&spec(&table), &out).unwrap_err().to_string();
    assert!(e.contains("supersedes a platform bundle only"), "{e}");
    std::fs::remove_dir(&out).unwrap();
    build_platform(&spec(&table), &out).unwrap();
    let e = replace_platform(&BuildSpec { preset: "no-such-preset".into(), ..spec(&table) }, &out).unwrap_err();
    assert!(!e.to_string().contains(".mmaemu-platform-"), "{e}");
    assert_eq!(mmaemu_datasets::platform::load_platform(&out).unwrap().preset.name(), "ada");
}
