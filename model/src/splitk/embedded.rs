//! Decoding and lookup of a table's encoded rows (format `MMSKEMB1`, see README.md in this directory), checked
//! against its sidecar when first used.

use super::sha256::{hex, sha256};
use super::sidecar::Sidecar;
use super::{SplitKey, TableRow};
use crate::epilogue::OutDtype;
use crate::error::{Category, Error, Result};
use crate::format::Format;
use std::cmp::Ordering;

/// The magic number of the format.
const MAGIC: &[u8; 8] = b"MMSKEMB1";

/// Bytes of one value tuple: split_s, custom_option, algo_id (i16), tile_id (i16), stages_id (i16),
/// reduction_scheme, cta_swizzling.
const VALUE_BYTES: usize = 10;

/// Bytes of one setting record: ws (u64), out, fast, fa, fb (u8 each), shape set, first run, run count (u32).
const SETTING_BYTES: usize = 24;

/// One table setting (ws, out, fast, fa, fb) and where its runs are.
#[derive(Clone, Copy, Debug)]
struct Setting {
    ws: u64,
    out: OutDtype,
    fast: bool,
    fa: Format,
    fb: Format,
    set: usize,
    first: usize,
    count: usize,
}

/// One shape set: `count` (n, m, k) triples sorted ascending, `3 * dim_w` bytes each.
#[derive(Clone, Copy, Debug)]
struct ShapeSet {
    bytes: &'static [u8],
    count: usize,
}

/// A decoded (and checked) embedded table.
#[derive(Debug)]
pub(crate) struct Embedded {
    /// Number of rows (the sum of the settings' shape set sizes).
    pub rows: u64,
    /// Distinct (M, N, K) over all settings.
    pub distinct_shapes: u64,
    /// The workspaces the rows are for, ascending.
    pub workspaces: Vec<u64>,
    /// sha256 of the whole encoded blob.
    pub sha256: String,
    dim_w: usize,
    start_w: usize,
    value_w: usize,
    sets: Vec<ShapeSet>,
    values: Vec<TableRow>,
    settings: Vec<Setting>,
    starts: &'static [u8],
    vals: &'static [u8],
}

#[inline]
fn rd(b: &[u8], i: usize, w: usize) -> u32 {
    match w {
        1 => b[i] as u32,
        2 => u16::from_le_bytes([b[i], b[i + 1]]) as u32,
        _ => u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]),
    }
}

struct Cursor<'a> {
    b: &'static [u8],
    pos: usize,
    err: &'a dyn Fn(&str) -> Error,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&'static [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| (self.err)("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn uint(&mut self, w: usize) -> Result<u64> {
        let s = self.take(w)?;
        let mut le = [0u8; 8];
        le[..w].copy_from_slice(s);
        Ok(u64::from_le_bytes(le))
    }
    fn usize(&mut self, w: usize) -> Result<usize> {
        let v = self.uint(w)?;
        usize::try_from(v).map_err(|_| (self.err)("a count does not fit"))
    }
}

fn out_of_code(c: u8) -> Option<OutDtype> {
    OutDtype::ALL.get(c as usize).copied()
}

fn fmt_of_code(c: u8) -> Option<Format> {
    Format::ALL.get(c as usize).copied()
}

