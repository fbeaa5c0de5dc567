//! The three topology formats, told apart by their content, and file reading and writing.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::error::{Location, Problem, TopologyError};
use crate::tree::Topology;
use crate::{json, lgate, newick};

/// A topology file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopologyFormat {
    /// The LGate topology file (`cluster { group { 0-7 } }`).
    Lgate,
    /// The `lgate-plogp-topology` JSON document.
    Json,
    /// A Newick tree with ranks as taxa.
    Newick,
}

impl TopologyFormat {
    /// Every format, in the order they are documented.
    pub const ALL: [TopologyFormat; 3] = [Self::Lgate, Self::Json, Self::Newick];

    /// The format's name as users type it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lgate => "lgate",
            Self::Json => "json",
            Self::Newick => "newick",
        }
    }

    /// Tells the format from the first character that is not whitespace or a comment.
    pub fn detect(text: &str) -> Result<Self, TopologyError> {
        let mut line = 1;
        let mut column = 1;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            let format = match c {
                '\n' => {
                    line += 1;
                    column = 1;
                    continue;
                }
                c if c.is_whitespace() => {
                    column += 1;
                    continue;
                }
                // A comment in LGate; skip to the end of the line.
                '#' => {
                    while chars.next_if(|&c| c != '\n').is_some() {}
                    continue;
                }
                '{' => Self::Json,
                '(' | '[' => Self::Newick,
                c if c.is_ascii_digit() || c == '\'' => Self::Newick,
                c if c.is_alphabetic() => Self::Lgate,
                c => {
                    let found = format!("`{}`", c.escape_debug());
                    return Err(TopologyError::at_text(
                        line,
                        column,
                        Problem::UnknownFormat { found },
                    ));
                }
            };
            return Ok(format);
        }
        Err(TopologyError::at(Location::Document, Problem::EmptyInput))
    }
}

impl fmt::Display for TopologyFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A topology format name that is not one of lgate, json and newick.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown topology format `{0}`: expected lgate, json or newick")]
pub struct UnknownFormat(pub String);

impl FromStr for TopologyFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// Parses a topology in the given format, or the one its content shows.
///
/// `ranks`, when given, is the job's rank count: LGate and Newick files may name only ranks
/// below it (the ones they leave out are singletons); a JSON document must declare it.
pub fn parse(
    text: &str,
    format: Option<TopologyFormat>,
    ranks: Option<usize>,
) -> Result<(Topology, TopologyFormat), TopologyError> {
    // A byte-order mark (editors on Windows save one) is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = match format {
        Some(f) => f,
        None => TopologyFormat::detect(text)?,
    };
    let topology = match format {
        TopologyFormat::Lgate => lgate::parse(text, ranks)?,
        TopologyFormat::Json => json::parse(text, ranks)?,
        TopologyFormat::Newick => newick::parse(text, ranks)?,
    };
    Ok((topology, format))
}

/// Reads a topology file, telling its format from its content; errors name the file.
pub fn read_file(
    path: &Path,
    ranks: Option<usize>,
) -> Result<(Topology, TopologyFormat), TopologyError> {
    let text = std::fs::read_to_string(path).map_err(|error| TopologyError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    parse(&text, None, ranks).map_err(|e| e.in_file(path))
}

/// Reads the topology of a job of `ranks` ranks: a JSON document must declare that count, an
/// LGate or Newick file must name its last rank, `ranks - 1` (a file of another job, or a
/// rank count typed wrong, would otherwise be read with the ranks it lacks as singletons).
pub fn read_file_of_job(path: &Path, ranks: usize) -> Result<Topology, TopologyError> {
    let (topology, format) = read_file(path, Some(ranks))?;
    let named = topology.tree().max_rank().map_or(0, |r| r + 1);
    if format != TopologyFormat::Json && named != ranks {
        let problem = Problem::RankCount {
            declared: named,
            expected: ranks,
        };
        return Err(TopologyError::at(Location::Document, problem).in_file(path));
    }
    Ok(topology)
}

/// Writes a topology in the given format.
pub fn to_string(topology: &Topology, format: TopologyFormat) -> String {
    match format {
        TopologyFormat::Lgate => lgate::to_string(topology),
        TopologyFormat::Json => json::to_string(topology),
        TopologyFormat::Newick => newick::to_string(topology),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        let d = |s| TopologyFormat::detect(s).unwrap();
        assert_eq!(d("# LGate\ncluster { group { 0 } }"), TopologyFormat::Lgate);
        assert_eq!(d("  group { 0 }"), TopologyFormat::Lgate);
        assert_eq!(d("\n{\"format\": 1}"), TopologyFormat::Json);
        assert_eq!(d("((0,1),(2,3));"), TopologyFormat::Newick);
        assert_eq!(d("[comment](0);"), TopologyFormat::Newick);
        let e = TopologyFormat::detect("\n  <xml/>").unwrap_err();
        assert_eq!(e.location(), Some(&Location::Text { line: 2, column: 3 }));
        let e = TopologyFormat::detect("  # nothing\n").unwrap_err();
        assert_eq!(e.problem(), Some(&Problem::EmptyInput));
    }

    #[test]
    fn names_parse_back() {
        for f in TopologyFormat::ALL {
            assert_eq!(f.name().parse::<TopologyFormat>(), Ok(f));
        }
        assert!("yaml".parse::<TopologyFormat>().is_err());
    }
}
