//! What the fits hand to `mmaemu platform build`: the split-K rules `mmaemu fit splitk --json` fitted per label (its
//! `schemes`, read by `--rules`) and the envelope `mmaemu fit envelope --out` fitted (`mmaemu-envelope/1`, read by
//! `--envelope`): one serde type each, which the fit writes and the build reads.

use crate::DatasetError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The rules of one (GPU, label) of a split-K fit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemeFit {
    /// GPU.
    pub gpu: String,
    /// Label: `customOption C` or a recorded scheme name.
    pub label: String,
    /// The rules whose slow form survives every slow group of the label and whose fast form survives every fast
    /// group, in candidate order.
    pub rules: Vec<String>,
    /// The rule a table maps the label to: the one whose order is named by the label where the label is an order
    /// (`pairwise`), else the first; None where no rule fits every group.
    pub rule: Option<String>,
}

/// What a platform build reads of a split-K fit's `--json` output: its `schemes` (the other keys are the report's).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct FittedSchemes {
    /// Per (GPU, label), the fitted rules.
    pub schemes: Vec<SchemeFit>,
}

impl FittedSchemes {
    /// Read the output of `mmaemu fit splitk --json` at `path`.
    pub fn read(path: &Path) -> Result<FittedSchemes, DatasetError> {
        let invalid = |what: String| super::invalid(path, what);
        let text = super::read_data(path, "the fitted rules")?;
        serde_json::from_str(&text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => {
                invalid(format!("not the `schemes` of `mmaemu fit splitk --json`: {e}"))
            }
            _ => invalid(format!("not JSON: {e}")),
        })
    }

    /// The fitted rule of a label: None if the fit has no such label, an error naming it if no single rule fits
    /// every group of it.
    pub fn rule(&self, label: &str) -> Result<Option<&str>, String> {
        match self.schemes.iter().find(|s| s.label == label) {
            None => Ok(None),
            Some(s) => {
                s.rule.as_deref().map(Some).ok_or_else(|| format!("scheme '{label}': no single rule fits every group"))
            }
        }
    }
}

/// The format of an envelope document (`mmaemu fit envelope --out`).
pub const ENVELOPE_FORMAT: &str = "mmaemu-envelope/1";

/// An envelope fitted from a split-K table (docs/platform-format.md, "Building"): the sidecar's `envelope` object the
/// fit stands behind, and the table it was fitted on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FittedEnvelope {
    /// [`ENVELOPE_FORMAT`].
    pub format: String,
    /// sha256 of the split-K table (Parquet) it was fitted on: a bundle takes it only with that table.
    pub table_sha256: String,
    /// The sidecar's `envelope` object (`kind` `max_split_MN` or `k_grid`, docs/reference.md §6.5).
    pub envelope: serde_json::Value,
}

impl FittedEnvelope {
    /// Read an envelope document at `path`.
    pub fn read(path: &Path) -> Result<FittedEnvelope, DatasetError> {
        let invalid = |what: String| super::invalid(path, what);
        let text = super::read_data(path, "the fitted envelope")?;
        let doc: FittedEnvelope = serde_json::from_str(&text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => {
                invalid(format!("not an envelope document of `mmaemu fit envelope --out`: {e}"))
            }
            _ => invalid(format!("not JSON: {e}")),
        })?;
        if doc.format != ENVELOPE_FORMAT {
            return Err(invalid(format!("format {:?}, expected {ENVELOPE_FORMAT:?}", doc.format)));
        }
        if !doc.envelope.is_object() {
            return Err(invalid("`envelope` is not an object".into()));
        }
        Ok(doc)
    }

    /// Write it as JSON at `path`.
    pub fn write(&self, path: &Path) -> Result<(), DatasetError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| super::invalid(path, e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| DatasetError::Write { path: path.to_path_buf(), detail: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_fit_writes_reads_back() {
        let fitted = SchemeFit {
            gpu: "G".into(),
            label: "customOption 1".into(),
            rules: vec!["interleaved64/pairwise/restart2".into()],
            rule: Some("interleaved64/pairwise/restart2".into()),
        };
        let open = SchemeFit { label: "serial".into(), rules: Vec::new(), rule: None, ..fitted.clone() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fit.json");
        let doc = serde_json::json!({"rows": [], "schemes": [fitted, open]});
        std::fs::write(&path, doc.to_string()).unwrap();
        let read = FittedSchemes::read(&path).unwrap();
        assert_eq!(read.schemes, vec![fitted.clone(), open]);
        assert_eq!(read.rule("customOption 1"), Ok(fitted.rule.as_deref()));
        assert_eq!(read.rule("pairwise"), Ok(None));
        assert!(read.rule("serial").unwrap_err().contains("no single rule"));
        for (text, want) in [("{\"rows\": []}", "`schemes`"), ("{", "not JSON")] {
            std::fs::write(&path, text).unwrap();
            let e = FittedSchemes::read(&path).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
