//! `mmaemu-embed-tables`: writes the compact embedded form of the split-K tables that the model crate (`mmaemu-model`,
//! module `splitk`) resolves splits from, without any file at run time.

// Usage:
//
//     cargo run --release -p mmaemu-datasets --bin mmaemu-embed-tables [-- [--tables DIR] [--out DIR] [--check]]
//
// Defaults: `--tables datasets/tables`, `--out model/src/splitk/data`. For each table (`rtx4060-cublaslt-12.8.3.14`,
// `h100pcie-cublaslt-12.8.3.14`) it reads the Parquet file (`mmaemu-splitk-table/1`) and checks it against its JSON
// sidecar (format, sha256, row count), then writes
//
// - `<stem>.bin`: every row, in the binary form described in `model/src/splitk/README.md` (`MMSKEMB1`: shape sets
//   sorted by (n, m, k), a value palette, per-setting run lengths over the shape set, table_id, parquet sha256, row
//   count, and a sha256 trailer);
// - `<short>.rs` (`rtx4060.rs`, `h100pcie.rs`): the sidecar data as Rust source (settings, envelope, verified
//   combinations, customOption rule, notes, checksums), formatted with rustfmt.
//
// `--check` writes nothing: it regenerates in memory and exits with status 1 if a file differs.

use mmaemu_datasets::digest::sha256_hex;
use mmaemu_datasets::splitk_table::{read_splitk_table, SplitKTable, SplitKTableRow, SPLITK_FMTS, SPLITK_OUT_DTYPES};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The tables the model embeds: (file stem, short name of the generated Rust file).
const TABLES: [(&str, &str); 2] =
    [("rtx4060-cublaslt-12.8.3.14", "rtx4060"), ("h100pcie-cublaslt-12.8.3.14", "h100pcie")];

const MAGIC: &[u8; 8] = b"MMSKEMB1";
const COMMAND: &str = "cargo run --release -p mmaemu-datasets --bin mmaemu-embed-tables";

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mmaemu-embed-tables: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Res<ExitCode> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut tables_dir = manifest.join("tables");
    let mut out_dir = manifest.join("../model/src/splitk/data");
    let mut check = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tables" => tables_dir = PathBuf::from(args.next().ok_or("--tables needs a directory")?),
            "--out" => out_dir = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--check" => check = true,
            "-h" | "--help" => {
                println!("usage: mmaemu-embed-tables [--tables DIR] [--out DIR] [--check]");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    let rustfmt_toml = manifest.join("../rustfmt.toml");
    let mut differ = false;
    for (stem, short) in TABLES {
        let path = tables_dir.join(format!("{stem}.parquet"));
        let table = read_splitk_table(&path).map_err(|e| e.to_string())?;
        let blob_name = format!("{stem}.bin");
        let (blob, stats) = build_blob(&table)?;
        let rs = format_rust(&gen_rust(&table, stem, &blob_name, &blob, &stats)?, &rustfmt_toml)?;
        for (name, bytes) in [(blob_name.clone(), blob.clone()), (format!("{short}.rs"), rs.into_bytes())] {
            let target = out_dir.join(&name);
            if check {
                let same = std::fs::read(&target).map(|old| old == bytes).unwrap_or(false);
                if !same {
                    eprintln!("{} is out of date", target.display());
                    differ = true;
                }
            } else {
                std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
                std::fs::write(&target, &bytes).map_err(|e| format!("{}: {e}", target.display()))?;
            }
        }
        println!(
            "{stem}: {} rows, {} settings, {} shape sets ({} shapes), {} value tuples, {} runs ({} run blocks): \
             {} bytes",
            table.rows.len(),
            stats.settings,
            stats.shape_sets,
            stats.shapes,
            stats.values,
            stats.runs,
            stats.run_blocks,
            blob.len()
        );
    }
    Ok(if differ { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

struct Stats {
    settings: usize,
    shape_sets: usize,
    shapes: usize,
    values: usize,
    runs: usize,
    run_blocks: usize,
    distinct_shapes: usize,
    split_rows: usize,
    workspaces: Vec<u64>,
    /// Rows and split rows per setting, from the Parquet rows (checked against the sidecar's `settings`).
    setting_rows: BTreeMap<SettingKey, (u64, u64)>,
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

fn build_blob(table: &SplitKTable) -> Res<(Vec<u8>, Stats)> {
    let sc = &table.sidecar;
    let table_id = sc.get("table_id").and_then(Value::as_str).ok_or("sidecar has no table_id")?;

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
    let mut setting_rows = BTreeMap::new();
    for (key, mut rows) in groups {
        setting_rows.insert(key, (rows.len() as u64, rows.iter().filter(|r| r.1 .0 > 1).count() as u64));
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
    let sha = unhex(&table.sha256)?;
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
    let digest = unhex(&sha256_hex(&b))?;
    b.extend_from_slice(&digest);

    let distinct_shapes = table.rows.iter().map(|r| (r.m, r.n, r.k)).collect::<BTreeSet<_>>().len();
    let workspaces = table.rows.iter().map(|r| r.workspace_bytes as u64).collect::<BTreeSet<_>>().into_iter().collect();
    let stats = Stats {
        settings: settings.len(),
        shape_sets: shape_sets.len(),
        shapes: shape_sets.iter().map(Vec::len).sum(),
        values: palette.len(),
        runs: total_runs,
        run_blocks: run_blocks.len(),
        distinct_shapes,
        split_rows: table.rows.iter().filter(|r| r.decision.split_s > 1).count(),
        workspaces,
        setting_rows,
    };
    Ok((b, stats))
}

fn unhex(s: &str) -> Res<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("bad hex {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("bad hex {s:?}: {e}")))
        .collect()
}

fn out_name(s: &str) -> Res<&'static str> {
    Ok(match s {
        "float32" => "F32",
        "bfloat16" => "BF16",
        "float16" => "F16",
        "float8_e4m3fn" => "OE4",
        "float8_e5m2" => "OE5",
        _ => return Err(format!("unknown out dtype {s:?}")),
    })
}

fn fmt_name(s: &str) -> Res<&'static str> {
    Ok(match s {
        "e4m3" => "E4",
        "e5m2" => "E5",
        _ => return Err(format!("unknown format {s:?}")),
    })
}

fn scheme_name(s: &str) -> Res<&'static str> {
    Ok(match s {
        "serial" => "SER",
        "pairwise" => "PW",
        "contiguous" => "CT",
        _ => return Err(format!("unknown scheme {s:?}")),
    })
}

fn get<'a>(v: &'a Value, key: &str) -> Res<&'a Value> {
    v.get(key).ok_or_else(|| format!("sidecar: missing `{key}`"))
}

