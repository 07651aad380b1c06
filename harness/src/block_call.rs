//! Replaying block-scaled `scaled_mm` rows (docs/reference.md §12, experimental): a call object whose two scales name
//! block-scaled ScalingTypes (revision 2) is checked by the model's `BlockScaledCall`, as `explain` and
//! `scaled_mm_v2` check it, and computed by the model's block-scaled GEMM on the row's profile.

use crate::replay::Computed;
use crate::under::Resolved;
use mmaemu_datasets::{limits, Expectation, Row, ScaleSpec, Scaling};
use mmaemu_model::block_call::{BlockMode, BlockScaledCall};
use mmaemu_model::block_gemm::Dims;
use mmaemu_model::dtype::Dtype;
use mmaemu_model::format::e2m1_unpack;
use mmaemu_model::{ChainEngine, Format};

/// The two scales of a row whose call object passes block-scaled ones and whose torch returned a result, with their
/// mode; None for any other row. A row that expects an error records how its torch refused the call (torch 2.7.1's
/// `_scaled_mm` refuses every block-scaled call): the tensor-wise path replays that refusal with torch 2.7.1's checks.
pub fn mode_of(row: &Row) -> Option<(BlockMode, &ScaleSpec, &ScaleSpec)> {
    if matches!(row.expected, Expectation::Error(_)) {
        return None;
    }
    let call = row.call.as_ref()?;
    let (a, b) = (call.scale_a.as_ref()?, call.scale_b.as_ref()?);
    let name = |s: Option<Scaling>| serde_json::to_value(s?).ok()?.as_str().map(str::to_string);
    let mode = BlockMode::of_scalings(&name(a.scaling)?, &name(b.scaling)?)?;
    Some((mode, a, b))
}

fn usize_of(x: i64, what: &str) -> Result<usize, String> {
    usize::try_from(x).map_err(|_| format!("{what} is negative ({x})"))
}

/// An FP8 operand's format (the row's `fmt_a` / `fmt_b`).
fn format_of(name: &str) -> Result<Format, String> {
    Dtype::from_name(name).format().ok_or_else(|| format!("'{name}' is not an FP8 format"))
}

/// Replay a block-scaled row (`mode_of` gave its mode and scales). `Err(reason)`: the row cannot be replayed (a call
/// object this replay does not rebuild: other layouts, out=, scale_result, a bias); `Ok(Err(e))`: the call raises `e`.
pub fn compute(
    row: &Row,
    (mode, sa, sb): (BlockMode, &ScaleSpec, &ScaleSpec),
    engine: &dyn ChainEngine,
    resolved: &Resolved,
) -> Result<Computed, String> {
    let call = row.call.as_ref().ok_or("a block-scaled row without a call object")?;
    let plain = |m: &mmaemu_datasets::MatSpec| m.layout == "std" && m.ld_pad == 0 && m.offset == 0;
    if !plain(&call.mat1) || !plain(&call.mat2) || call.out.is_some() || call.scale_result.is_some() {
        return Err(format!(
            "a {} row with transposed, padded or offset operands, out= or scale_result is not replayed",
            mode.label()
        ));
    }
    if call.bias.is_some() {
        // A GPU's result of a call mmaemu does not model is no evidence either way.
        return Err(format!("a bias with {} is not modelled: the row is not replayed", mode.label()));
    }
    let d = Dims { m: usize_of(row.m, "m")?, n: usize_of(row.n, "n")?, k: usize_of(row.k, "k")? };
    limits::check_in_force("the result", limits::product(&[d.m as u64, d.n as u64, 4]))?;
    let profile = match resolved.profile.clone()? {
        Some(p) => p,
        None => {
            let name = row.profile.as_deref().ok_or("op scaled_mm without a profile")?;
            mmaemu_api::catalogue().profile(name).map_err(|e| e.message().to_string())?
        }
    };
    let fp8 = (mode != BlockMode::Nvfp4).then(|| (Dtype::from_name(&row.fmt_a), Dtype::from_name(&row.fmt_b)));
    let checked = BlockScaledCall {
        mode,
        dims: d,
        dtypes: fp8,
        out: Dtype::from_name(row.effective_out_dtype()),
        fast: row.fast_accum.unwrap_or(false),
        bias: call.bias.is_some(),
        // The row is evidence of its call (scope null or `in`): the experimental mode is opted in to.
        experimental: row.scope.as_deref().is_none_or(|s| s == "in"),
    };
    let unpacked;
    let (formats, operands) = match mode {
        BlockMode::Nvfp4 => {
            unpacked = (e2m1_unpack(&row.a), e2m1_unpack(&row.b));
            ((Format::E4m3, Format::E4m3), (unpacked.0.as_slice(), unpacked.1.as_slice()))
        }
        _ => ((format_of(&row.fmt_a)?, format_of(&row.fmt_b)?), (row.a.as_slice(), row.b.as_slice())),
    };
    let scales = mmaemu_datasets::block_scales(mode, sa, sb)?;
    Ok(checked.compute(&profile, engine, formats, operands, &scales))
}
