//! The split-K table's encoded rows (`MMSKEMB1`, model/src/splitk/README.md): a Parquet table turned into the compact
//! form the model looks splits up in — for the embedded tables (`mmaemu-embed-tables`) and for loaded bundles alike.

use crate::splitk_table::{SplitKTable, SplitKTableRow, SPLITK_FMTS, SPLITK_OUT_DTYPES};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

const MAGIC: &[u8; 8] = b"MMSKEMB1";

type Res<T> = Result<T, String>;

/// What the encoding holds (printed by `mmaemu-embed-tables`).
#[derive(Clone, Debug)]
pub struct Stats {
    /// Settings (ws, out, fast, fa, fb).
    pub settings: usize,
    /// Distinct shape sets and the shapes they hold.
    pub shape_sets: usize,
    pub shapes: usize,
    /// Distinct value tuples.
    pub values: usize,
    /// Runs of equal values and the distinct run blocks.
    pub runs: usize,
    pub run_blocks: usize,
}

fn out_code(s: &str) -> u8 {
    SPLITK_OUT_DTYPES.iter().position(|&x| x == s).unwrap_or(0) as u8
}

fn fmt_code(s: &str) -> u8 {
    SPLITK_FMTS.iter().position(|&x| x == s).unwrap_or(0) as u8
}

/// (ws, out, fast, fa, fb) with the codes of the blob.
type SettingKey = (u64, u8, u8, u8, u8);
/// split_s, custom_option, algo_id, tile_id, stages_id, reduction_scheme, cta_swizzling.
type Value7 = (u8, u8, i16, i16, i16, u8, u8);
/// A shape as stored: (n, m, k).
type Shape = (u32, u32, u32);

fn value_of(r: &SplitKTableRow) -> Value7 {
    let d = &r.decision;
    (d.split_s, d.custom_option, d.algo_id, d.tile_id, d.stages_id, d.reduction_scheme, d.cta_swizzling)
}

