//! Plain decimals read fast: a cell's digits as one integer, read eight bytes at a time, and
//! its value as that integer divided by a power of ten (Clinger's fast path: the same bits as
//! the standard library's parser).

/// The powers of ten a plain decimal is divided by, all exact in f64.
pub(super) const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A plain decimal's digits read as one integer below 2^52, its number of decimals, its sign and
/// the bytes it takes: its value is the integer divided by ten to the decimals, both exact in
/// f64, so that the one rounding of the division gives the correctly rounded number (Clinger's
/// fast path).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct PlainDecimal {
    mantissa: u64,
    /// Its number of decimals.
    pub(super) decimals: u8,
    negative: bool,
    /// The bytes it takes.
    pub(super) len: usize,
}

/// The bit of a stored [`PlainDecimal`] that holds its sign.
const SIGN: u64 = 1 << 63;
/// The bits of a stored [`PlainDecimal`] that hold its integer.
const MANTISSA: u64 = (1 << 52) - 1;

impl PlainDecimal {
    /// The number's value.
    #[cfg(test)]
    fn value(self) -> f64 {
        from_stored(self.stored())
    }

    /// The number as 64 bits that [`from_stored`] turns into its value: the integer in the low
    /// 52, the decimals in the next 6, the sign in the top one.
    pub(super) fn stored(self) -> u64 {
        self.mantissa | u64::from(self.decimals) << 52 | if self.negative { SIGN } else { 0 }
    }
}

/// The value of a [`PlainDecimal`] stored as bits.
#[inline]
pub(super) fn from_stored(bits: u64) -> f64 {
    from_stored_over(bits, POW10[((bits >> 52) & 0x3f) as usize])
}

/// The value of a stored [`PlainDecimal`] whose decimals are known to give `divisor`: the integer
/// turned into a double exactly (below 2^52 its bits are a double's significand under 2^52's
/// exponent), divided, the sign put back. Branch-free, so that a row's cells divide in vectors.
#[inline]
pub(super) fn from_stored_over(bits: u64, divisor: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let integer = f64::from_bits(TWO_52.to_bits() | (bits & MANTISSA)) - TWO_52;
    f64::from_bits((integer / divisor).to_bits() | (bits & SIGN))
}

/// A plain decimal `[-]digits[.digits]` at the start of `b` whose digits, read as one integer,
/// stay below 2^52, with at most 22 decimals (see [`PlainDecimal`]); anything else (exponents,
/// long mantissas) is left to the general parser.
pub(super) fn plain_decimal(b: &[u8]) -> Option<PlainDecimal> {
    let negative = b.first() == Some(&b'-');
    let mut i = usize::from(negative);
    let mut mantissa = 0u64;
    let mut digits = digit_run(b, &mut i, &mut mantissa);
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        fraction = digit_run(b, &mut i, &mut mantissa);
        digits += fraction;
    }
    let plain = digits > 0
        && digits <= 18
        && fraction < POW10.len()
        && mantissa <= MANTISSA
        && !matches!(b.get(i), Some(b'e' | b'E' | b'.'));
    plain.then_some(PlainDecimal {
        mantissa,
        decimals: fraction as u8,
        negative,
        len: i,
    })
}

/// Eight bytes of one value each.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;

/// The high bit of every byte of `x` that is zero, and no other bit.
#[inline]
pub(super) fn zero_bytes(x: u64) -> u64 {
    const LOW: u64 = 0x7f * ONES;
    // A byte's low seven bits plus 0x7f carry into its high bit unless they are all zero; no
    // carry leaves the byte.
    !(((x & LOW).wrapping_add(LOW)) | x) & !LOW
}

