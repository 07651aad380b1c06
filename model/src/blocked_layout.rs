//! The blocked layout of MX and NVFP4 block scales (docs/reference.md §12.3): cuBLAS's `VEC32_UE8M0` /
//! `VEC16_UE4M3` scale tiles as torch's `to_blocked` writes them (`SwizzleType.SWIZZLE_32_4_4`), and its inverse.

// torch's `to_blocked` (torch/testing/_internal/common_quantized.py; test/test_matmul_cuda.py before it) pads the
// (rows, cols) scale matrix with zeros to (round_up(rows, 128), round_up(cols, 4)), cuts it into 128 x 4 tiles taken
// row-block by row-block, and writes each tile as `view(4, 32, 4).transpose(0, 1)`: row r = 32 i + j, column c of a
// tile lands at j * 16 + i * 4 + c. The padding is part of the layout (its codes are never read).

use crate::error::{Error, Result};

/// The number of codes of a blocked scale tensor for a (rows, cols) scale matrix: round_up(rows, 128) ·
/// round_up(cols, 4); None when it overflows.
pub fn blocked_len(rows: usize, cols: usize) -> Option<usize> {
    rows.checked_next_multiple_of(128)?.checked_mul(cols.checked_next_multiple_of(4)?)
}

/// The position in the blocked tensor of scale (r, c) of a matrix with `cols` columns.
#[inline]
pub fn blocked_index(r: usize, c: usize, cols: usize) -> usize {
    let col_tiles = cols.div_ceil(4);
    let (rr, cc) = (r % 128, c % 4);
    ((r / 128) * col_tiles + c / 4) * 512 + (rr % 32) * 16 + (rr / 32) * 4 + cc
}

/// A row-major (rows, cols) scale matrix in the blocked layout, the padding filled with `pad`. Errors: `scales`
/// not rows · cols long, or a size that overflows.
pub fn to_blocked<T: Copy>(scales: &[T], rows: usize, cols: usize, pad: T) -> Result<Vec<T>> {
    let n = rows.checked_mul(cols).filter(|&n| n == scales.len()).ok_or_else(|| {
        Error::invalid_value(format!(
            "a {rows} x {cols} scale matrix has {} elements, got {}",
            rows * cols,
            scales.len()
        ))
    })?;
    let len = blocked_len(rows, cols).ok_or_else(|| Error::invalid_value("the blocked scale size overflows"))?;
    crate::limits::check_fixed("the blocked scales", Some(len as u64)).map_err(Error::invalid_value)?;
    let mut out = vec![pad; len];
    for i in 0..n {
        out[blocked_index(i / cols, i % cols, cols)] = scales[i];
    }
    Ok(out)
}

/// The row-major (rows, cols) scale matrix of a blocked tensor (the padding dropped). Errors: `blocked` not
/// [`blocked_len`] long.
pub fn from_blocked<T: Copy>(blocked: &[T], rows: usize, cols: usize) -> Result<Vec<T>> {
    let len = blocked_len(rows, cols).ok_or_else(|| Error::invalid_value("the blocked scale size overflows"))?;
    if blocked.len() != len {
        return Err(Error::invalid_value(format!(
            "blocked scales of a {rows} x {cols} scale matrix have round_up({rows}, 128) * round_up({cols}, 4) = \
             {len} elements, got {}",
            blocked.len()
        )));
    }
    let Some(&first) = blocked.first().filter(|_| rows > 0 && cols > 0) else { return Ok(Vec::new()) };
    // Row r's codes are runs of four (one per tile of 4 columns, 512 codes apart) from its place in its tile, moved
    // as arrays of four (a slice of unknown length was a call to the C library's memcpy per run).
    let mut out = vec![first; rows * cols];
    for (r, row) in out.chunks_exact_mut(cols).enumerate() {
        let at = blocked_index(r, 0, cols);
        let mut fours = row.chunks_exact_mut(4);
        for (t, four) in (&mut fours).enumerate() {
            if let (Ok(four), Ok(run)) =
                (<&mut [T; 4]>::try_from(four), <[T; 4]>::try_from(&blocked[at + 512 * t..][..4]))
            {
                *four = run;
            }
        }
        // The last tile's columns where it is not whole (none past a whole one: its run would lie past the end).
        let rest = fours.into_remainder();
        if !rest.is_empty() {
            let run = at + 512 * (cols / 4);
            rest.copy_from_slice(&blocked[run..run + rest.len()]);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tile_of_to_blocked() {
        // Worked from torch's view/permute: rows 0, 32, 64, 96 of a tile are its first 16 codes, 4 columns each.
        assert_eq!(blocked_index(0, 0, 4), 0);
        assert_eq!(blocked_index(32, 0, 4), 4);
        assert_eq!(blocked_index(96, 3, 4), 15);
        assert_eq!(blocked_index(1, 0, 4), 16);
        assert_eq!(blocked_index(0, 4, 8), 512);
        assert_eq!(blocked_index(128, 0, 8), 1024);
        let m: Vec<u16> = (0..200 * 7).map(|x| x as u16).collect();
        let b = to_blocked(&m, 200, 7, u16::MAX).unwrap();
        assert_eq!(b.len(), 256 * 8);
        assert_eq!(b.iter().filter(|&&x| x == u16::MAX).count(), 256 * 8 - 200 * 7);
        assert_eq!(from_blocked(&b, 200, 7).unwrap(), m);
        // Every remainder of four columns, one tile of rows and more.
        for (rows, cols) in (1..=9).flat_map(|c| [(1, c), (130, c)]) {
            let m: Vec<u16> = (0..rows * cols).map(|x| x as u16).collect();
            assert_eq!(from_blocked(&to_blocked(&m, rows, cols, u16::MAX).unwrap(), rows, cols).unwrap(), m);
        }
        assert_eq!(from_blocked::<u16>(&[], 0, 5).unwrap(), Vec::<u16>::new());
        assert!(from_blocked(&b[1..], 200, 7).is_err());
        assert!(to_blocked(&m[1..], 200, 7, 0).is_err());
    }
}
