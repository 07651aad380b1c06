//! The preset document `mmaemu-preset/1` (docs/preset-format.md): every built-in preset round-trips through it, the
//! maturity is computed from the parameters, an embedded `[preset]` table reads like a whole document, and every kind
//! of bad document is a clear invalid-value error.

use mmaemu_model::{BlockRounding, CEntry, Category, InvalidKind, Maturity, Preset, PresetSpec};

const HOPPER_DOC: &str = r#"
format = "mmaemu-preset/1"
name = "hopper"
nfma = 32
frac = 13
frac_out = 13
min_exp = -132
c_entry = "early"
slow_chunk = 128
"#;

#[test]
fn every_built_in_preset_round_trips() {
    for name in Preset::list() {
        let p = mmaemu_model::Catalogue::builtin().preset(name).unwrap();
        let doc = p.to_document();
        assert!(doc.starts_with("format = \"mmaemu-preset/1\"\n"), "{doc}");
        let back = Preset::from_document(&doc).unwrap();
        assert_eq!(back, p, "{doc}");
        assert_eq!((back.maturity(), back.is_builtin()), (p.maturity(), p.is_builtin()));
    }
    // A hand-written document without the optional keys (rounding defaults to truncate).
    assert_eq!(Preset::from_document(HOPPER_DOC).unwrap(), Preset::hopper());
}

#[test]
fn the_maturity_is_computed_from_the_parameters() {
    let renamed = Preset::from_document(&HOPPER_DOC.replace("\"hopper\"", "\"h100-fit\"")).unwrap();
    assert_eq!((renamed.name(), renamed.maturity(), renamed.is_builtin()), ("h100-fit", Maturity::Validated, false));
    let other =
        Preset::from_document(&HOPPER_DOC.replace("\"hopper\"", "\"x\"").replace("frac = 13", "frac = 14")).unwrap();
    assert_eq!((other.maturity(), other.frac()), (Maturity::Custom, 14));
    let spec = PresetSpec::custom("odd.name_2-x", 5, 30, 23, -140, CEntry::Late, None)
        .with_rounding(BlockRounding::NearestEven)
        .with_scale_block(Some(5));
    let p = Preset::custom(spec.clone()).unwrap();
    assert_eq!(Preset::from_document(&p.to_document()).unwrap(), p);
    // A document's name is plain ASCII: one that differs from another only by case, spacing, quotes or Unicode is
    // refused (its document is still written escaped, and read back as refused).
    for odd in ["odd \"name\" \\ é", "Hopper", " hopper", "hopper\u{200b}", ""] {
        let q = Preset::custom(PresetSpec { name: odd.into(), ..spec.clone() }).unwrap();
        let e = Preset::from_document(&q.to_document()).unwrap_err();
        assert!(e.message().contains("is not plain"), "{odd:?}: {e}");
    }
}

#[test]
fn an_embedded_preset_table_reads_like_a_document() {
    let bundle = format!("[platform]\nname = \"h100\"\n\n[preset]\n{HOPPER_DOC}");
    let t: toml::Table = bundle.parse().unwrap();
    let preset = t["preset"].as_table().unwrap();
    assert_eq!(Preset::from_table(preset).unwrap(), Preset::hopper());
}

#[test]
fn bad_documents_are_invalid_values() {
    let cases = [
        ("nfma = [", "preset document: "),
        (&HOPPER_DOC.replace("mmaemu-preset/1", "mmaemu-preset/2") as &str, "format must be 'mmaemu-preset/1'"),
        (&HOPPER_DOC.replace("slow_chunk", "slowchunk"), "unknown key 'slowchunk'"),
        (&HOPPER_DOC.replace("nfma = 32\n", ""), "missing key 'nfma'"),
        (&HOPPER_DOC.replace("nfma = 32", "nfma = \"32\""), "'nfma' must be an integer, got string"),
        (&HOPPER_DOC.replace("nfma = 32", "nfma = -1"), "'nfma' = -1 is out of range"),
        (&HOPPER_DOC.replace("\"early\"", "\"middle\""), "c_entry must be 'early' or 'late'"),
        (&format!("{HOPPER_DOC}rounding = \"up\"\n"), "rounding must be 'truncate' or 'nearest_even'"),
        (&HOPPER_DOC.replace("frac = 13", "frac = 41").replace("\"hopper\"", "\"z\""), "frac must be in 1..=40"),
        (&HOPPER_DOC.replace("frac = 13", "frac = 12"), "'hopper' is a built-in preset's name"),
        (&format!("{HOPPER_DOC}scale_block = 16\n").replace("\"hopper\"", "\"y\""), "scale_block must equal nfma"),
        (
            &format!("{HOPPER_DOC}scale_block = 16\ngroup = 16\n")
                .replace("\"hopper\"", "\"g\"")
                .replace("early", "late"),
            "takes c early",
        ),
    ];
    for (doc, want) in cases {
        let e = Preset::from_document(doc).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue), "{doc}");
        assert!(e.message().contains(want), "{doc}\n{}", e.message());
    }
}

#[test]
fn a_preset_argument_is_a_name_or_a_document_path() {
    let unread = |p: &str| -> std::io::Result<String> { panic!("read {p}") };
    assert_eq!(
        mmaemu_model::Catalogue::builtin().preset_or_path("blackwell", unread).unwrap(),
        Preset::b200_mma_sync()
    );
    let doc = Preset::rtx50_mma_sync().to_document();
    let read =
        |p: &str| if p == "fits/rtx50.toml" { Ok(doc.clone()) } else { Err(std::io::ErrorKind::NotFound.into()) };
    assert_eq!(
        mmaemu_model::Catalogue::builtin().preset_or_path("fits/rtx50.toml", read).unwrap(),
        Preset::rtx50_mma_sync()
    );
    let e = mmaemu_model::Catalogue::builtin().preset_or_path("gone.toml", read).unwrap_err();
    assert!(e.message().starts_with("preset document: cannot read preset file 'gone.toml'"), "{}", e.message());
    let e = mmaemu_model::Catalogue::builtin().preset_or_path("bad.toml", |_| Ok("format = 1".into())).unwrap_err();
    assert!(e.message().starts_with("bad.toml: 'format' must be a string"), "{}", e.message());
    // Not a path: the unknown-name error of by_name.
    assert_eq!(
        mmaemu_model::Catalogue::builtin().preset_or_path("h100", unread).unwrap_err().category(),
        Category::InvalidArgument(InvalidKind::UnknownName)
    );
}
