//! The operands of a sweep's cases: generated once per shape, data class and format (the cases of one shape
//! share them) and kept with their sha256 for the rows that ship them by reference.

use crate::error::RecordError;
use crate::util::sha256_hex;
use mmaemu_datasets::inputs::{generate, InputSpec, Operand};
use mmaemu_model::Format;
use std::sync::Arc;

/// The last few generated operands and their sha256: the cases of one shape share them, so each is
/// generated once per shape, data class and format.
#[derive(Default)]
pub struct OperandCache {
    entries: Vec<(String, Generated)>,
}

/// A generated operand and its sha256.
pub type Generated = Arc<(Vec<u8>, String)>;

impl OperandCache {
    const SIZE: usize = 8;

    /// Operand `op` ([rows, k] of format `fmt`) of `spec`, and its sha256.
    pub fn get(
        &mut self,
        spec: &InputSpec,
        op: Operand,
        fmt: Format,
        rows: usize,
        k: usize,
    ) -> Result<Generated, RecordError> {
        let key = format!("{}|{op:?}|{fmt}|{rows}|{k}", serde_json::to_string(spec).unwrap_or_default());
        if let Some(i) = self.entries.iter().position(|(k, _)| *k == key) {
            let e = self.entries.remove(i);
            let v = e.1.clone();
            self.entries.insert(0, e);
            return Ok(v);
        }
        let bytes = generate(spec, op, fmt.name(), rows, k).map_err(RecordError::Model)?;
        let sha = sha256_hex(&bytes);
        let v = Arc::new((bytes, sha));
        self.entries.insert(0, (key, v.clone()));
        self.entries.truncate(Self::SIZE);
        Ok(v)
    }
}