/// The cell `b[start..end]` when it is `digits[.digits]` of at most eight bytes with eight
/// bytes of `b` from `start` (the usual cell of a distance matrix): read from one word, with no
/// look at the bytes around it. `None` for anything else (blanks, a sign, an exponent, a longer
/// number), which the general reading decides.
#[inline(always)]
pub(super) fn cell_decimal(b: &[u8], start: usize, end: usize) -> Option<PlainDecimal> {
    let len = end - start;
    let word = b.get(start..start + 8)?;
    if len == 0 || len > 8 {
        return None;
    }
    let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
    // Each byte on its own (a subtraction would borrow across a point): a digit is 0x30-0x39,
    // its high half 3 and its low half below ten (adding six leaves bit 4 clear).
    let high_three = zero_bytes((x & (0xf0 * ONES)) ^ (0x30 * ONES));
    let low_ten = !(((x & (0x0f * ONES)) + 0x06 * ONES) << 3) & (0x80 * ONES);
    let inside = if len == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    };
    // The high bit of each byte of the cell that is no digit.
    let not_digit = !(high_three & low_ten) & (0x80 * ONES) & inside;
    // Each digit's value in its byte.
    let d = x ^ (0x30 * ONES);
    if not_digit == 0 {
        return Some(PlainDecimal {
            mantissa: digits_value(d, len),
            decimals: 0,
            negative: false,
            len,
        });
    }
    // One point, and digits on its either side.
    let point = (not_digit.trailing_zeros() / 8) as usize;
    let only_point = not_digit & (not_digit - 1) == 0;
    let is_point = (x >> (8 * point)) as u8 == b'.';
    if !only_point || !is_point || len == 1 {
        return None;
    }
    let below = (1u64 << (8 * point)) - 1;
    let digits = (d & below) | ((d >> 8) & !below);
    Some(PlainDecimal {
        mantissa: digits_value(digits, len - 1),
        decimals: (len - 1 - point) as u8,
        negative: false,
        len,
    })
}

/// [`plain_decimal`]'s value and length.
#[cfg(test)]
pub(super) fn parse_plain_decimal(b: &[u8]) -> Option<(f64, usize)> {
    plain_decimal(b).map(|d| (d.value(), d.len))
}

/// Reads the decimal digits of `b` from `*i` on into `mantissa` (wrapping past 2^64: the caller
/// refuses more than 18 digits); moves `*i` past them and returns how many there were.
fn digit_run(b: &[u8], i: &mut usize, mantissa: &mut u64) -> usize {
    const POW10: [u64; 10] = crate::POW10_U64;
    let start = *i;
    // Eight bytes at a time while eight remain: the leading digits among them, read at once.
    while let Some(word) = b.get(*i..*i + 8) {
        let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let (len, value) = leading_digits(x);
        *mantissa = mantissa.wrapping_mul(POW10[len]).wrapping_add(value);
        *i += len;
        if len < 8 {
            return *i - start;
        }
    }
    while let Some(d) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
        *i += 1;
    }
    *i - start
}

/// The number of decimal digits that eight bytes (the first in the lowest byte) start with, and
/// the value of those digits.
fn leading_digits(x: u64) -> (usize, u64) {
    // Each byte less '0': a digit's byte holds 0-9. Borrows and carries between bytes only
    // reach bytes after a non-digit, which are not read.
    let d = x.wrapping_sub(b'0' as u64 * ONES);
    // The high bit of each byte that is no digit: below '0' wraps to 0xd0 and above, above '9'
    // reaches 0x80 once 0x76 is added.
    let not_digit = (d.wrapping_add(0x76 * ONES) | d) & (0x80 * ONES);
    let len = (not_digit.trailing_zeros() / 8) as usize;
    if len == 0 {
        return (0, 0);
    }
    (len, digits_value(d, len))
}

/// The value of the `len` (1-8) digits in the lowest bytes of `d` (each byte the digit's
/// value, the first in the lowest byte); the bytes above them are not read.
#[inline]
fn digits_value(d: u64, len: usize) -> u64 {
    // The digits moved to the top bytes, zeros (leading zeros of the number) below them.
    let mut v = d << (8 * (8 - len));
    v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    v = (v.wrapping_mul(10_000) + (v >> 32)) & 0x0000_0000_ffff_ffff;
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bytes_give_their_leading_digits() {
        // Every byte value at every place after 0-8 digits, against reading byte by byte.
        for len in 0..=8 {
            for stop in 0..=255u8 {
                let mut bytes = *b"93071845";
                if len < 8 {
                    bytes[len] = stop;
                }
                let want_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                let want = bytes[..want_len]
                    .iter()
                    .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
                let got = leading_digits(u64::from_le_bytes(bytes));
                assert_eq!(got, (want_len, want), "{bytes:?}");
            }
        }
    }
}
