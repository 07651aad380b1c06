//! Split configurations and plans as the contract writes them (docs/reference.md §3.1–§3.4, §6.3): scheme names,
//! the `S,scheme` spelling of the command line (§8), the validation of S and the scheme, and plan layouts.

use mmaemu_model::{Scheme, SplitK};

#[test]
fn schemes_and_splits_are_spelled_as_on_the_command_line() {
    let names = [
        (Scheme::None, "none"),
        (Scheme::Serial, "serial"),
        (Scheme::Pairwise, "pairwise"),
        (Scheme::Contiguous, "contiguous"),
    ];
    for (scheme, name) in names {
        assert_eq!((&*scheme.name(), scheme.to_string()), (name, name.to_string()));
        assert_eq!(Scheme::from_name(name), Some(scheme));
    }
    for bad in ["", "None", "interleaved", "serial "] {
        assert_eq!(Scheme::from_name(bad), None, "{bad:?}");
    }
    // `--splitk INT|S,scheme`: S = 1 is written "1".
    assert_eq!(SplitK::NONE.to_string(), "1");
    assert_eq!(SplitK::new(1, Scheme::None).unwrap().to_string(), "1");
    assert_eq!(SplitK::new(2, Scheme::Serial).unwrap().to_string(), "2,serial");
    assert_eq!(SplitK::new(3, Scheme::Pairwise).unwrap().to_string(), "3,pairwise");
    assert_eq!(SplitK::new(4, Scheme::Contiguous).unwrap().to_string(), "4,contiguous");
}

#[test]
fn a_plan_keeps_what_it_was_built_for() {
    use mmaemu_model::{Plan, Preset};
    let split = SplitK::new(2, Scheme::Contiguous).unwrap();
    for fast in [true, false] {
        let p = Plan::new(&Preset::hopper(), 300, fast, split).unwrap();
        assert_eq!((p.k(), p.fast(), p.split()), (300, fast, split));
        // §3.3: T = 3 tiles of 128, q = 2: split 0 owns tiles 0 and 1, split 1 tile 2 (k 256..300).
        assert_eq!(p.splits().len(), 2);
        assert_eq!(p.splits()[1].chunks[0].ranges, vec![256..300]);
    }
}

#[test]
fn partials_combine_in_the_schemes_orders() {
    use mmaemu_model::plan::combine;
    // §3.2, §3.3: serial and contiguous add p_0 + p_1 + ... left to right; pairwise (S = 4, h = 2) adds
    // (p_3 + (p_0 + p_2)) + p_1. With 2^24 (where fp32's spacing is 2) the orders differ.
    let t = 16_777_216.0f32;
    let p = [t, 1.0, 1.0, -t];
    assert_eq!(combine(Scheme::Serial, &p), 0.0); // ((2^24 + 1) + 1) - 2^24: each + 1 rounds back to 2^24
    assert_eq!(combine(Scheme::Contiguous, &p), 0.0);
    assert_eq!(combine(Scheme::Pairwise, &p), 1.0); // (-2^24 + (2^24 + 1 -> 2^24)) + 1
                                                    // Exact sums, so only the terms taken matter: S = 2, 3, 4, 5 with distinct powers of two.
    let q = [1.0f32, 2.0, 4.0, 8.0, 16.0];
    for s in 2..=5 {
        let want: f32 = q[..s].iter().sum();
        for scheme in [Scheme::Serial, Scheme::Pairwise, Scheme::Contiguous] {
            assert_eq!(combine(scheme, &q[..s]), want, "{scheme} S = {s}");
        }
    }
    // S = 5, pairwise: h = 3, the slots p_0 + p_3, p_1 and p_2 are added to p_4.
    let r = [t, 1.0, 1.0, 1.0, -t];
    assert_eq!(combine(Scheme::Pairwise, &r), 2.0); // ((-2^24 + (2^24 + 1 -> 2^24)) + 1) + 1
    assert_eq!(combine(Scheme::Serial, &r), 0.0);
    // One partial is itself, none is +0.
    assert_eq!(combine(Scheme::Pairwise, &[-0.0]).to_bits(), (-0.0f32).to_bits());
    assert_eq!(combine(Scheme::Serial, &[]).to_bits(), 0);
}

