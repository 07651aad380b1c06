//! Block-scaled GEMMs (docs/reference.md §12.3-§12.5) as exact compositions of validated pieces, on seeded random
//! shapes and codes: MXFP8 = the e8m0 block-scaled instruction (`dot_scaled`, checked against MMA-Sim) chained
//! over K one 32-element block at a time; NVFP4 = the mxf4nvf4 instruction (`dot_group_scaled`, checked against
//! MMA-Sim) chained one 64-element instruction at a time; block-wise = the hopper chain (`dot`) per 128 of K, scaled
//! and added in fp32. The scales go through torch's blocked layout written here from its view/permute recipe.

use mmaemu_model::block_gemm::{blockwise_gemm, mx_gemm, nvfp4_gemm, BlockShape, Dims};
use mmaemu_model::blocked_layout::{from_blocked, to_blocked};
use mmaemu_model::format::{e2m1_pack, e2m1_unpack};
use mmaemu_model::{b200_tcgen05_mxf4nvf4, dot, dot_group_scaled, dot_scaled, Format, Preset};

mod common;
use common::SplitMix64;

/// torch's `to_blocked`, step by step: pad to (128 · RB, 4 · CB), `view(RB, 128, CB, 4).permute(0, 2, 1, 3)`,
/// `reshape(-1, 4, 32, 4).transpose(1, 2)`, flatten.
fn torch_to_blocked(s: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    let (rb, cb) = (rows.div_ceil(128), cols.div_ceil(4));
    let at = |r: usize, c: usize| if r < rows && c < cols { s[r * cols + c] } else { 0 };
    let mut out = Vec::new();
    for b0 in 0..rb {
        for b2 in 0..cb {
            // the tile (128, 4) -> (4, 32, 4) -> transpose(0, 1): index [j][i][c] = tile[32 i + j][c]
            for j in 0..32 {
                for i in 0..4 {
                    for c in 0..4 {
                        out.push(at(b0 * 128 + 32 * i + j, b2 * 4 + c));
                    }
                }
            }
        }
    }
    out
}

fn codes(rng: &mut SplitMix64, n: usize, f: Format) -> Vec<u8> {
    (0..n)
        .map(|_| loop {
            let c = rng.below(256) as u8;
            if !f.is_nonfinite(c) {
                break c;
            }
        })
        .collect()
}

fn dims(rng: &mut SplitMix64, kstep: u64) -> Dims {
    Dims { m: rng.between(1, 140) as usize, n: rng.between(1, 9) as usize, k: (kstep * rng.between(1, 9)) as usize }
}

#[test]
fn mxfp8_gemm_is_the_block_scaled_instruction_chained_over_k() {
    let preset = Preset::b200_tcgen05();
    for seed in 0..24u64 {
        let rng = &mut SplitMix64(0x4D58_0000 + seed);
        let (fa, fb) = (Format::ALL[rng.below(2) as usize], Format::E4m3);
        let d = dims(rng, 16);
        let (a, b) = (codes(rng, d.m * d.k, fa), codes(rng, d.n * d.k, fb));
        let nb = d.k.div_ceil(32);
        let sa: Vec<u8> = (0..d.m * nb).map(|_| rng.between(117, 138) as u8).collect();
        let sb: Vec<u8> = (0..d.n * nb).map(|_| rng.between(117, 138) as u8).collect();
        let (ba, bb) = (torch_to_blocked(&sa, d.m, nb), torch_to_blocked(&sb, d.n, nb));
        assert_eq!(to_blocked(&sa, d.m, nb, 0).unwrap(), ba, "seed {seed}: to_blocked");
        assert_eq!(from_blocked(&ba, d.m, nb).unwrap(), sa, "seed {seed}: from_blocked");
        let got = mx_gemm(&preset, fa, fb, &a, &b, d, &ba, &bb).unwrap();
        for i in 0..d.m {
            for j in 0..d.n {
                let mut acc = 0.0f32;
                for blk in 0..nb {
                    let r = blk * 32..((blk + 1) * 32).min(d.k);
                    let (ra, rb) = (&a[i * d.k..][r.clone()], &b[j * d.k..][r]);
                    let (s1, s2) = ([sa[i * nb + blk]], [sb[j * nb + blk]]);
                    acc = dot_scaled(&preset, fa, fb, ra, rb, &s1, &s2, Some(acc)).unwrap();
                }
                assert_eq!(got[i * d.n + j].to_bits(), acc.to_bits(), "seed {seed} {d:?} output ({i}, {j})");
            }
        }
    }
}