/// Encode a table's rows; the errors are the table's own defects (a duplicate key, too many distinct values).
pub fn encode_table(table: &SplitKTable) -> Res<(Vec<u8>, Stats)> {
    let table_id =
        table.sidecar.get("table_id").and_then(serde_json::Value::as_str).ok_or("the sidecar has no table_id")?;
    if table_id.len() > 255 {
        return Err("the sidecar's table_id is longer than 255 bytes".into());
    }

    // Group the rows by setting; shapes as (n, m, k).
    let mut groups: BTreeMap<SettingKey, Vec<(Shape, Value7)>> = BTreeMap::new();
    for r in &table.rows {
        let key =
            (r.workspace_bytes as u64, out_code(r.out_dtype), r.fast_accum as u8, fmt_code(r.fmt_a), fmt_code(r.fmt_b));
        groups.entry(key).or_default().push(((r.n as u32, r.m as u32, r.k as u32), value_of(r)));
    }
    let palette: Vec<Value7> = table.rows.iter().map(value_of).collect::<BTreeSet<_>>().into_iter().collect();
    let value_id: HashMap<Value7, u32> = palette.iter().enumerate().map(|(i, v)| (*v, i as u32)).collect();

    let mut shape_sets: Vec<Vec<Shape>> = Vec::new();
    let mut set_index: HashMap<Vec<Shape>, usize> = HashMap::new();
    let mut run_blocks: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let mut block_index: HashMap<(usize, Vec<u32>, Vec<u32>), usize> = HashMap::new();
    let mut settings = Vec::new(); // (key, set, block)
    for (key, mut rows) in groups {
        rows.sort_unstable();
        if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
            let (n, m, k) = w[0].0;
            return Err(format!(
                "{}: duplicate key m={m} n={n} k={k} ws={} out={} fast={} fa={} fb={}",
                table.path.display(),
                key.0,
                SPLITK_OUT_DTYPES[key.1 as usize],
                key.2 == 1,
                SPLITK_FMTS[key.3 as usize],
                SPLITK_FMTS[key.4 as usize]
            ));
        }
        let shapes: Vec<Shape> = rows.iter().map(|r| r.0).collect();
        let set = match set_index.get(&shapes) {
            Some(&i) => i,
            None => {
                shape_sets.push(shapes.clone());
                set_index.insert(shapes, shape_sets.len() - 1);
                shape_sets.len() - 1
            }
        };
        let (mut starts, mut vals) = (Vec::new(), Vec::new());
        for (i, (_, v)) in rows.iter().enumerate() {
            let id = value_id[v];
            if vals.last() != Some(&id) {
                starts.push(i as u32);
                vals.push(id);
            }
        }
        let bkey = (set, starts, vals);
        let block = match block_index.get(&bkey) {
            Some(&b) => b,
            None => {
                run_blocks.push((bkey.1.clone(), bkey.2.clone()));
                block_index.insert(bkey, run_blocks.len() - 1);
                run_blocks.len() - 1
            }
        };
        settings.push((key, set, block));
    }

    let max_dim = shape_sets.iter().flatten().map(|&(n, m, k)| n.max(m).max(k)).max().unwrap_or(0);
    let dim_w: usize = if max_dim <= u16::MAX as u32 { 2 } else { 4 };
    let max_set = shape_sets.iter().map(Vec::len).max().unwrap_or(0);
    let start_w: usize = if max_set <= 1 << 16 { 2 } else { 4 };
    let value_w: usize = if palette.len() <= 1 << 8 { 1 } else { 2 };
    if palette.len() > 1 << 16 {
        return Err("more than 65,536 distinct value tuples".into());
    }

    let mut b: Vec<u8> = Vec::new();
    let put = |b: &mut Vec<u8>, v: u64, w: usize| b.extend_from_slice(&v.to_le_bytes()[..w]);
    b.extend_from_slice(MAGIC);
    b.push(table_id.len() as u8);
    b.extend_from_slice(table_id.as_bytes());
    let sha = hex::decode(&table.sha256).map_err(|e| format!("bad hex {:?}: {e}", table.sha256))?;
    b.extend_from_slice(&sha);
    put(&mut b, table.rows.len() as u64, 8);
    b.extend_from_slice(&[dim_w as u8, start_w as u8, value_w as u8]);
    put(&mut b, shape_sets.len() as u64, 4);
    for set in &shape_sets {
        put(&mut b, set.len() as u64, 4);
        for &(n, m, k) in set {
            for d in [n, m, k] {
                put(&mut b, d as u64, dim_w);
            }
        }
    }
    put(&mut b, palette.len() as u64, 4);
    for &(s, c, algo, tile, stages, red, cta) in &palette {
        b.extend_from_slice(&[s, c]);
        for x in [algo, tile, stages] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.extend_from_slice(&[red, cta]);
    }
    // Run blocks are laid out one after the other; a setting names its block's first run and count.
    let mut block_first = Vec::new();
    let mut total_runs = 0usize;
    for (starts, _) in &run_blocks {
        block_first.push(total_runs);
        total_runs += starts.len();
    }
    put(&mut b, settings.len() as u64, 4);
    for &((ws, out, fast, fa, fb), set, block) in &settings {
        put(&mut b, ws, 8);
        b.extend_from_slice(&[out, fast, fa, fb]);
        put(&mut b, set as u64, 4);
        put(&mut b, block_first[block] as u64, 4);
        put(&mut b, run_blocks[block].0.len() as u64, 4);
    }
    put(&mut b, total_runs as u64, 4);
    for (starts, _) in &run_blocks {
        for &s in starts {
            put(&mut b, s as u64, start_w);
        }
    }
    for (_, vals) in &run_blocks {
        for &v in vals {
            put(&mut b, v as u64, value_w);
        }
    }
    let digest = Sha256::digest(&b);
    b.extend_from_slice(&digest);

    let stats = Stats {
        settings: settings.len(),
        shape_sets: shape_sets.len(),
        shapes: shape_sets.iter().map(Vec::len).sum(),
        values: palette.len(),
        runs: total_runs,
        run_blocks: run_blocks.len(),
    };
    Ok((b, stats))
}
