//! Message sizes as people write them: `0`, `64`, `4KiB`, `1MiB`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A message size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MessageSize(pub usize);

impl fmt::Display for MessageSize {
    /// `0`, `100B`, `4KiB`, `1MiB`: the largest binary unit that divides the size.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        match n {
            0 => f.write_str("0"),
            n if n % (1 << 30) == 0 => write!(f, "{}GiB", n >> 30),
            n if n % (1 << 20) == 0 => write!(f, "{}MiB", n >> 20),
            n if n % (1 << 10) == 0 => write!(f, "{}KiB", n >> 10),
            n => write!(f, "{n}B"),
        }
    }
}

impl FromStr for MessageSize {
    type Err = String;

    /// Parses `64`, `64B`, `4KiB`, `1MiB`, `1GiB` (also `k`, `K`, `KB`, `M`, `MB`: all powers
    /// of 1024).
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: usize = number
            .parse()
            .map_err(|_| format!("`{text}` is not a size such as 64, 4KiB or 1MiB"))?;
        let factor: usize = match unit.trim() {
            "" | "B" | "b" => 1,
            "k" | "K" | "KB" | "KiB" | "kiB" => 1 << 10,
            "M" | "MB" | "MiB" => 1 << 20,
            "G" | "GB" | "GiB" => 1 << 30,
            other => {
                return Err(format!(
                    "`{other}` in `{text}` is not a size unit (B, KiB, MiB, GiB)"
                ))
            }
        };
        number
            .checked_mul(factor)
            .map(MessageSize)
            .ok_or_else(|| format!("`{text}` is too large"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses() {
        for (n, s) in [
            (0, "0"),
            (100, "100B"),
            (1024, "1KiB"),
            (65536, "64KiB"),
            (1 << 20, "1MiB"),
            (1536, "1536B"),
        ] {
            assert_eq!(MessageSize(n).to_string(), s);
            assert_eq!(s.parse::<MessageSize>(), Ok(MessageSize(n)));
        }
        assert_eq!("2M".parse::<MessageSize>(), Ok(MessageSize(2 << 20)));
        assert!("1.5MiB".parse::<MessageSize>().is_err());
        assert!("4 parsecs"
            .parse::<MessageSize>()
            .unwrap_err()
            .contains("not a size unit"));
    }
}
