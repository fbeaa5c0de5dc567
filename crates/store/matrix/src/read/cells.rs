//! A line's cells when all are plain decimals (a distance matrix's usual line): read in one
//! tight pass, stored as bits, then turned into values in a second.

use super::number::{
    cell_decimal, from_stored, from_stored_over, plain_decimal, zero_bytes, ONES, POW10,
};

/// The cells of a line (after its first) into `out` when every one is a plain decimal with no
/// blank, sign or exponent and the line is no wider than `out` (a distance matrix's usual line):
/// one tight pass with nothing else to look for, then the values in a second. `None` for any
/// other line, which the general reading takes from its start.
pub(super) fn plain_cells(b: &[u8], out: &mut [f64]) -> Option<usize> {
    if let Some(c) = even_cells(b, out) {
        return Some(c);
    }
    let (mut any, mut all) = (0u8, u8::MAX);
    let (mut start, mut c, mut at) = (0, 0, 0);
    let mut put = |c: usize, d: super::number::PlainDecimal| -> Option<()> {
        *out.get_mut(c)? = f64::from_bits(d.stored());
        any |= d.decimals;
        all &= d.decimals;
        Some(())
    };
    while let Some(word) = b.get(at..at + 8) {
        let mut commas = zero_bytes(
            u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ (u64::from(b',') * ONES),
        );
        while commas != 0 {
            let end = at + (commas.trailing_zeros() / 8) as usize;
            put(c, cell_decimal(b, start, end)?)?;
            (c, start) = (c + 1, end + 1);
            commas &= commas - 1;
        }
        at += 8;
    }
    // The last bytes, with fewer than eight after a cell's start.
    let whole = |start: usize, end: usize| {
        cell_decimal(b, start, end)
            .or_else(|| plain_decimal(&b[start..end]).filter(|d| d.len == end - start))
    };
    for k in (at..b.len()).filter(|&k| b[k] == b',') {
        put(c, whole(start, k)?)?;
        (c, start) = (c + 1, k + 1);
    }
    put(c, whole(start, b.len())?)?;
    values_of_stored(&mut out[..=c], any, all);
    Some(c + 1)
}

/// The cells of a line (after its first) into `out` when all are plain decimals as wide as the
/// first (at most eight bytes, as `%.6f` writes distances below ten): each cell's place is
/// known, so no separator is searched for, only checked. `None` for any other line, which
/// [`plain_cells`] reads from its start.
pub(super) fn even_cells(b: &[u8], out: &mut [f64]) -> Option<usize> {
    let w = b.iter().take(9).position(|&x| x == b',')?;
    let stride = w + 1;
    if w == 0 || !(b.len() + 1).is_multiple_of(stride) {
        return None;
    }
    let n = (b.len() + 1) / stride;
    let out = out.get_mut(..n)?;
    let (mut any, mut all) = (0u8, u8::MAX);
    // Every cell but the last has its separator after it and eight bytes from its start.
    let fast = b
        .len()
        .checked_sub(8)
        .map_or(0, |r| r / stride + 1)
        .min(n - 1);
    for (k, x) in out[..fast].iter_mut().enumerate() {
        let start = k * stride;
        let d = cell_decimal(b, start, start + w)?;
        if b[start + w] != b',' {
            return None;
        }
        *x = f64::from_bits(d.stored());
        any |= d.decimals;
        all &= d.decimals;
    }
    for (k, x) in out.iter_mut().enumerate().skip(fast) {
        let start = k * stride;
        if b.get(start + w).is_some_and(|&s| s != b',') {
            return None;
        }
        let d = cell_decimal(b, start, start + w)
            .or_else(|| plain_decimal(&b[start..start + w]).filter(|d| d.len == w))?;
        *x = f64::from_bits(d.stored());
        any |= d.decimals;
        all &= d.decimals;
    }
    values_of_stored(out, any, all);
    Some(n)
}

/// Stored plain decimals turned into their values: divided by one power of ten in vectors when
/// every cell has the same number of decimals (`any` and `all`, their decimals OR-ed and
/// AND-ed, agree), else each by its own.
pub(super) fn values_of_stored(read: &mut [f64], any: u8, all: u8) {
    if any == all {
        let divisor = POW10[usize::from(any)];
        for x in read.iter_mut() {
            *x = from_stored_over(x.to_bits(), divisor);
        }
    } else {
        for x in read.iter_mut() {
            *x = from_stored(x.to_bits());
        }
    }
}
