//! The AVX-512 VBMI decoding of rows against the format's table and the portable decoding.

use super::*;

/// `decode_vbmi` gives every code of both formats the table's value and exponent (a zero, and a non-finite code,
/// which decodes as one, may keep its sign) and the portable decoding's bits, at every length from 0 to 300 and at
/// odd offsets; it writes nothing past the codes, and reports a non-finite code exactly where one was read.
#[test]
fn vbmi_decoding_equals_the_table() {
    if !avx512() || !crate::driver::vbmi() {
        eprintln!("this CPU has no AVX-512 VBMI: the decoding is not run");
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0xDEC0_DE64);
    for f in Format::ALL {
        let l = Lut::new(f);
        let mut every: Vec<u8> = (0..=255u8).collect();
        every.extend((0..300).map(|_| rng.random::<u8>()));
        for len in 0..=300 {
            for offset in [0, 1, 7] {
                // From the start of a list of every code then random ones (every code at lengths from 256), else
                // from a random place in it; the non-finite codes made zeros at even lengths.
                let start = if offset == 0 { 0 } else { rng.random_range(0..every.len()) };
                let mut codes: Vec<u8> = every[start..].iter().copied().cycle().take(offset + len).collect();
                if len % 2 == 0 {
                    codes.iter_mut().filter(|c| f.is_nonfinite(**c)).for_each(|c| *c &= 0x80);
                }
                let codes = &codes[offset..];
                let (mut v, mut e) = (vec![f32::NAN; len + 20], vec![i8::MAX; len + 20]);
                // SAFETY: the CPU has AVX-512 VBMI (checked above) and the level's other features.
                let seen = unsafe { crate::x86::decode_vbmi(&l, codes, &mut v, &mut e) };
                let (mut pv, mut pe) = (vec![0f32; len], vec![0i8; len]);
                l.decode(codes, &mut pv, &mut pe);
                for (i, &c) in codes.iter().enumerate() {
                    let what = format!("{f} code {c:#04x} at {i} of {len}");
                    assert_eq!(v[i], l.v32[c as usize], "{what}");
                    assert!(v[i] != 0.0 || c & 0x7F == 0 || f.is_nonfinite(c), "{what}");
                    assert_eq!(v[i].to_bits(), pv[i].to_bits(), "{what}");
                    assert_eq!(e[i], l.e[c as usize], "{what}");
                    assert_eq!(e[i], pe[i], "{what}");
                }
                assert!(v[len..].iter().all(|x| x.is_nan()) && e[len..].iter().all(|&x| x == i8::MAX), "{f} {len}");
                assert_eq!(seen, codes.iter().any(|&c| f.is_nonfinite(c)), "{f} {len}");
            }
        }
    }
}
