//! The value types of a sweep spec's fields: shape dimensions and blocks, workspaces, scale_result values,
//! storage limits, operand layouts and the op rows replay as, each with its TOML form and its check.

use crate::caller::Caller;
use crate::geometry::{Geometry, OperandLayout, Storage as OperandStorage};
use serde::Deserialize;

/// The op recorded rows replay as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// The whole `torch._scaled_mm` call of the row's profile.
    #[default]
    ScaledMm,
    /// The numerics without torch's argument checks.
    Gemm,
}

/// One dimension of a shape block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a dimension: a number, a list of numbers, { from, to, step } or { pow2 = [lo, hi] }"
)]
pub enum Dim {
    /// One value.
    One(u64),
    /// A list of values.
    List(Vec<u64>),
    /// `{ from, to, step }`: from, from + step, ... <= to.
    Range { from: u64, to: u64, step: u64 },
    /// `{ pow2 = [lo, hi] }`: the powers of two in [lo, hi].
    Pow2 { pow2: [u64; 2] },
}

impl Dim {
    /// The values, in order.
    pub fn values(&self) -> Result<Vec<u64>, String> {
        match self {
            Dim::One(v) => Ok(vec![*v]),
            Dim::List(v) => Ok(v.clone()),
            Dim::Range { from, to, step } => {
                if *step == 0 {
                    return Err("a range needs step >= 1".into());
                }
                if to < from {
                    return Err(format!("range from {from} to {to} is empty"));
                }
                let count = (to - from) / step + 1;
                if count > 1 << 20 {
                    return Err(format!("range from {from} to {to} step {step} has {count} values (limit 2^20)"));
                }
                Ok((0..count).map(|i| from + i * step).collect())
            }
            Dim::Pow2 { pow2: [lo, hi] } => {
                let mut v = Vec::new();
                let mut p = 1u64;
                while p <= *hi {
                    if p >= *lo {
                        v.push(p);
                    }
                    match p.checked_mul(2) {
                        Some(q) => p = q,
                        None => break,
                    }
                }
                if v.is_empty() {
                    return Err(format!("no power of two in [{lo}, {hi}]"));
                }
                Ok(v)
            }
        }
    }
}

/// One `[[shapes]]` block: a grid m x n x k, or explicit triples.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a shape block: m, n and k (each a number, a list, { from, to, step } or { pow2 = [lo, hi] }), \
                 or mnk = [[m, n, k], ...], and nothing else"
)]
pub enum ShapeBlock {
    /// The cartesian product of three dimensions.
    Grid { m: Dim, n: Dim, k: Dim },
    /// Explicit (m, n, k) triples.
    List { mnk: Vec<[u64; 3]> },
}

/// A workspace entry: `"caller"` or a byte count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(untagged)]
pub enum WorkspaceSel {
    /// A byte count.
    Bytes(u64),
    /// `"caller"`: the caller's default on the GPU.
    Named(CallerWorkspace),
}

/// The only named workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerWorkspace {
    /// The caller's default workspace.
    Caller,
}

impl WorkspaceSel {
    /// The byte count on a GPU of compute capability `cap`.
    pub fn bytes(self, caller: Caller, cap: (u32, u32)) -> u64 {
        match self {
            WorkspaceSel::Bytes(b) => b,
            WorkspaceSel::Named(CallerWorkspace::Caller) => caller.default_workspace(cap),
        }
    }
}

/// A scale_result entry: `"none"` (not passed) or a value.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ScaleResultSel {
    /// A value (rounded to fp32).
    Value(f64),
    /// `"none"`.
    Named(NoneWord),
}

/// The word `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoneWord {
    /// Not passed.
    None,
}

impl ScaleResultSel {
    /// The fp32 value, None when not passed.
    pub fn value(self) -> Option<f32> {
        match self {
            ScaleResultSel::Value(v) => Some(v as f32),
            ScaleResultSel::Named(NoneWord::None) => None,
        }
    }
}

/// `[storage]`: when rows ship operands and results, and when only their hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Storage {
    /// a + b + result bytes up to this are stored in the row.
    pub inline_max_bytes: u64,
    /// Result elements kept for rows above the limit.
    pub samples: usize,
}

impl Default for Storage {
    fn default() -> Self {
        Storage { inline_max_bytes: 4 << 20, samples: 16 }
    }
}

/// One operand of a `[[layouts]]` entry: the call object's words (`docs/recording-format.md`, "The call
/// object").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OperandSpec {
    /// `std`, or `col` (mat1) / `row` (mat2); default `std`.
    #[serde(default)]
    pub layout: Option<String>,
    /// Extra elements in the leading dimension.
    #[serde(default)]
    pub ld_pad: u64,
    /// Elements before the operand in its storage.
    #[serde(default)]
    pub offset: u64,
}

/// One `[[layouts]]` entry: how mat1 and mat2 sit in their storage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LayoutSpec {
    /// mat1 (`std` or `col`).
    #[serde(default)]
    pub mat1: OperandSpec,
    /// mat2 (`std` or `row`).
    #[serde(default)]
    pub mat2: OperandSpec,
}

/// Padding and offsets above this are refused (they only grow the buffers).
pub const MAX_LAYOUT_ELEMENTS: u64 = 1 << 16;

impl LayoutSpec {
    /// The geometry, or why the entry is not one.
    pub fn geometry(&self) -> Result<Geometry, String> {
        let one = |o: &OperandSpec, name: &str, other: &str| -> Result<OperandLayout, String> {
            let storage = match o.layout.as_deref() {
                None | Some("std") => OperandStorage::Std,
                Some(w) if w == other => OperandStorage::Transposed,
                Some(w) => return Err(format!("{name}.layout {w:?} is not \"std\" or \"{other}\"")),
            };
            if o.ld_pad > MAX_LAYOUT_ELEMENTS || o.offset > MAX_LAYOUT_ELEMENTS {
                return Err(format!("{name}: ld_pad and offset must be at most {MAX_LAYOUT_ELEMENTS}"));
            }
            Ok(OperandLayout { storage, ld_pad: o.ld_pad as usize, offset: o.offset as usize })
        };
        Ok(Geometry { mat1: one(&self.mat1, "mat1", "col")?, mat2: one(&self.mat2, "mat2", "row")? })
    }
}
