//! `mmaemu-embed-tables`: writes the encoded rows of the built-in platforms' split-K tables, which the model crate
//! (`mmaemu-model`, module `splitk`) embeds beside their sidecars, so that no file is read at run time.

// Usage:
//
//     cargo run --release -p mmaemu-datasets --bin mmaemu-embed-tables [-- [--platforms DIR] [--out DIR] [--check]]
//
// Defaults: `--platforms datasets/platforms`, `--out model/src/splitk/data`. For each built-in table (the model's
// `Table::builtin_names`) it reads `<platforms>/<name>/<name>.parquet` (`mmaemu-splitk-table/1`, checked against its
// JSON sidecar: format, sha256, row count), encodes its rows (`MMSKEMB1`, model/src/splitk/README.md), checks them
// against the sidecar through the model's own reader, and writes `<name>.bin`. `--check` writes nothing: it
// re-encodes in memory and exits with status 1 if a file differs.

use mmaemu_datasets::platform::encode_table;
use mmaemu_datasets::splitk_table::{read_splitk_table, splitk_sidecar_path};
use mmaemu_model::Table;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    let mut platforms = manifest.join("platforms");
    let mut out_dir = manifest.join("../model/src/splitk/data");
    let mut check = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--platforms" => platforms = PathBuf::from(args.next().ok_or("--platforms needs a directory")?),
            "--out" => out_dir = PathBuf::from(args.next().ok_or("--out needs a directory")?),
            "--check" => check = true,
            "-h" | "--help" => {
                println!("usage: mmaemu-embed-tables [--platforms DIR] [--out DIR] [--check]");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    let mut differ = false;
    for name in Table::builtin_names() {
        let path = platforms.join(name).join(format!("{name}.parquet"));
        let table = read_splitk_table(&path).map_err(|e| e.to_string())?;
        let (blob, stats) = encode_table(&table).map_err(|e| format!("{}: {e}", path.display()))?;
        let sidecar_path = splitk_sidecar_path(&path);
        let sidecar = std::fs::read_to_string(&sidecar_path).map_err(|e| format!("{}: {e}", sidecar_path.display()))?;
        Table::new(&sidecar, blob.clone(), name).and_then(|t| t.check()).map_err(|e| e.to_string())?;
        let target = out_dir.join(format!("{name}.bin"));
        if check {
            if std::fs::read(&target).map(|old| old != blob).unwrap_or(true) {
                eprintln!("{} is out of date", target.display());
                differ = true;
            }
        } else {
            std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
            std::fs::write(&target, &blob).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        println!(
            "{name}: {} rows, {} settings, {} shape sets ({} shapes), {} value tuples, {} runs ({} run blocks): {} bytes",
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