/// Decodes and checks a table's encoded rows against its sidecar. The blob is checked completely here (sha256
/// trailer, table_id, the Parquet file it was made from, every index, and every setting's rows and split rows
/// against the sidecar), so that a lookup afterwards is two binary searches and cannot fail. Every problem is a
/// data error (`Category::Data`) naming the table, never a panic.
pub(crate) fn decode(blob: &'static [u8], sc: &Sidecar) -> Result<Embedded> {
    let expected_id = sc.table_id;
    let err = |what: &str| Error::new(Category::Data, format!("split-K table {} ({expected_id}): {what}", sc.name));
    if sc.verified_table_id != sc.table_id {
        return Err(err(&format!(
            "the verified split combinations are for table {}, not {}",
            sc.verified_table_id, sc.table_id
        )));
    }
    if blob.len() < MAGIC.len() + 32 || &blob[..MAGIC.len()] != MAGIC {
        return Err(err("not an MMSKEMB1 blob"));
    }
    let (body, trailer) = blob.split_at(blob.len() - 32);
    let digest = sha256(body);
    if digest[..] != trailer[..] {
        return Err(err(&format!(
            "sha256 {} of the encoded rows differs from their trailer {} (corrupt data)",
            hex(&digest),
            hex(trailer)
        )));
    }

    let mut c = Cursor { b: body, pos: MAGIC.len(), err: &err };
    let id_len = c.usize(1)?;
    let table_id = std::str::from_utf8(c.take(id_len)?).map_err(|_| err("table_id is not UTF-8"))?.to_string();
    if table_id != expected_id {
        return Err(err(&format!("the data are for table {table_id}")));
    }
    let parquet_sha = hex(c.take(32)?);
    if parquet_sha != sc.parquet_sha256 {
        return Err(err(&format!(
            "the rows were made from a Parquet file with sha256 {parquet_sha}, the sidecar describes {}",
            sc.parquet_sha256
        )));
    }
    let rows = c.uint(8)?;
    let dim_w = c.usize(1)?;
    let start_w = c.usize(1)?;
    let value_w = c.usize(1)?;
    if !matches!(dim_w, 2 | 4) || !matches!(start_w, 2 | 4) || !matches!(value_w, 1 | 2) {
        return Err(err("bad field widths"));
    }

    let n_sets = c.usize(4)?;
    let mut sets = Vec::with_capacity(n_sets.min(1 << 10));
    for _ in 0..n_sets {
        let count = c.usize(4)?;
        let bytes = c.take(count.checked_mul(3 * dim_w).ok_or_else(|| err("shape set too large"))?)?;
        let set = ShapeSet { bytes, count };
        for j in 1..count {
            if shape(set, dim_w, j - 1) >= shape(set, dim_w, j) {
                return Err(err("a shape set is not strictly increasing"));
            }
        }
        sets.push(set);
    }

    let n_values = c.usize(4)?;
    let mut values = Vec::with_capacity(n_values.min(1 << 16));
    for _ in 0..n_values {
        let v = c.take(VALUE_BYTES)?;
        let i16_at = |i: usize| i16::from_le_bytes([v[i], v[i + 1]]);
        values.push(TableRow {
            split_s: v[0],
            custom_option: v[1],
            algo_id: i16_at(2),
            tile_id: i16_at(4),
            stages_id: i16_at(6),
            reduction_scheme: v[8],
            cta_swizzling: v[9],
        });
    }

    let n_settings = c.usize(4)?;
    let mut raw_settings = Vec::with_capacity(n_settings.min(1 << 12));
    for _ in 0..n_settings {
        let r = c.take(SETTING_BYTES)?;
        raw_settings.push(r);
    }
    let n_runs = c.usize(4)?;
    let starts = c.take(n_runs.checked_mul(start_w).ok_or_else(|| err("too many runs"))?)?;
    let vals = c.take(n_runs.checked_mul(value_w).ok_or_else(|| err("too many runs"))?)?;
    if c.pos != body.len() {
        return Err(err("trailing bytes"));
    }
    if let Some(j) = (0..n_runs).find(|&j| rd(vals, j * value_w, value_w) as usize >= values.len()) {
        return Err(err(&format!("run {j} names a value tuple outside the palette")));
    }

    let mut settings = Vec::with_capacity(raw_settings.len());
    let mut total = 0u64;
    for r in raw_settings {
        let u32_at = |i: usize| u32::from_le_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]) as usize;
        let ws = u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
        let (out, fast, fa, fb) = (out_of_code(r[8]), r[9], fmt_of_code(r[10]), fmt_of_code(r[11]));
        let (Some(out), Some(fa), Some(fb), true) = (out, fa, fb, fast <= 1) else {
            return Err(err("a setting has an unknown out dtype, format or fast flag"));
        };
        let s = Setting { ws, out, fast: fast == 1, fa, fb, set: u32_at(12), first: u32_at(16), count: u32_at(20) };
        let set = sets.get(s.set).ok_or_else(|| err("a setting names a missing shape set"))?;
        let in_range = s.first.checked_add(s.count).is_some_and(|e| e <= n_runs);
        if !in_range || (s.count == 0) != (set.count == 0) {
            return Err(err("a setting's runs are out of range"));
        }
        // Runs: the first starts at 0, starts strictly increase and stay inside the shape set.
        let mut prev: Option<usize> = None;
        for j in s.first..s.first + s.count {
            let st = rd(starts, j * start_w, start_w) as usize;
            let ok = match prev {
                None => st == 0,
                Some(p) => st > p,
            };
            if !ok || st >= set.count {
                return Err(err("a setting's run starts are not increasing from 0 inside its shape set"));
            }
            prev = Some(st);
        }
        if settings.iter().any(|o: &Setting| (o.ws, o.out, o.fast, o.fa, o.fb) == (s.ws, s.out, s.fast, s.fa, s.fb)) {
            return Err(err("a setting occurs twice"));
        }
        total += set.count as u64;
        settings.push(s);
    }
    if total != rows || rows != sc.rows {
        return Err(err(&format!("{total} rows in the settings, {rows} in the header, {} in the sidecar", sc.rows)));
    }
    let mut workspaces: Vec<u64> = settings.iter().map(|s| s.ws).collect();
    workspaces.sort_unstable();
    workspaces.dedup();
    let blob_sha256 = hex(&sha256(blob));
    let e = Embedded {
        rows,
        distinct_shapes: 0,
        workspaces,
        sha256: blob_sha256,
        dim_w,
        start_w,
        value_w,
        sets,
        values,
        settings,
        starts,
        vals,
    };
    e.check_against(sc).map_err(|m| err(&m))?;
    let mut shapes: Vec<(u32, u32, u32)> =
        e.sets.iter().flat_map(|&set| (0..set.count).map(move |j| shape(set, dim_w, j))).collect();
    shapes.sort_unstable();
    shapes.dedup();
    Ok(Embedded { distinct_shapes: shapes.len() as u64, ..e })
}

