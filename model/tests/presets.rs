//! The presets as docs/reference.md §2.1 writes them: the table of the built-in presets, lookup by name and
//! alias, the refused sm_120 names, and the bounds of a user-defined preset (both ends of each range).

use mmaemu_model::{BlockRounding, CEntry, Category, InvalidKind, Maturity, Preset, PresetSpec, Scheme};

type Row = (&'static str, u32, u32, u32, i32, CEntry, Option<u32>, Maturity, &'static [Scheme]);

/// §2.1's table: name, nfma, frac, frac_out, min_exp, c entry, slow_chunk, maturity, split schemes.
const TABLE: [Row; 5] = [
    ("ada", 16, 13, 13, -132, CEntry::Early, Some(128), Maturity::Validated, &[Scheme::Serial, Scheme::Pairwise]),
    ("hopper", 32, 13, 13, -132, CEntry::Early, Some(128), Maturity::Validated, &[Scheme::Contiguous]),
    ("b200_mma_sync", 32, 25, 23, -133, CEntry::Late, None, Maturity::Experimental, &[]),
    ("b200_tcgen05", 32, 25, 23, -133, CEntry::Early, None, Maturity::Experimental, &[]),
    ("rtx50_mma_sync", 32, 25, 23, -133, CEntry::Early, None, Maturity::Experimental, &[]),
];

#[test]
fn the_built_in_presets_are_the_table() {
    assert_eq!(Preset::list(), ["ada", "b200_mma_sync", "b200_tcgen05", "hopper", "rtx50_mma_sync"]);
    for (name, nfma, frac, frac_out, min_exp, c_entry, slow_chunk, maturity, schemes) in TABLE {
        let p = mmaemu_model::Catalogue::builtin().preset(name).unwrap();
        assert_eq!((p.name(), p.to_string()), (name, name.to_string()));
        assert_eq!((p.nfma(), p.frac(), p.frac_out(), p.min_exp()), (nfma as usize, frac, frac_out, min_exp), "{name}");
        assert_eq!((p.c_entry(), p.slow_chunk(), p.maturity()), (c_entry, slow_chunk.map(|c| c as usize), maturity));
        assert_eq!(mmaemu_model::Catalogue::builtin().schemes(&p), schemes, "{name}");
        assert!(p.is_builtin());
        assert_eq!(p.rounding(), BlockRounding::Truncate, "{name}");
        // The two Blackwell FP8 paths of MMA-Sim's table take MXFP8 scales (e8m0 per 32 elements).
        let scaled = matches!(name, "b200_tcgen05" | "rtx50_mma_sync");
        assert_eq!(p.scale_block(), scaled.then_some(32), "{name}");
        assert_eq!(p.maturity_note().is_some(), maturity != Maturity::Validated, "{name}");
    }
    for name in ["b200_tcgen05", "rtx50_mma_sync"] {
        let note = mmaemu_model::Catalogue::builtin().preset(name).unwrap().maturity_note().unwrap();
        assert!(note.contains("MMA-Sim") && note.contains("not our own recordings"), "{note}");
    }
    assert_eq!(mmaemu_model::Catalogue::builtin().preset("ada").unwrap(), Preset::ada());
    assert_eq!(mmaemu_model::Catalogue::builtin().preset("hopper").unwrap(), Preset::hopper());
    assert_eq!(mmaemu_model::Catalogue::builtin().preset("blackwell").unwrap(), Preset::b200_mma_sync());
    let names =
        [(Maturity::Validated, "validated"), (Maturity::Experimental, "experimental"), (Maturity::Custom, "custom")];
    for (m, name) in names {
        assert_eq!(m.name(), name);
    }
}

#[test]
fn unknown_and_sm120_names_are_refused() {
    for name in ["sm_120", "SM120", "rtx_blackwell", "RTX-Blackwell", "rtx5070ti", "RTX_5070_TI"] {
        let e = mmaemu_model::Catalogue::builtin().preset(name).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::UnknownName));
        assert_eq!(
            e.message(),
            format!(
                "unknown preset '{name}': sm_120 GPUs (RTX 50 series) have no validated preset (the experimental \
                 'rtx50_mma_sync' follows MMA-Sim); see docs/bring-up.md (record the GPU with mmaemu-record, fit \
                 its split-K rules, build and check a platform bundle)"
            )
        );
    }
    for name in ["", "Ada", "HOPPER", "b200", "blackwell ", "custom"] {
        let e = mmaemu_model::Catalogue::builtin().preset(name).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::UnknownName));
        assert_eq!(
            e.message(),
            format!(
                "unknown preset '{name}'; known: ['ada', 'b200_mma_sync', 'b200_tcgen05', 'hopper', \
                 'rtx50_mma_sync'] (alias: 'blackwell')"
            )
        );
    }
}

#[test]
fn a_user_defined_preset_is_checked_at_both_ends_of_each_range() {
    let spec = |nfma, frac, frac_out, min_exp, slow_chunk| {
        PresetSpec::custom("mine", nfma, frac, frac_out, min_exp, CEntry::Early, slow_chunk)
    };
    for ok in [
        spec(1, 1, 1, -1000, None),
        spec(64, 40, 23, 1000, Some(1)),
        spec(16, 13, 13, -132, Some(128)),
        spec(8, 30, 23, -133, None).with_rounding(BlockRounding::NearestEven).with_scale_block(Some(8)),
    ] {
        let p = Preset::custom(ok.clone()).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
        assert_eq!((p.maturity(), p.is_builtin(), p.spec()), (Maturity::Custom, false, &ok));
        assert_eq!(
            mmaemu_model::Catalogue::builtin().schemes(&p),
            [Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous]
        );
    }
    for bad in [
        spec(0, 13, 13, -132, None),
        spec(16, 0, 13, -132, None),
        spec(16, 41, 13, -132, None),
        spec(16, 13, 0, -132, None),
        spec(16, 13, 24, -132, None),
        spec(16, 13, 13, -1001, None),
        spec(16, 13, 13, 1001, None),
        spec(16, 13, 13, -132, Some(0)),
        spec(16, 13, 13, -132, None).with_rounding(BlockRounding::NearestEven),
        spec(32, 25, 23, -133, None).with_scale_block(Some(16)),
    ] {
        let e = Preset::custom(bad.clone()).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue), "{bad:?}");
        assert!(e.message().starts_with("preset 'mine': "), "{}", e.message());
    }
}
