//! docs/reference.md §6.3 at the level of a whole call: every H100 PCIe live decision
//! (tables/h100pcie-live-split-decisions.json) whose key is in the H100 table is what `explain` with splitk=auto
//! decides on the profile of the logged workspace; the calls the H100 rejected are ReferenceRejectsError.

use mmaemu_model::dtype::Dtype;
use mmaemu_model::scaled_mm::{ProfileArg, ScaleTensor, ScaledMm, Validation};
use mmaemu_model::splitk::{table_lookup, SplitKey, SplitRequest};
use mmaemu_model::tensor::View;
use mmaemu_model::{Format, OutDtype};

fn h100() -> mmaemu_model::Table {
    mmaemu_model::Table::builtin("h100pcie-cublaslt-12.8.3.14").unwrap()
}

mod common;

#[test]
fn explain_gives_the_logged_decisions() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/platforms/h100pcie-cublaslt-12.8.3.14/h100pcie-live-split-decisions.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut in_table, mut rejected) = (0, 0);
    for d in doc["decisions"].as_array().unwrap() {
        let id = d["id"].as_str().unwrap();
        let (m, n, k) =
            (d["m"].as_u64().unwrap() as usize, d["n"].as_u64().unwrap() as usize, d["k"].as_u64().unwrap() as usize);
        let (fa, fb) = (d["fmt_a"].as_str().unwrap(), d["fmt_b"].as_str().unwrap());
        let out = d["out_dtype"].as_str().unwrap();
        let ws = d["workspace_bytes"].as_u64().unwrap();
        let profile = common::hopper_with_workspace(ws);
        let input =
            View { dtype: Dtype::from_name(fa), shape: vec![m, k], strides: vec![k, 1], offset: 0, storage: &[] };
        let mat2 =
            View { dtype: Dtype::from_name(fb), shape: vec![k, n], strides: vec![1, k], offset: 0, storage: &[] };
        let mut call = ScaledMm::new(input, mat2, 1.0, 1.0);
        call.scale_a = ScaleTensor::scalar(1.0);
        call.out_dtype = Some(Dtype::from_name(out));
        call.use_fast_accum = d["fast_accum"].as_bool().unwrap();
        call.profile = ProfileArg::Value(Box::new(profile));
        call.splitk = SplitRequest::Auto;
        let plan = call.explain();
        if d["rejected"].as_bool().unwrap() {
            match &plan.validation {
                Validation::Error { name, .. } => assert_eq!(name, "ReferenceRejectsError", "{id}"),
                Validation::Ok => panic!("{id}: the H100 rejected this call"),
            }
            rejected += 1;
            continue;
        }
        let key = SplitKey {
            m,
            n,
            k,
            fa: Format::from_name(fa).unwrap(),
            fb: Format::from_name(fb).unwrap(),
            out: OutDtype::from_name(out).unwrap(),
            fast: call.use_fast_accum,
        };
        if table_lookup(h100(), &key, ws).is_none() {
            continue;
        }
        assert_eq!(plan.validation, Validation::Ok, "{id}");
        let split = plan.split.as_ref().unwrap();
        assert_eq!(split.s as u64, d["split_s"].as_u64().unwrap(), "{id}");
        assert_eq!(split.scheme.name(), d["split_scheme"].as_str().unwrap(), "{id}");
        in_table += 1;
    }
    assert_eq!((in_table, rejected), (112, 2));
}