#[test]
fn nvfp4_gemm_is_the_mxf4nvf4_instruction_chained_over_k() {
    let preset = b200_tcgen05_mxf4nvf4();
    for seed in 0..24u64 {
        let rng = &mut SplitMix64(0x4E56_0000 + seed);
        let d = dims(rng, 32);
        // torch's float4_e2m1fn_x2 bytes, unpacked as the GEMM takes them
        let pa: Vec<u8> = (0..d.m * d.k / 2).map(|_| rng.below(256) as u8).collect();
        let pb: Vec<u8> = (0..d.n * d.k / 2).map(|_| rng.below(256) as u8).collect();
        let (a, b) = (e2m1_unpack(&pa), e2m1_unpack(&pb));
        assert_eq!(e2m1_pack(&a), pa);
        let nb = d.k / 16;
        let sa: Vec<u8> = (0..d.m * nb).map(|_| rng.between(0x28, 0x50) as u8).collect();
        let sb: Vec<u8> = (0..d.n * nb).map(|_| rng.between(0x28, 0x50) as u8).collect();
        let (ba, bb) = (torch_to_blocked(&sa, d.m, nb), torch_to_blocked(&sb, d.n, nb));
        let got = nvfp4_gemm(&preset, &a, &b, d, &ba, &bb).unwrap();
        for i in 0..d.m {
            for j in 0..d.n {
                let mut acc = 0.0f32;
                for ins in 0..d.k.div_ceil(64) {
                    let r = ins * 64..((ins + 1) * 64).min(d.k);
                    let s = r.start / 16..r.end / 16;
                    let (ra, rb) = (&a[i * d.k..][r.clone()], &b[j * d.k..][r]);
                    let (s1, s2) = (&sa[i * nb..][s.clone()], &sb[j * nb..][s]);
                    acc = dot_group_scaled(&preset, ra, rb, s1, s2, Some(acc)).unwrap();
                }
                assert_eq!(got[i * d.n + j].to_bits(), acc.to_bits(), "seed {seed} {d:?} output ({i}, {j})");
            }
        }
    }
}

#[test]
fn blockwise_gemm_is_the_hopper_chain_per_128_scaled_in_fp32() {
    let preset = Preset::hopper();
    let shapes = [
        (BlockShape::Vec1x128, BlockShape::Blk128x128),
        (BlockShape::Vec1x128, BlockShape::Vec1x128),
        (BlockShape::Blk128x128, BlockShape::Vec1x128),
    ];
    for seed in 0..18u64 {
        let rng = &mut SplitMix64(0x424C_0000 + seed);
        let (sha, shb) = shapes[seed as usize % 3];
        let d =
            Dims { m: rng.between(1, 200) as usize, n: rng.between(1, 6) as usize, k: rng.between(1, 600) as usize };
        let (a, b) = (codes(rng, d.m * d.k, Format::E4m3), codes(rng, d.n * d.k, Format::E4m3));
        let kb = d.k.div_ceil(128);
        let scale = |rng: &mut SplitMix64, n: usize| -> Vec<f32> {
            (0..n).map(|_| f32::from_bits(rng.between(0x3A00_0000, 0x4200_0000) as u32)).collect()
        };
        let sa = scale(rng, sha.scale_rows(d.m) * kb);
        let sb = scale(rng, shb.scale_rows(d.n) * kb);
        let got = blockwise_gemm(&preset, Format::E4m3, Format::E4m3, &a, &b, d, (&sa, sha), (&sb, shb)).unwrap();
        let row = |s: BlockShape, i: usize| if s == BlockShape::Vec1x128 { i } else { i / 128 };
        for i in 0..d.m {
            for j in 0..d.n {
                let mut acc = 0.0f32;
                for c in 0..kb {
                    let r = c * 128..((c + 1) * 128).min(d.k);
                    let part =
                        dot(&preset, Format::E4m3, Format::E4m3, &a[i * d.k..][r.clone()], &b[j * d.k..][r], None)
                            .unwrap();
                    let s = sa[row(sha, i) * kb + c] * sb[row(shb, j) * kb + c];
                    acc += part * s;
                }
                assert_eq!(got[i * d.n + j].to_bits(), acc.to_bits(), "seed {seed} {d:?} output ({i}, {j})");
            }
        }
    }
}

