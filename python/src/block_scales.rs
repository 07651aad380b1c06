//! The e8m0 block scales of `dot` (docs/reference.md §2.8): their checks against a, b and the preset, their codes
//! gathered in row-major order, one row per output.

use crate::desc::Desc;
use mmaemu_api::model::dtype::Dtype;
use mmaemu_api::model::{Error, Preset};

/// Both operands' scale codes, `blocks` per output.
pub struct BlockScales {
    a: Vec<u8>,
    b: Vec<u8>,
    blocks: usize,
}

impl BlockScales {
    /// Output `i`'s scale codes of A and of B, one per block.
    pub fn row(&self, i: usize) -> (&[u8], &[u8]) {
        let row = i * self.blocks..(i + 1) * self.blocks;
        (&self.a[row.clone()], &self.b[row])
    }
}

/// The scales of a call whose outputs have shape `lead` and whose operands have `k` elements per chain: None
/// without scales; an error when only one is given, when the preset takes none, or when one has the wrong dtype
/// (float8_e8m0fnu or uint8 codes) or a shape other than `lead + [ceil(K / block)]`. Shapes are checked before
/// anything is gathered, so the codes are no more than a's.
///
/// # Safety
/// As [`Desc::storage`], for both descriptions.
pub unsafe fn gather(
    preset: &Preset,
    lead: &[usize],
    k: usize,
    scale_a: Option<&Desc>,
    scale_b: Option<&Desc>,
) -> Result<Option<BlockScales>, Error> {
    let (sa, sb) = match (scale_a, scale_b) {
        (None, None) => return Ok(None),
        (Some(sa), Some(sb)) => (sa, sb),
        _ => return Err(Error::invalid_value("scale_a and scale_b go together: give both or neither")),
    };
    let Some(block) = preset.scale_block() else {
        return Err(Error::invalid_value(format!(
            "preset '{}' takes no block scales (the presets with e8m0 block scales: 'b200_tcgen05', 'rtx50_mma_sync')",
            preset.name()
        )));
    };
    let blocks = k.div_ceil(block);
    let mut want = lead.to_vec();
    want.push(blocks);
    let mut codes = [Vec::new(), Vec::new()];
    for (out, (name, d)) in codes.iter_mut().zip([("scale_a", sa), ("scale_b", sb)]) {
        if !matches!(d.model_dtype(), Dtype::Float8E8m0fnu) && d.dtype != "uint8" {
            return Err(Error::wrong_type(format!(
                "{name}: expected a float8_e8m0fnu tensor or uint8 e8m0 codes, got {}",
                d.dtype
            )));
        }
        if d.shape != want {
            return Err(Error::invalid_value(format!(
                "{name} must have the shape a.shape[:-1] + (ceil(K / {block}),) = {want:?} (one e8m0 code per {block} \
                 elements of K = {k}), got {:?}",
                d.shape
            )));
        }
        d.geometry(name)?;
        // SAFETY: forwarded.
        let storage = unsafe { d.storage() };
        let mut reached = true;
        out.reserve_exact(d.numel());
        d.each_index(|_, i| match storage.get(i) {
            Some(&c) => out.push(c),
            None => reached = false,
        });
        if !reached {
            return Err(Error::invalid_value(format!("{name}: the view reaches beyond its storage")));
        }
    }
    let [a, b] = codes;
    Ok(Some(BlockScales { a, b, blocks }))
}