fn get_u64(v: &Value, key: &str) -> Res<u64> {
    get(v, key)?.as_u64().ok_or_else(|| format!("sidecar: `{key}` is not an unsigned integer"))
}

fn get_str<'a>(v: &'a Value, key: &str) -> Res<&'a str> {
    get(v, key)?.as_str().ok_or_else(|| format!("sidecar: `{key}` is not a string"))
}

fn get_bool(v: &Value, key: &str) -> Res<bool> {
    get(v, key)?.as_bool().ok_or_else(|| format!("sidecar: `{key}` is not a boolean"))
}

fn opt_u64(v: &Value, key: &str) -> Res<String> {
    match get(v, key)? {
        Value::Null => Ok("None".into()),
        x => Ok(format!("Some({})", x.as_u64().ok_or_else(|| format!("sidecar: `{key}` is not an integer"))?)),
    }
}

fn array<'a>(v: &'a Value, key: &str) -> Res<&'a Vec<Value>> {
    get(v, key)?.as_array().ok_or_else(|| format!("sidecar: `{key}` is not an array"))
}

/// The setting columns (ws, out, fast, fa, fb) of a sidecar object as Rust arguments.
fn setting_args(v: &Value) -> Res<String> {
    Ok(format!(
        "{}, {}, {}, {}, {}",
        get_u64(v, "ws")?,
        out_name(get_str(v, "out")?)?,
        get_bool(v, "fast")?,
        fmt_name(get_str(v, "fmt_a")?)?,
        fmt_name(get_str(v, "fmt_b")?)?
    ))
}

