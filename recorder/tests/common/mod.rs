//! What the recorder's integration tests share: a small resumable sweep (16 cases, chunks of 5) that the
//! simulated device records in well under a second.

/// A sweep of 16 cases in 4 chunks; tests make a different spec by replacing `seed = 9`.
pub const SMALL_SWEEP: &str = r#"
kind = "sweep"
name = "small"
seed = 9
formats = [["e4m3", "e4m3"], ["e4m3", "e5m2"]]
out_dtypes = ["bfloat16", "float8_e5m2"]
fast_accum = [false, true]
chunk_rows = 5
[[shapes]]
m = [1, 7]
n = [16, 32]
k = [32, 24]
"#;