#[test]
fn wrong_scale_sizes_are_typed_errors_with_torchs_message() {
    let d = Dims { m: 3, n: 2, k: 64 };
    let (a, b) = (vec![0x38u8; 3 * 64], vec![0x38u8; 2 * 64]);
    let p = Preset::b200_tcgen05();
    let e = mx_gemm(&p, Format::E4m3, Format::E4m3, &a, &b, d, &[127; 512], &[127; 100]).unwrap_err();
    assert_eq!(e.message(), "For Blockwise scaling scale_b should have 512 elements, got: 100");
    let e = mx_gemm(&Preset::hopper(), Format::E4m3, Format::E4m3, &a, &b, d, &[127; 512], &[127; 512]).unwrap_err();
    assert!(e.message().contains("takes no e8m0 block scales"), "{}", e.message());
    let e = nvfp4_gemm(&p, &a, &b, d, &[0x38; 512], &[0x38; 512]).unwrap_err();
    assert!(e.message().contains("not e2m1"), "{}", e.message());
    let e = mx_gemm(&p, Format::E4m3, Format::E4m3, &a[1..], &b, d, &[127; 512], &[127; 512]).unwrap_err();
    assert!(e.message().contains("a must hold 3 x 64"), "{}", e.message());
    let e = blockwise_gemm(
        &Preset::hopper(),
        Format::E4m3,
        Format::E4m3,
        &a,
        &b,
        d,
        (&[1.0; 3], BlockShape::Vec1x128),
        (&[1.0; 5], BlockShape::Vec1x128),
    )
    .unwrap_err();
    assert!(e.message().contains("scale_b must hold 2 x 1"), "{}", e.message());
    let huge = Dims { m: 1 << 20, n: 1 << 20, k: 1 };
    assert!(mx_gemm(&p, Format::E4m3, Format::E4m3, &a, &b, huge, &[], &[]).is_err());
}

/// Empty block-wise GEMMs return their empty (or +0) result, never a panic: no rows of A or of B, and K = 0 (no
/// block: every output +0).
#[test]
fn empty_blockwise_gemms_are_empty() {
    let (p, f, v) = (Preset::hopper(), Format::E4m3, BlockShape::Vec1x128);
    let got = blockwise_gemm(&p, f, f, &[0x38; 128], &[], Dims { m: 1, n: 0, k: 128 }, (&[2.0], v), (&[], v));
    assert_eq!(got.unwrap(), Vec::<f32>::new());
    let got = blockwise_gemm(&p, f, f, &[], &[0x38; 256], Dims { m: 0, n: 1, k: 256 }, (&[], v), (&[2.0, 3.0], v));
    assert_eq!(got.unwrap(), Vec::<f32>::new());
    let got = blockwise_gemm(&p, f, f, &[], &[], Dims { m: 2, n: 3, k: 0 }, (&[], v), (&[], v)).unwrap();
    assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), vec![0u32; 6]);
}
