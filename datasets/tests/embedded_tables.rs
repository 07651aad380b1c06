//! The split-K tables embedded in the model crate (`mmaemu_model::splitk`) equal their Parquet sources, and the live
//! H100 split decisions that are in the table resolve to the logged split.

// Equal: every row of both tables looks up to the identical `TableRow`, the embedded row counts equal the Parquet row
// counts (so the embedded form holds no extra keys), and the generated checksums name these files.

use mmaemu_datasets::splitk_table::{read_splitk_table, SplitKTable};
use mmaemu_model::{
    embedded_rows, resolve_splitk, table_info, table_lookup, Format, OutDtype, Scheme, SplitKey, SplitRequest,
};
use std::path::PathBuf;

fn h100() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("h100pcie-cublaslt-12.8.3.14").unwrap()
}

fn rtx4060() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("rtx4060-cublaslt-12.8.3.14").unwrap()
}

mod common;

fn bundle_dir(table: mmaemu_model::Table) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("platforms").join(table.name())
}

fn read(table: mmaemu_model::Table) -> SplitKTable {
    let path = bundle_dir(table).join(format!("{}.parquet", table.name()));
    read_splitk_table(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn check_table(table: mmaemu_model::Table) {
    let t = read(table);
    let info = table_info(table).unwrap().source;
    assert_eq!(info.table_id, table.id());
    assert_eq!(info.file_stem, table.name());
    assert_eq!(info.parquet_sha256, t.sha256, "the embedded data were generated from another Parquet file");
    assert_eq!(info.sidecar_sha256, t.sidecar_sha256, "the embedded data were generated from another sidecar");
    assert_eq!(t.sidecar["table_id"].as_str(), Some(table.id()));
    assert_eq!(info.rows, t.rows.len() as u64);
    assert_eq!(embedded_rows(table).unwrap(), t.rows.len() as u64, "embedded rows != Parquet rows");
    assert_eq!(info.split_rows, t.rows.iter().filter(|r| r.decision.split_s > 1).count() as u64);

    let mut mismatches = Vec::new();
    for r in &t.rows {
        let (key, want) = (r.split_key().expect("a table row's key"), r.decision);
        let got = table_lookup(table, &key, r.workspace_bytes as u64);
        if got != Some(want) && mismatches.len() < 10 {
            mismatches.push(format!("{r:?}: embedded {got:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{} differs from its Parquet source:\n{}", table.id(), mismatches.join("\n"));
}

#[test]
fn rtx4060_table_is_embedded_exactly() {
    check_table(rtx4060());
}

#[test]
fn h100pcie_table_is_embedded_exactly() {
    check_table(h100());
}

/// docs/reference.md §6.3/§9.6: the H100 PCIe live split decisions whose key is in the table resolve (splitk =
/// auto, standard layout) to the logged S and scheme on the profile of the logged workspace.
#[test]
fn h100_live_decisions_in_the_table_resolve_to_the_logged_split() {
    let text = std::fs::read_to_string(bundle_dir(h100()).join("h100pcie-live-split-decisions.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for d in doc["decisions"].as_array().unwrap() {
        if d["rejected"].as_bool().unwrap() {
            continue;
        }
        let ws = d["workspace_bytes"].as_u64().unwrap();
        let profile = common::hopper_with_workspace(ws);
        let key = SplitKey {
            m: d["m"].as_u64().unwrap() as usize,
            n: d["n"].as_u64().unwrap() as usize,
            k: d["k"].as_u64().unwrap() as usize,
            fa: Format::from_name(d["fmt_a"].as_str().unwrap()).unwrap(),
            fb: Format::from_name(d["fmt_b"].as_str().unwrap()).unwrap(),
            out: OutDtype::from_name(d["out_dtype"].as_str().unwrap()).unwrap(),
            fast: d["fast_accum"].as_bool().unwrap(),
        };
        let Some(row) = table_lookup(h100(), &key, ws) else { continue };
        let id = d["id"].as_str().unwrap();
        let s = d["split_s"].as_u64().unwrap() as usize;
        assert_eq!(row.split_s as usize, s, "{id}: table row");
        assert_eq!(row.custom_option as u64, d["custom_option"].as_u64().unwrap(), "{id}: table row");
        let (dec, _) = resolve_splitk(&profile, &key, &SplitRequest::Auto, true, false).unwrap();
        assert_eq!(dec.s, s, "{id}: {dec}");
        assert_eq!(Some(dec.scheme), Scheme::from_name(d["split_scheme"].as_str().unwrap()), "{id}: {dec}");
        checked += 1;
    }
    // 112 decisions are in the table (sidecar table_cross_check).
    assert_eq!(checked, 112);
}