fn gen_rust(table: &SplitKTable, stem: &str, blob_name: &str, blob: &[u8], stats: &Stats) -> Res<String> {
    let sc = &table.sidecar;
    let table_id = get_str(sc, "table_id")?;
    let platform = get(sc, "platform")?;
    let codes = get(sc, "codes")?;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "//! @generated by `{COMMAND}`");
    let _ = writeln!(w, "//! from datasets/tables/{stem}.parquet and its sidecar {stem}.json.");
    let _ =
        writeln!(w, "//! The sidecar data of table `{table_id}`. Do not edit: rerun the command (see ../README.md).");
    let k_grid = sc.get("envelope").and_then(|e| e.get("kind")).and_then(Value::as_str) == Some("k_grid");
    let types = if k_grid {
        "Combo, Envelope, KBound, SettingSummary, Sidecar, TableSource, WsValidation"
    } else {
        "Combo, Envelope, SettingSummary, Sidecar, TableSource"
    };
    let _ = writeln!(w, "\nuse super::sidecar::codes::*;");
    let _ = writeln!(w, "use super::sidecar::{{{types}}};\n");
    let _ = writeln!(w, "/// The embedded rows (format `MMSKEMB1`, see ../README.md).");
    let _ = writeln!(w, "pub(crate) static BLOB: &[u8] = include_bytes!(\"{blob_name}\");\n");

    // customOption -> scheme.
    let custom = get(codes, "custom -> scheme")?.as_object().ok_or("sidecar: `custom -> scheme` is not an object")?;
    let mut customs = Vec::new();
    for (c, scheme) in custom {
        let c: u8 = c.parse().map_err(|_| format!("sidecar: customOption {c:?} is not a number"))?;
        customs.push((c, scheme_name(scheme.as_str().ok_or("sidecar: scheme is not a string")?)?));
    }
    customs.sort();
    let unlisted = scheme_name(get_str(codes, "custom -> scheme, unlisted")?)?;
    // The unlisted rule carries the "never recorded" caveat unless the sidecar notes that the rule was not in
    // the peer's JSON but restated from its code (the RTX 4060 table: every customOption other than 1 is
    // serial there, with no caveat).
    let unlisted_caveat = codes.get("custom -> scheme, unlisted: note").is_none();
    let ragged = sc
        .get("split_layouts")
        .and_then(|l| l.get("ragged_K"))
        .and_then(|r| r.get("verified"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ws0_note = match sc.get("workspace0_note").and_then(Value::as_str) {
        Some(n) => format!("Some({n:?})"),
        None => "None".into(),
    };

    // Settings.
    let settings = array(sc, "settings")?;
    // The sidecar's settings must describe exactly the Parquet rows.
    let mut listed = BTreeMap::new();
    for st in settings {
        let key = (
            get_u64(st, "ws")?,
            out_code(get_str(st, "out")?),
            get_bool(st, "fast")? as u8,
            fmt_code(get_str(st, "fmt_a")?),
            fmt_code(get_str(st, "fmt_b")?),
        );
        listed.insert(key, (get_u64(st, "rows")?, get_u64(st, "split_rows")?));
    }
    if listed != stats.setting_rows {
        return Err(format!("{stem}: the sidecar's settings (rows, split_rows) differ from the Parquet rows"));
    }
    let _ = writeln!(w, "static SETTINGS: [SettingSummary; {}] = [", settings.len());
    for st in settings {
        let svals: Vec<String> = array(st, "S_values")?.iter().map(|x| x.to_string()).collect();
        let _ = writeln!(
            w,
            "    st({}, {}, {}, {}, {}, &[{}]),",
            setting_args(st)?,
            get_u64(st, "rows")?,
            get_u64(st, "split_rows")?,
            opt_u64(st, "max_split_MN")?,
            opt_u64(st, "min_split_K")?,
            svals.join(", ")
        );
    }
    let _ = writeln!(w, "];\n");

    // Envelope.
    let envelope = match sc.get("envelope") {
        None | Some(Value::Null) => "None".to_string(),
        Some(env) => match get_str(env, "kind")? {
            "max_split_MN" => format!(
                "Some(Envelope::MaxSplitMn {{ inference: {}, margin: {} }})",
                get_bool(env, "inference")?,
                get_u64(env, "margin")?
            ),
            "k_grid" => {
                let grid: Vec<u64> = array(env, "K_grid")?
                    .iter()
                    .map(|x| x.as_u64().ok_or("K_grid: not an integer"))
                    .collect::<Result<_, _>>()?;
                let _ = writeln!(w, "static K_GRID: [u64; {}] = {grid:?};\n", grid.len());
                let bounds = array(env, "bounds")?;
                let _ = writeln!(w, "static BOUNDS: [KBound; {}] = [", bounds.len());
                for bd in bounds {
                    let mut bs = Vec::new();
                    for x in array(bd, "B")? {
                        bs.push(match x {
                            Value::Null => "NULL_BOUND".to_string(),
                            x => {
                                let v = x.as_u64().ok_or("bounds: B is not an integer")?;
                                if v == u64::MAX {
                                    return Err("bounds: B = u64::MAX is reserved".into());
                                }
                                v.to_string()
                            }
                        });
                    }
                    if bs.len() != grid.len() {
                        return Err("bounds: B and K_grid differ in length".into());
                    }
                    let _ = writeln!(w, "    kb({}, &[{}]),", setting_args(bd)?, bs.join(", "));
                }
                let _ = writeln!(w, "];\n");
                let validation = get(env, "validation")?.as_object().ok_or("envelope.validation is not an object")?;
                let _ = writeln!(w, "static VALIDATION: [WsValidation; {}] = [", validation.len());
                for (ws, v) in validation {
                    let ws: u64 = ws.parse().map_err(|_| format!("envelope.validation: bad workspace {ws:?}"))?;
                    let _ = writeln!(
                        w,
                        "    WsValidation {{ ws: {ws}, status: {:?}, tested: {}, split_above_bound: {} }},",
                        get_str(v, "status")?,
                        get_u64(v, "tested")?,
                        get_u64(v, "split_above_bound")?
                    );
                }
                let _ = writeln!(w, "];\n");
                format!(
                    "Some(Envelope::KGrid {{ inference: {}, k_min: {}, k_max: {}, k_grid: &K_GRID, bounds: &BOUNDS, \
                     validation: &VALIDATION, eval: {:?} }})",
                    get_bool(env, "inference")?,
                    get_u64(env, "K_min")?,
                    get_u64(env, "K_max")?,
                    env.get("eval").and_then(Value::as_str).unwrap_or("no evaluation recorded")
                )
            }
            other => return Err(format!("sidecar: unknown envelope kind {other:?}")),
        },
    };

    // Verified combinations.
    let vcs = get(sc, "verified_combos")?;
    let vc_table = get_str(vcs, "table_id")?;
    let mut combos = Vec::new();
    for c in array(vcs, "combos")? {
        if !get_bool(c, "verified")? {
            continue;
        }
        let pair = get_str(c, "fmt_pair")?;
        let (fa, fb) = pair.split_once('x').ok_or_else(|| format!("bad fmt_pair {pair:?}"))?;
        combos.push(format!(
            "    vc({}, {}, {}, {}, {}, {}),",
            get_bool(c, "fast")?,
            get_u64(c, "S")?,
            scheme_name(get_str(c, "scheme")?)?,
            out_name(get_str(c, "out")?)?,
            fmt_name(fa)?,
            fmt_name(fb)?
        ));
    }
    let _ = writeln!(w, "static VERIFIED: [Combo; {}] = [", combos.len());
    for c in &combos {
        let _ = writeln!(w, "{c}");
    }
    let _ = writeln!(w, "];\n");

    let customs: Vec<String> = customs.iter().map(|(c, s)| format!("({c}, {s})")).collect();
    let _ = writeln!(w, "/// Table `{table_id}`.");
    let _ = writeln!(w, "pub(crate) static SIDECAR: Sidecar = Sidecar {{");
    let _ = writeln!(w, "    source: TableSource {{");
    let _ = writeln!(w, "        table_id: {table_id:?},");
    let _ = writeln!(w, "        file_stem: {stem:?},");
    let _ = writeln!(w, "        gpu: {:?},", get_str(platform, "gpu")?);
    let _ = writeln!(w, "        cublaslt: {:?},", get_str(platform, "cublaslt")?);
    let _ = writeln!(w, "        rows: {},", table.rows.len());
    let _ = writeln!(w, "        split_rows: {},", stats.split_rows);
    let _ = writeln!(w, "        distinct_shapes: {},", stats.distinct_shapes);
    let _ = writeln!(w, "        parquet_sha256: {:?},", table.sha256);
    let _ = writeln!(w, "        sidecar_sha256: {:?},", table.sidecar_sha256);
    let _ = writeln!(w, "        embedded_name: {blob_name:?},");
    let _ = writeln!(w, "        embedded_bytes: {},", blob.len());
    let _ = writeln!(w, "        embedded_sha256: {:?},", sha256_hex(blob));
    let _ = writeln!(w, "        workspaces: &{:?},", stats.workspaces);
    let _ = writeln!(w, "    }},");
    let _ = writeln!(w, "    custom_schemes: &[{}],", customs.join(", "));
    let _ = writeln!(w, "    unlisted_scheme: {unlisted},");
    let _ = writeln!(w, "    unlisted_caveat: {unlisted_caveat},");
    let _ = writeln!(w, "    ragged_k_verified: {ragged},");
    let _ = writeln!(w, "    workspace0_note: {ws0_note},");
    let _ = writeln!(w, "    settings: &SETTINGS,");
    let _ = writeln!(w, "    envelope: {envelope},");
    let _ = writeln!(w, "    verified_table_id: {vc_table:?},");
    let _ = writeln!(w, "    verified: &VERIFIED,");
    let _ = writeln!(w, "}};");
    if get_u64(sc, "split_rows")? != stats.split_rows as u64 {
        return Err(format!("{stem}: the sidecar's split_rows differs from the rows ({})", stats.split_rows));
    }
    Ok(s)
}

/// Formats generated source with rustfmt (the workspace's rustfmt.toml), so that `cargo fmt --check` passes.
fn format_rust(src: &str, config: &Path) -> Res<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2021", "--config-path"])
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    child.stdin.take().ok_or("rustfmt: no stdin")?.write_all(src.as_bytes()).map_err(|e| format!("rustfmt: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("rustfmt: {e}"))?;
    if !out.status.success() {
        return Err(format!("rustfmt failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("rustfmt: {e}"))
}
