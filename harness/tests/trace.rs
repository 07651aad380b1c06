//! The trace of one element against the hardware: for the first element of every shipped recording row with recorded
//! bits, the trace ends in exactly those bits; a deliberately corrupted row's failure report carries the trace of its
//! first differing element.

use mmaemu_datasets::{read_recording, Expectation, Row};
use mmaemu_harness::recordings::{shipped_dir, verdict, RowTrial};
use mmaemu_harness::replay::compute;
use mmaemu_harness::trace::{element_count, expected_bits, trace_row};
use mmaemu_harness::Verdict;
use std::sync::Arc;

/// The first element a row records: 0 for rows with full bits, the first sample of a sha256 row.
fn first_element(row: &Row) -> Option<usize> {
    match &row.expected {
        Expectation::Bits(_) => (element_count(row).ok()? > 0).then_some(0),
        Expectation::Sha256(_) => {
            let s = mmaemu_datasets::inputs::Samples::parse(row.ext.expected_samples.as_deref()?).ok()?;
            s.index.first().map(|&i| i as usize)
        }
        Expectation::Error(_) => None,
    }
}

#[test]
fn first_element_of_every_recorded_row() {
    let files = mmaemu_datasets::discover(&[shipped_dir()]).unwrap();
    assert!(!files.is_empty(), "no shipped recordings");
    let mut traced = 0;
    for path in &files {
        let rec = read_recording(path).unwrap();
        let mut here = 0;
        for row in &rec.rows {
            let Some(index) = first_element(row) else { continue };
            match trace_row(row, index) {
                Ok(t) => {
                    let want = expected_bits(row, index, t.dtype)
                        .unwrap_or_else(|| panic!("{}: row {:?}: no recorded bits at {index}", path.display(), row.id));
                    assert_eq!(
                        t.bits,
                        want,
                        "{}: row {:?} element {index}: trace 0x{:X}",
                        path.display(),
                        row.id,
                        t.bits
                    );
                    here += 1;
                }
                // A row the trace cannot take must be one the replay skips too (never a silent pass).
                Err(e) => assert!(
                    compute(row).is_err(),
                    "{}: row {:?}: the replay computes it but the trace fails: {e}",
                    path.display(),
                    row.id
                ),
            }
        }
        eprintln!("{}: {here} rows traced", path.display());
        traced += here;
    }
    assert!(traced > 3_000, "only {traced} rows traced");
}

#[test]
fn corrupted_row_reports_the_trace_of_its_first_differing_element() {
    let path = shipped_dir().join("rtx4060-gemm.parquet");
    let rec = read_recording(&path).unwrap();
    // A split, slow, bfloat16 row: flip the lowest bit of its second element.
    let row = rec
        .rows
        .iter()
        .find(|r| {
            matches!(&r.expected, Expectation::Bits(b) if b.len() >= 4)
                && r.split_s.unwrap_or(1) > 1
                && r.out_dtype.as_deref() == Some("bfloat16")
        })
        .expect("a split bfloat16 row");
    let mut bad = row.clone();
    if let Expectation::Bits(b) = &mut bad.expected {
        b[2] ^= 1;
    }
    let t = RowTrial { name: "corrupted".into(), path: path.clone(), row: Arc::new(bad) };
    let (v, report) = verdict(&t);
    assert!(matches!(v, Verdict::Fail(_)), "{v:?}");
    let report = report.unwrap();
    let tail = report.split("reproduce: ").nth(1).expect("the rerun command");
    assert!(tail.contains("trace of the first differing element, index 1"), "{report}");
    assert!(tail.contains("a hand check starts at: "), "{report}");
    assert!(tail.contains("epilogue:") && tail.contains("combination of the partials:"), "{report}");
    // The trace ends in the computed bits, which are the recorded ones before the corruption.
    let good = u16::from_le_bytes([
        match &row.expected {
            Expectation::Bits(b) => b[2],
            _ => 0,
        },
        match &row.expected {
            Expectation::Bits(b) => b[3],
            _ => 0,
        },
    ]);
    assert!(tail.contains(&format!("result 0x{good:04X} [bfloat16]")), "{report}");
}

/// A row-wise call (docs/reference.md §4.2, hopper and ada with splitk=1, slow and fast, with a bias): the trace of
/// every element ends in the bits the call returns, and names the kernel.
#[test]
fn rowwise_trace_ends_in_the_call_bits() {
    use mmaemu_model::dtype::Dtype;
    use mmaemu_model::scaled_mm::{BiasSpec, ProfileArg, ScaleTensor, ScaledMm};
    use mmaemu_model::splitk::SplitRequest;
    use mmaemu_model::tensor::View;
    let (m, n, k) = (3, 16, 288);
    // Seeded codes (a fixed LCG): every finite e4m3 code but the NaNs.
    let mut x = 0x2545_F491u32;
    let mut code = || loop {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let c = (x >> 24) as u8;
        if c & 0x7F != 0x7F {
            return c;
        }
    };
    let a: Vec<u8> = (0..m * k).map(|_| code()).collect();
    let b: Vec<u8> = (0..n * k).map(|_| code()).collect();
    for (profile, fast) in [("hopper", false), ("hopper", true), ("ada", false)] {
        let input = View { dtype: Dtype::Float8E4m3fn, shape: vec![m, k], strides: vec![k, 1], offset: 0, storage: &a };
        let mat2 = View { dtype: Dtype::Float8E4m3fn, shape: vec![k, n], strides: vec![1, k], offset: 0, storage: &b };
        let mut c = ScaledMm::new(input, mat2, 1.0, 1.0);
        let vector = |len: usize, shape: Vec<usize>| ScaleTensor {
            dtype: Dtype::Float32,
            shape,
            values: (0..len).map(|i| 0.3 + 0.17 * i as f64).collect(),
            contiguous: true,
        };
        c.scale_a = vector(m, vec![m, 1]);
        c.scale_b = vector(n, vec![1, n]);
        c.bias = Some(BiasSpec { dtype: Dtype::BFloat16, numel: n, values: (0..n).map(|j| j as f32 - 8.0).collect() });
        c.out_dtype = Some(Dtype::BFloat16);
        c.use_fast_accum = fast;
        c.profile = ProfileArg::Name(profile.into());
        c.splitk = SplitRequest::Count(1);
        c.experimental = true;
        let out = c.clone().run().unwrap().out.logical_bytes();
        for i in 0..m {
            for j in 0..n {
                let t = mmaemu_trace::call::trace_scaled_mm(&c, i, j).unwrap();
                let o = i * n + j;
                assert_eq!(
                    t.bits,
                    u16::from_le_bytes([out[2 * o], out[2 * o + 1]]) as u32,
                    "{profile} {fast} ({i}, {j})"
                );
                assert!(t.notes.iter().any(|s| s.contains("f8f8bf16_rowwise")), "{:?}", t.notes);
            }
        }
    }
}
