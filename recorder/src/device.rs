//! What the recording pipeline needs from a device: its platform metadata, a heuristic query, and a GEMM
//! run (several times, for the determinism check). Two implementations: the real GPU through cuBLASLt
//! ([`crate::gpu`]) and the simulated device ([`crate::sim`]), which answers with the mmaemu model.

use crate::caller::Caller;
use crate::descriptor::CallConfig;
use crate::error::RecordError;
use crate::scaling::RecipeScales;
use serde_json::{json, Value};

/// The device a recording comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// `mmaemu:platform`: `gpu`, `capability`, `sm_count`, `driver`, `cuda_runtime`, `cublaslt`, `torch`,
    /// `caller`, `workspace_bytes`, and the recorder's own keys.
    pub json: Value,
    /// The short GPU name of the `gpu` column (`H200`, `RTX 4060`, `simulated`).
    pub gpu_short: String,
    /// The compute capability.
    pub capability: (u32, u32),
    /// The cuBLASLt version (`13.0.0`), if known.
    pub cublaslt: Option<String>,
    /// True for the simulated device (rows get `truth = "model"`).
    pub simulated: bool,
}

impl Platform {
    /// The short name of a driver-reported GPU name: `NVIDIA GeForce RTX 4060` -> `RTX 4060`,
    /// `NVIDIA H100 PCIe` -> `H100 PCIe`.
    pub fn short_name(name: &str) -> String {
        let mut s = name.trim();
        for prefix in ["NVIDIA ", "GeForce ", "Tesla "] {
            s = s.strip_prefix(prefix).unwrap_or(s);
        }
        s.to_string()
    }

    /// The platform JSON with the caller of one run and its workspace filled in (null if it varies):
    /// `caller` (`torch._scaled_mm`, `transformer_engine`), `caller_version` (`torch-2.7`, ...: which
    /// call was made, next to the `cublaslt` it was made on) and the descriptor's summary.
    pub fn with_run(&self, caller: Caller, workspace: Option<u64>) -> Value {
        let mut j = self.json.clone();
        if let Value::Object(map) = &mut j {
            map.insert("caller".into(), json!(caller.platform_name()));
            map.insert("caller_version".into(), json!(caller.name()));
            map.insert("caller_detail".into(), json!(caller.version()));
            map.insert("workspace_bytes".into(), json!(workspace));
            map.insert("descriptor".into(), json!(crate::descriptor::summary(caller)));
        }
        j
    }
}

/// The algorithm cuBLASLt's heuristic returned (the `algo` column and the split table's value columns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlgoInfo {
    /// `CUBLASLT_ALGO_CONFIG_ID` (-1: unknown, simulated without a table row).
    pub algo_id: i64,
    /// `CUBLASLT_ALGO_CONFIG_TILE_ID`.
    pub tile_id: i64,
    /// `CUBLASLT_ALGO_CONFIG_STAGES_ID`.
    pub stages_id: i64,
    /// `CUBLASLT_ALGO_CONFIG_SPLITK_NUM` (1 when not split).
    pub split_s: i64,
    /// `CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME`.
    pub reduction_scheme: i64,
    /// `CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION`.
    pub custom_option: i64,
    /// `CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING`.
    pub cta_swizzling: i64,
    /// `CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID`, where the bindings have it.
    pub inner_shape_id: Option<i64>,
    /// `CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID`, where the bindings have it.
    pub cluster_shape_id: Option<i64>,
    /// The heuristic result's `workspaceSize` (bytes the algorithm needs).
    pub workspace_bytes: u64,
    /// The heuristic result's `wavesCount`.
    pub waves_count: f32,
    /// Where the values come from (`cublasLt heuristic`, or how the simulated device decided).
    pub source: &'static str,
}

impl AlgoInfo {
    /// The `algo` column's JSON; `workspace_limit` is the MAX_WORKSPACE_BYTES of the query.
    pub fn to_json(&self, workspace_limit: u64) -> Value {
        json!({
            "algo_id": self.algo_id,
            "tile_id": self.tile_id,
            "stages_id": self.stages_id,
            "split_s": self.split_s,
            "reduction_scheme": self.reduction_scheme,
            "custom_option": self.custom_option,
            "cta_swizzling": self.cta_swizzling,
            "inner_shape_id": self.inner_shape_id,
            "cluster_shape_id": self.cluster_shape_id,
            "workspace_bytes": self.workspace_bytes,
            "workspace_limit": workspace_limit,
            "waves_count": self.waves_count,
            "kernel": null,
            "source": self.source,
        })
    }
}

/// What a heuristic query returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Heuristic {
    /// The first algorithm.
    Algo(AlgoInfo),
    /// No algorithm: the cuBLAS status (`CUBLAS_STATUS_NOT_SUPPORTED` when none was returned).
    Rejected(String),
}

/// The operands and scales of one call.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// mat1 = A, [m, k] row-major.
    pub a: &'a [u8],
    /// B = mat2 transposed, [n, k] row-major.
    pub b: &'a [u8],
    /// scale_a.
    pub scale_a: f32,
    /// scale_b.
    pub scale_b: f32,
    /// scale_result, if passed.
    pub scale_result: Option<f32>,
    /// A scale recipe's scale tensors (None: tensor-wise, `scale_a` and `scale_b` are the scales).
    pub scales: Option<&'a RecipeScales>,
}

/// What running one call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    /// The call ran `results.len()` times; each result is the [m, n] row-major output bits.
    Ran {
        /// The algorithm the heuristic chose.
        algo: AlgoInfo,
        /// One result per run.
        results: Vec<Vec<u8>>,
        /// The fp32 bits of the amax cuBLASLt wrote, one per run, when the call asks for it (Transformer
        /// Engine with an FP8 output); empty otherwise, and from a device that does not compute it.
        amax: Vec<u32>,
    },
    /// The device cannot make the call at all (a scale recipe the simulated device's model does not
    /// compute): not recorded; the reason is counted and reported.
    Skipped(String),
    /// cuBLASLt refused the call: where (`heuristic`, `matmul`) and the cuBLAS status.
    Rejected {
        /// `heuristic` or `matmul`.
        stage: &'static str,
        /// The status name.
        status: String,
    },
}

/// A recording device: what the pipeline records from (the GPU or the simulated device).
pub trait Device {
    /// The platform metadata.
    fn platform(&self) -> &Platform;

    /// A heuristic query with the descriptor of `cfg` (its caller's call).
    fn heuristic(&mut self, cfg: &CallConfig) -> Result<Heuristic, RecordError>;

    /// Runs the call `runs` times with the same inputs, each into a fresh output buffer.
    fn run(&mut self, cfg: &CallConfig, inputs: &Inputs<'_>, runs: usize) -> Result<RunOutcome, RecordError>;

    /// Runs the calls of a chunk, in order (a device may compute them concurrently); the first failure
    /// stops the batch.
    fn run_batch(&mut self, calls: &[Call<'_>], runs: usize) -> Result<Vec<RunOutcome>, RecordError> {
        calls.iter().map(|c| self.run(&c.cfg, &c.inputs, runs)).collect()
    }
}

/// One call of a batch: its configuration and inputs.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The call.
    pub cfg: CallConfig,
    /// Its operands and scales.
    pub inputs: Inputs<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(Platform::short_name("NVIDIA GeForce RTX 4060"), "RTX 4060");
        assert_eq!(Platform::short_name("NVIDIA H100 PCIe"), "H100 PCIe");
        assert_eq!(Platform::short_name("NVIDIA H200"), "H200");
        assert_eq!(Platform::short_name("Tesla T4"), "T4");
    }
}
