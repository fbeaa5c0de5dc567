//! Errors of reading, writing and validating topologies.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::ranks::Rank;

/// Where in a document a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line and column in a text file (LGate, Newick, JSON syntax).
    Text {
        /// 1-based line number.
        line: usize,
        /// 1-based column, counted in characters.
        column: usize,
    },
    /// A path inside a JSON document or tree, such as `tree.children[1].ranks[3]`.
    Path(String),
    /// The document as a whole.
    Document,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Text { line, column } => write!(f, "{line}:{column}"),
            Location::Path(path) => f.write_str(path),
            Location::Document => Ok(()),
        }
    }
}

/// What is wrong with a topology.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// The input holds nothing but whitespace and comments.
    #[error("the file is empty: expected a topology (LGate `cluster {{ ... }}`, JSON or Newick)")]
    EmptyInput,
    /// A rank count of 0: a topology holds at least one rank.
    #[error("a topology of no ranks: it holds at least one")]
    NoRanks,
    /// The first character matches none of the known formats.
    #[error(
        "cannot tell the format from {found}: expected `cluster` or `group` (LGate), `{{` (JSON) \
         or `(` (Newick)"
    )]
    UnknownFormat {
        /// What was found, quoted.
        found: String,
    },
    /// A token other than the one the grammar needs here.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the grammar needs here.
        expected: &'static str,
        /// What was found, quoted, or `end of file`.
        found: String,
    },
    /// A word that is not `cluster` or `group`.
    #[error("unknown keyword `{0}`: expected `cluster` or `group`")]
    UnknownKeyword(String),
    /// An opening brace or parenthesis without its closing one.
    #[error("`{open}` opened at {line}:{column} is never closed")]
    Unclosed {
        /// The opening character.
        open: char,
        /// Line of the opening character.
        line: usize,
        /// Column of the opening character.
        column: usize,
    },
    /// A closing brace or parenthesis with no opening one.
    #[error("`{0}` closes nothing: there is no open element here")]
    UnmatchedClose(char),
    /// Content after the single top-level element.
    #[error("unexpected {0} after the end of the topology: a file holds one tree")]
    TrailingContent(String),
    /// A group without ranks.
    #[error("empty group: a group lists at least one rank")]
    EmptyGroup,
    /// A cluster without children.
    #[error("empty cluster: a cluster holds at least one group or cluster")]
    EmptyCluster,
    /// The same rank in two places.
    #[error("rank {rank} is listed twice (first at {first})")]
    DuplicateRank {
        /// The repeated rank.
        rank: Rank,
        /// Where it was listed first.
        first: Location,
    },
    /// A rank not below the rank count.
    #[error("rank {rank} is beyond the rank count {ranks} (ranks are 0 to {last})", last = ranks.saturating_sub(1))]
    RankOutOfRange {
        /// The offending rank.
        rank: Rank,
        /// The number of ranks.
        ranks: usize,
    },
    /// A document whose declared rank count is not the job's.
    #[error(
        "the topology is of {declared} ranks, but the job has {expected}: give the topology of \
         this job (lgate-plogp cluster RUN writes one)"
    )]
    RankCount {
        /// The count the document declares.
        declared: usize,
        /// The count it was checked against.
        expected: usize,
    },
    /// A range whose end is below its start.
    #[error("range {start}-{end} runs backwards: write {end}-{start}")]
    ReversedRange {
        /// First number of the range.
        start: Rank,
        /// Second number of the range.
        end: Rank,
    },
    /// Text where a rank number should be.
    #[error("`{0}` is not a rank number")]
    NotARank(String),
    /// A rank or rank count beyond what this build handles.
    #[error(
        "{what} {value} is beyond the largest topology this build reads ({limit} ranks, ranks 0 \
         to {last})",
        last = limit - 1
    )]
    TooManyRanks {
        /// What is too large: `rank` or `rank count`.
        what: &'static str,
        /// The value found.
        value: String,
        /// The most ranks a topology may have.
        limit: usize,
    },
    /// Ranks times levels beyond what this build reads.
    #[error(
        "{ranks} ranks in {levels} levels (or clusters nested {levels} deep) is beyond the largest \
         topology this build reads ({limit} ranks times levels)"
    )]
    TooLarge {
        /// The rank count.
        ranks: usize,
        /// The levels, or the tree's depth.
        levels: usize,
        /// The most ranks times levels.
        limit: usize,
    },
    /// A topology that leaves out more ranks than this build fills in as singletons.
    #[error(
        "{unlisted} of its {ranks} ranks are not listed, and each would be a group of its own in \
         {levels} levels: more than the {limit} left-out ranks times levels this build fills in; \
         list the ranks, or check the rank count (the largest rank + 1 unless given)"
    )]
    TooManyUnlisted {
        /// Ranks below the rank count that the topology does not list (in the level leaving out
        /// most, when it is given as levels).
        unlisted: usize,
        /// The rank count.
        ranks: usize,
        /// The levels, or the tree's depth.
        levels: usize,
        /// The most left-out ranks times levels.
        limit: usize,
    },
    /// Clusters nested deeper than any machine's hierarchy.
    #[error("clusters nested more than {limit} deep: a topology's levels are far fewer")]
    TooDeep {
        /// The deepest nesting read.
        limit: usize,
    },
    /// JSON that does not parse or does not have the expected shape.
    #[error("{0}")]
    Json(String),
    /// A JSON document of another kind.
    #[error("`format` is {0:?}, expected \"lgate-plogp-topology\"")]
    WrongFormatTag(String),
    /// A JSON document of a version this build does not read.
    #[error("topology JSON version {0} is not supported (this build reads version 1)")]
    UnsupportedVersion(u64),
    /// A JSON node with both children and ranks.
    #[error(
        "a node has both children and ranks: a node is a cluster (children) or a group (ranks)"
    )]
    MixedNode,
    /// A JSON document with neither a tree nor levels.
    #[error("the document has neither `tree` nor `levels`")]
    NoTree,
    /// Labels whose count differs from the rank count.
    #[error("{labels} labels for {ranks} ranks: give one label per rank")]
    LabelCount {
        /// Number of labels.
        labels: usize,
        /// Number of ranks.
        ranks: usize,
    },
    /// An outlier that names no rank of the topology or gives no usable slowness.
    #[error("outlier rank {rank} (slowness {slowness}): ranks are 0 to {ranks} - 1 and slowness a finite number of at least 1")]
    BadOutlier {
        /// The rank given.
        rank: usize,
        /// The slowness given.
        slowness: f64,
        /// Number of ranks.
        ranks: usize,
    },
    /// A height that is NaN or infinite.
    #[error("height {0} is not a finite number")]
    NonFiniteHeight(f64),
    /// A level that puts every rank in one group.
    #[error("level `{0}` has a single group holding every rank, which says nothing; leave it out")]
    TrivialLevel(String),
    /// Two consecutive levels with the same groups.
    #[error("level `{level}` has the same groups as level `{previous}`; keep one of them")]
    RepeatedLevel {
        /// The finer level.
        level: String,
        /// The coarser level it repeats.
        previous: String,
    },
    /// A group of a finer level that spans groups of the coarser level above it.
    #[error(
        "group {{{group}}} of level `{level}` spans several groups of level `{coarser}`: \
         levels must nest, coarsest first"
    )]
    LevelsNotNested {
        /// The finer level.
        level: String,
        /// The coarser level.
        coarser: String,
        /// The offending group, compressed.
        group: String,
    },
    /// Levels given next to a tree that describe a different hierarchy.
    #[error("`levels` disagree with `tree`: {0}")]
    LevelsDisagree(String),
}

