//! Slurm hostlist expressions: `node[01-04,07],login1` for a set of host names, and back.

use std::collections::BTreeMap;

/// A host name split into the part before its trailing digits, the number they make and how
/// many digits were written when that is more than the number needs (zero padding).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Numbered<'a> {
    prefix: &'a str,
    padding: usize,
    number: u64,
}

/// The name's prefix and trailing number, if it ends in digits (at most 18, so that the number
/// fits).
fn numbered(name: &str) -> Option<Numbered<'_>> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 18 {
        return None;
    }
    let (prefix, tail) = name.split_at(name.len() - digits);
    let number = tail.parse().ok()?;
    // `node01` is written with 2 digits; `node1` and `node10` with as many as they need.
    let padding = if tail.len() > 1 && tail.starts_with('0') {
        tail.len()
    } else {
        0
    };
    Some(Numbered {
        prefix,
        padding,
        number,
    })
}

/// The host names as one Slurm hostlist expression: names that differ only in a trailing
/// number are folded into `prefix[a-b,c]` (zero padding kept), the rest listed as they are,
/// in sorted order, each name once.
pub fn hostlist<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut folded: BTreeMap<(&str, usize), Vec<u64>> = BTreeMap::new();
    let mut plain: Vec<&str> = Vec::new();
    for name in names {
        match numbered(name) {
            Some(n) => folded
                .entry((n.prefix, n.padding))
                .or_default()
                .push(n.number),
            None => plain.push(name),
        }
    }
    plain.sort_unstable();
    plain.dedup();
    let mut parts: Vec<String> = plain.into_iter().map(String::from).collect();
    for ((prefix, padding), mut numbers) in folded {
        numbers.sort_unstable();
        numbers.dedup();
        let width = |n: u64| format!("{n:0padding$}");
        if let [one] = numbers.as_slice() {
            parts.push(format!("{prefix}{}", width(*one)));
            continue;
        }
        let mut ranges = Vec::new();
        let mut k = 0;
        while k < numbers.len() {
            let start = numbers[k];
            while k + 1 < numbers.len() && numbers[k + 1] == numbers[k] + 1 {
                k += 1;
            }
            ranges.push(if numbers[k] == start {
                width(start)
            } else {
                format!("{}-{}", width(start), width(numbers[k]))
            });
            k += 1;
        }
        parts.push(format!("{prefix}[{}]", ranges.join(",")));
    }
    parts.join(",")
}

/// The host names of a hostlist expression, in its order; an error says what does not parse.
/// The inverse of [`hostlist`] for what it writes (one bracket per name, ranges of numbers).
pub fn expand_hostlist(expression: &str) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
    let mut rest = expression.trim();
    while !rest.is_empty() {
        // The next name runs to a comma outside brackets.
        let mut depth = 0usize;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                c == ',' && depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        let item = &rest[..end];
        rest = rest[end..].trim_start_matches(',');
        match item.split_once('[') {
            None => out.push(item.to_string()),
            Some((prefix, ranges)) => {
                let ranges = ranges
                    .strip_suffix(']')
                    .ok_or_else(|| HostlistError::Unclosed {
                        item: item.to_string(),
                    })?;
                for range in ranges.split(',') {
                    let (a, b) = range.split_once('-').unwrap_or((range, range));
                    let number = |s: &str| {
                        s.parse::<u64>().map_err(|_| HostlistError::NotANumber {
                            item: item.to_string(),
                            text: s.to_string(),
                        })
                    };
                    let (from, to) = (number(a)?, number(b)?);
                    if to < from || to - from > 1 << 20 {
                        return Err(HostlistError::Range {
                            item: item.to_string(),
                            range: range.to_string(),
                        });
                    }
                    let padding = if a.len() > 1 && a.starts_with('0') {
                        a.len()
                    } else {
                        0
                    };
                    out.extend((from..=to).map(|n| format!("{prefix}{n:0padding$}")));
                }
            }
        }
    }
    Ok(out)
}

/// A hostlist expression that does not parse: the item (`node[1-4]`) and what is wrong in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    /// A `[` without its `]`.
    #[error("`{item}`: a `[` without its `]` at the end")]
    Unclosed {
        /// The item.
        item: String,
    },
    /// A bound of a range that is not a whole number.
    #[error("`{item}`: `{text}` is not a number")]
    NotANumber {
        /// The item.
        item: String,
        /// The bound as written.
        text: String,
    },
    /// A range that runs backwards or holds more than 2^20 names.
    #[error("`{item}`: the range {range} is backwards or huge")]
    Range {
        /// The item.
        item: String,
        /// The range as written.
        range: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names_fold_into_ranges() {
        let names = ["node03", "node01", "node02", "node07", "login", "node01"];
        assert_eq!(hostlist(names), "login,node[01-03,07]");
        assert_eq!(hostlist(["n1", "n2", "n10", "n11"]), "n[1-2,10-11]");
        assert_eq!(hostlist(["fram-n0"]), "fram-n0");
        assert_eq!(hostlist(["a1", "b1", "b2"]), "a1,b[1-2]");
        assert_eq!(hostlist(std::iter::empty()), "");
    }

    #[test]
    fn expansion_gives_back_the_names() {
        for names in [
            vec!["node01", "node02", "node03", "node07", "login"],
            vec!["n1", "n2", "n10", "n11"],
            vec!["c0-0", "c0-1", "c1-0"],
            vec!["vm"],
        ] {
            let mut expanded = expand_hostlist(&hostlist(names.iter().copied())).unwrap();
            let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            expanded.sort();
            want.sort();
            assert_eq!(expanded, want);
        }
        assert!(matches!(
            expand_hostlist("node[1-"),
            Err(HostlistError::Unclosed { .. })
        ));
        assert_eq!(
            expand_hostlist("node[5-1]").unwrap_err().to_string(),
            "`node[5-1]`: the range 5-1 is backwards or huge"
        );
        assert!(matches!(
            expand_hostlist("node[x]"),
            Err(HostlistError::NotANumber { text, .. }) if text == "x"
        ));
    }
}