#[inline]
fn shape(set: ShapeSet, w: usize, j: usize) -> (u32, u32, u32) {
    let i = 3 * w * j;
    (rd(set.bytes, i, w), rd(set.bytes, i + w, w), rd(set.bytes, i + 2 * w, w))
}

impl Embedded {
    /// Rows and split rows of setting `s`.
    fn setting_rows(&self, s: &Setting) -> (u64, u64) {
        let set = self.sets[s.set];
        let mut split = 0u64;
        for j in s.first..s.first + s.count {
            let start = rd(self.starts, j * self.start_w, self.start_w) as usize;
            let end = if j + 1 < s.first + s.count {
                rd(self.starts, (j + 1) * self.start_w, self.start_w) as usize
            } else {
                set.count
            };
            let v = rd(self.vals, j * self.value_w, self.value_w) as usize;
            if self.values[v].split_s > 1 {
                split += (end - start) as u64;
            }
        }
        (set.count as u64, split)
    }

    /// The sidecar's settings must describe exactly the rows: the same settings, rows and split rows.
    fn check_against(&self, sc: &Sidecar) -> std::result::Result<(), String> {
        let mut split_total = 0;
        for s in &self.settings {
            let (rows, split) = self.setting_rows(s);
            split_total += split;
            let listed = sc
                .settings
                .iter()
                .find(|t| (t.ws, t.out, t.fast, t.fa, t.fb) == (s.ws, s.out, s.fast, s.fa, s.fb))
                .ok_or_else(|| {
                    format!("the sidecar has no setting (ws={}, out={}, {}, {}, {})", s.ws, s.out, s.fast, s.fa, s.fb)
                })?;
            if (listed.rows, listed.split_rows) != (rows, split) {
                return Err(format!(
                    "setting (ws={}, out={}, fast={}, {} x {}): the sidecar states {} rows ({} split), the table has {rows} ({split})",
                    s.ws, s.out, s.fast, s.fa, s.fb, listed.rows, listed.split_rows
                ));
            }
        }
        if sc.settings.len() != self.settings.len() {
            return Err(format!(
                "the sidecar lists {} settings, the table has {}",
                sc.settings.len(),
                self.settings.len()
            ));
        }
        if split_total != sc.split_rows {
            return Err(format!("the sidecar states {} split rows, the table has {split_total}", sc.split_rows));
        }
        Ok(())
    }

    /// The row of `key` at workspace `ws`, if the table has one (exact match).
    pub(crate) fn lookup(&self, key: &SplitKey, ws: u64) -> Option<TableRow> {
        let (m, n, k) = (u32::try_from(key.m).ok()?, u32::try_from(key.n).ok()?, u32::try_from(key.k).ok()?);
        let s = self
            .settings
            .iter()
            .find(|s| s.ws == ws && s.out == key.out && s.fast == key.fast && s.fa == key.fa && s.fb == key.fb)?;
        let set = self.sets[s.set];
        let target = (n, m, k);
        // Binary search of the shape.
        let (mut lo, mut hi) = (0usize, set.count);
        let idx = loop {
            if lo >= hi {
                return None;
            }
            let mid = lo + (hi - lo) / 2;
            match shape(set, self.dim_w, mid).cmp(&target) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => break mid,
            }
        };
        // Binary search of the run holding idx: the last run whose start is <= idx (the first starts at 0).
        let (mut lo, mut hi) = (0usize, s.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if rd(self.starts, (s.first + mid) * self.start_w, self.start_w) as usize <= idx {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let run = s.first + lo.checked_sub(1)?;
        let v = rd(self.vals, run * self.value_w, self.value_w) as usize;
        self.values.get(v).copied()
    }
}