/// An error of reading, writing or validating a topology.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A file could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: io::Error,
    },
    /// The topology is malformed or inconsistent.
    #[error("{}", InvalidDisplay { file: file.as_ref(), location, problem })]
    Invalid {
        /// The file it came from, when known.
        file: Option<PathBuf>,
        /// Where in the document.
        location: Location,
        /// What is wrong.
        problem: Problem,
    },
}

impl TopologyError {
    /// An error at a location in a document not yet tied to a file.
    pub fn at(location: Location, problem: Problem) -> Self {
        TopologyError::Invalid {
            file: None,
            location,
            problem,
        }
    }

    /// An error at a 1-based line and column.
    pub fn at_text(line: usize, column: usize, problem: Problem) -> Self {
        Self::at(Location::Text { line, column }, problem)
    }

    /// The same error, naming the file the document came from.
    pub fn in_file(self, path: impl Into<PathBuf>) -> Self {
        match self {
            TopologyError::Invalid {
                location, problem, ..
            } => TopologyError::Invalid {
                file: Some(path.into()),
                location,
                problem,
            },
            io => io,
        }
    }

    /// What is wrong, when the topology itself is at fault.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            TopologyError::Invalid { problem, .. } => Some(problem),
            TopologyError::Io { .. } => None,
        }
    }

    /// Where the problem is, when the topology itself is at fault.
    pub fn location(&self) -> Option<&Location> {
        match self {
            TopologyError::Invalid { location, .. } => Some(location),
            TopologyError::Io { .. } => None,
        }
    }
}

struct InvalidDisplay<'a> {
    file: Option<&'a PathBuf>,
    location: &'a Location,
    problem: &'a Problem,
}

impl fmt::Display for InvalidDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file, self.location) {
            (Some(file), Location::Text { .. }) => {
                write!(f, "{}:{}: ", file.display(), self.location)?
            }
            (Some(file), Location::Path(_)) => {
                write!(f, "{}: at {}: ", file.display(), self.location)?
            }
            (Some(file), Location::Document) => write!(f, "{}: ", file.display())?,
            (None, Location::Text { .. }) => write!(f, "line {}: ", self.location)?,
            (None, Location::Path(_)) => write!(f, "at {}: ", self.location)?,
            (None, Location::Document) => {}
        }
        write!(f, "{}", self.problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_column() {
        let e = TopologyError::at_text(3, 5, Problem::EmptyGroup).in_file("t.lgate");
        assert_eq!(
            e.to_string(),
            "t.lgate:3:5: empty group: a group lists at least one rank"
        );
        let e = TopologyError::at(
            Location::Path("tree.children[1]".into()),
            Problem::MixedNode,
        )
        .in_file("t.json");
        assert!(e
            .to_string()
            .starts_with("t.json: at tree.children[1]: a node has both"));
    }
}