/// §3.4: which layouts a GPU's kernels use is its profile's (its platform's table, or the manifest's `[splitk]
/// schemes`), never the preset's identity: the profile refuses, in order, an uncharacterised split (slow
/// accumulation without a slow chunk first) and a documented scheme its kernels do not use; a rule by name is
/// planned as given.
#[test]
fn a_profile_checks_its_kernels_split_layouts() {
    use mmaemu_model::{Catalogue, Category, InvalidKind, SplitRule};
    let c = Catalogue::builtin();
    let split = |s, scheme| SplitK::new(s, scheme).unwrap();
    let b200 = c.profile("b200-mma-sync-experimental").unwrap();
    let e = b200.check_split(split(2, Scheme::Serial), false, 8192).unwrap_err();
    assert!(e.message().contains("slow accumulation"), "{e}");
    let e = b200.check_split(split(2, Scheme::Serial), true, 8192).unwrap_err();
    assert_eq!(e.category(), Category::UnsupportedFeature);
    assert!(e.message().contains("split-K is not characterised for preset 'b200_mma_sync'"), "{e}");
    let e = c.profile("hopper").unwrap().check_split(split(2, Scheme::Serial), true, 8192).unwrap_err();
    assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue));
    assert!(e.message().ends_with("its cuBLASLt kernels split as contiguous"), "{e}");
    let e = c.profile("ada").unwrap().check_split(split(2, Scheme::Contiguous), true, 8192).unwrap_err();
    assert!(
        e.message().contains("not a split-K layout of preset 'ada'") && e.message().ends_with("serial or pairwise")
    );
    // The H100's layout without its table (the manifest's `[splitk] schemes`).
    let hx = c.profile("hopper-experimental").unwrap();
    assert_eq!(hx.schemes, [Scheme::Contiguous]);
    assert!(hx.check_split(split(3, Scheme::Contiguous), false, 8192).is_ok());
    assert!(hx.check_split(split(3, Scheme::Pairwise), false, 8192).is_err());
    // A rule by name is the data's claim; S = 1 needs no layout.
    let rule = Scheme::Rule(SplitRule::parse("interleaved32/tree/restart3").unwrap());
    assert!(c.profile("ada").unwrap().check_split(split(2, rule), false, 8192).is_ok());
    assert!(b200.check_split(SplitK::NONE, false, 8192).is_ok());
    // Every profile's schemes come from its platform: equal for the profiles of one platform.
    for p in c.platforms() {
        let want = p.table.map(|t| t.schemes());
        for q in &p.profiles {
            if let Some(w) = &want {
                assert_eq!(&q.schemes, w, "{}", q.name);
            }
        }
    }
}

/// Sizes a file or flag can make are refused before anything is built: a restart every 0 tiles is not a rule, and
/// a plan whose splits, chunks or padded chains would pass the memory ceiling (a tile width or restart of 2^32 − 1,
/// S of a billion) is an invalid value naming it — at once, not after an allocation.
#[test]
fn huge_rules_and_splits_are_refused_before_they_are_built() {
    use mmaemu_model::{Category, InvalidKind, Plan, Preset, SplitRule};
    for bad in ["interleaved32/serial/restart0", "contiguous128/serial/restart0e", "interleaved0/serial"] {
        assert_eq!(SplitRule::parse(bad), None, "{bad}");
    }
    let t = std::time::Instant::now();
    for (rule, s, fast) in [
        ("interleaved4294967295/serial/restart1", 2, false),
        ("contiguous64/serial/restart1e", 2, false),
        ("interleaved64/serial/restart4294967295", 1_000_000_000, false),
        ("contiguous128/serial", 1usize << 40, true),
    ] {
        let k = if rule.contains("restart1e") { 1 << 40 } else { 8192 };
        let split = SplitK::new(s, Scheme::Rule(SplitRule::parse(rule).unwrap())).unwrap();
        let e = Plan::new(&Preset::hopper(), k, fast, split).unwrap_err();
        assert_eq!(e.category(), Category::InvalidArgument(InvalidKind::InvalidValue), "{rule}: {e}");
        assert!(e.message().contains(&format!("a plan of S = {s} splits")), "{rule}: {e}");
    }
    assert!(t.elapsed().as_secs() < 2, "{:?}", t.elapsed());
    // Ordinary plans still pass.
    let split = SplitK::new(8, Scheme::Rule(SplitRule::parse("interleaved64/pairwise/restart3").unwrap())).unwrap();
    assert!(Plan::new(&Preset::ada(), 1 << 20, false, split).is_ok());
}
