//! The LGate topology file: nested `cluster { ... }` blocks with `group { 0-7 }` leaves.
//!
//! ```text
//! # two nodes of two sockets
//! cluster {
//!  cluster { group { 0-7 } group { 8-15 } }
//!  cluster { group { 16-23 } group { 24-31 } }
//! }
//! ```
//!
//! Ranks are separated by commas or whitespace; `a-b` is the inclusive range. `#` starts a
//! comment that runs to the end of the line. When every group ends its own line with a
//! comment of one name, as [`to_string`] writes a topology with host names, the names are
//! read back as its ranks' labels.

use std::fmt::Write as _;

use crate::error::{Location, Problem, TopologyError};
use crate::ranks::{Rank, RankList};
use crate::tree::{parse_rank, Topology, TopologyNode, MAX_DEPTH};

/// Parses an LGate topology file; `ranks`, when given, bounds the ranks it may name.
pub fn parse(text: &str, ranks: Option<usize>) -> Result<Topology, TopologyError> {
    let mut parser = Parser {
        lexer: Lexer::new(text),
        ranks,
        seen: Vec::new(),
        groups: Vec::new(),
        depth: 0,
        closes: Vec::new(),
    };
    let tree = parser.document()?;
    let topology = Topology::from_tree(tree, ranks)?;
    match parser.labels(topology.ranks()) {
        Some(labels) => topology.with_labels(labels),
        None => Ok(topology),
    }
}

/// Writes a topology as an LGate file, with rank labels as comments when it has them.
pub fn to_string(topology: &Topology) -> String {
    let mut out = String::new();
    write_node(&mut out, topology.tree(), 0, topology.labels());
    out
}

fn write_node(out: &mut String, node: &TopologyNode, depth: usize, labels: Option<&[String]>) {
    let indent = " ".repeat(depth);
    match node {
        TopologyNode::Group { ranks, .. } => {
            let _ = write!(out, "{indent}group {{ {} }}", RankList(ranks));
            push_label_comment(out, ranks, labels);
        }
        TopologyNode::Cluster { children, .. } => match children.as_slice() {
            [TopologyNode::Group { ranks, .. }] => {
                let _ = write!(out, "{indent}cluster {{ group {{ {} }} }}", RankList(ranks));
                push_label_comment(out, ranks, labels);
            }
            _ => {
                let _ = writeln!(out, "{indent}cluster {{");
                for child in children {
                    write_node(out, child, depth + 1, labels);
                }
                let _ = write!(out, "{indent}}}");
            }
        },
    }
    out.push('\n');
}

/// The comment after a group naming its ranks' labels (hosts): the first three distinct ones
/// and how many more, on one line whatever the labels hold.
fn push_label_comment(out: &mut String, ranks: &[Rank], labels: Option<&[String]>) {
    let Some(labels) = labels else { return };
    const SHOWN: usize = 3;
    let mut seen = std::collections::HashSet::new();
    let mut names: Vec<&str> = Vec::new();
    for &r in ranks {
        let name = labels[r].as_str();
        if seen.insert(name) && names.len() < SHOWN {
            names.push(name);
        }
    }
    let more = seen.len() - names.len();
    // A line break or other control character in a label would end the comment early.
    let shown: String = names
        .join(", ")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let _ = write!(out, "  # {shown}");
    if more > 0 {
        let _ = write!(out, " and {more} more");
    }
}

/// Whether a group's comment names one label, not the several that [`push_label_comment`]
/// lists ("a, b" or "a and 2 more").
fn one_name(text: &str) -> bool {
    let several = text.contains(", ")
        || text.rsplit_once(" and ").is_some_and(|(_, more)| {
            more.strip_suffix(" more")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    !text.is_empty() && !several
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Number(String),
    Open,
    Close,
    Comma,
    Dash,
    Other(char),
    End,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Word(w) | Token::Number(w) => format!("`{w}`"),
            Token::Open => "`{`".into(),
            Token::Close => "`}`".into(),
            Token::Comma => "`,`".into(),
            Token::Dash => "`-`".into(),
            Token::Other(c) => format!("`{}`", c.escape_debug()),
            Token::End => "end of file".into(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pos {
    line: usize,
    column: usize,
}

impl Pos {
    fn location(self) -> Location {
        Location::Text {
            line: self.line,
            column: self.column,
        }
    }

    fn error(self, problem: Problem) -> TopologyError {
        TopologyError::at(self.location(), problem)
    }
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    pos: Pos,
    peeked: Option<(Token, Pos)>,
    /// Each comment's line and text (after `#`, trimmed).
    comments: Vec<(usize, String)>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer {
            chars: text.chars().peekable(),
            pos: Pos { line: 1, column: 1 },
            peeked: None,
            comments: Vec::new(),
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.pos.line += 1;
            self.pos.column = 1;
        } else {
            self.pos.column += 1;
        }
        Some(c)
    }

    fn peek(&mut self) -> &(Token, Pos) {
        if self.peeked.is_none() {
            let t = self.scan();
            self.peeked = Some(t);
        }
        self.peeked.as_ref().expect("just filled")
    }

    fn next(&mut self) -> (Token, Pos) {
        match self.peeked.take() {
            Some(t) => t,
            None => self.scan(),
        }
    }

    fn scan(&mut self) -> (Token, Pos) {
        loop {
            match self.chars.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('#') => {
                    let line = self.pos.line;
                    let mut text = String::new();
                    self.bump();
                    while let Some(&c) = self.chars.peek().filter(|&&c| c != '\n') {
                        text.push(c);
                        self.bump();
                    }
                    self.comments.push((line, text.trim().to_string()));
                }
                _ => break,
            }
        }
        let pos = self.pos;
        let Some(c) = self.bump() else {
            return (Token::End, pos);
        };
        let token = match c {
            '{' => Token::Open,
            '}' => Token::Close,
            ',' => Token::Comma,
            '-' => Token::Dash,
            c if c.is_ascii_digit() => Token::Number(self.take_while(c, |c| c.is_ascii_digit())),
            c if c.is_alphabetic() || c == '_' => {
                Token::Word(self.take_while(c, |c| c.is_alphanumeric() || c == '_'))
            }
            c => Token::Other(c),
        };
        (token, pos)
    }

    fn take_while(&mut self, first: char, keep: impl Fn(char) -> bool) -> String {
        let mut s = String::from(first);
        while let Some(&c) = self.chars.peek() {
            if !keep(c) {
                break;
            }
            s.push(c);
            self.bump();
        }
        s
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    ranks: Option<usize>,
    /// One bit a rank: listed already.
    seen: Vec<u64>,
    /// Each rank or range read, with where it was written, to say where a repeated rank was
    /// listed first.
    groups: Vec<(Rank, Rank, Pos)>,
    /// How many clusters are open.
    depth: usize,
    /// Each group's ranks and the line its `}` is on.
    closes: Vec<(usize, Vec<Rank>)>,
}

impl Parser<'_> {
    /// The ranks' labels, when every group ends its own line with a comment of one name (as
    /// [`to_string`] writes them; a comment listing several, "a, b and 2 more", is not one).
    fn labels(&self, ranks: usize) -> Option<Vec<String>> {
        let mut on_line: std::collections::HashMap<usize, (usize, Option<&str>)> =
            std::collections::HashMap::new();
        for (line, _) in &self.closes {
            on_line.entry(*line).or_default().0 += 1;
        }
        for (line, text) in &self.lexer.comments {
            if let Some(entry) = on_line.get_mut(line) {
                entry.1 = Some(text.as_str());
            }
        }
        let mut labels = vec![None; ranks];
        for (line, members) in &self.closes {
            let name = match on_line.get(line) {
                Some(&(1, Some(name))) if one_name(name) => name,
                _ => return None,
            };
            for &r in members {
                *labels.get_mut(r)? = Some(name.to_string());
            }
        }
        labels.into_iter().collect()
    }

    fn document(&mut self) -> Result<TopologyNode, TopologyError> {
        if self.lexer.peek().0 == Token::End {
            return Err(TopologyError::at(Location::Document, Problem::EmptyInput));
        }
        let tree = self.element()?;
        match self.lexer.next() {
            (Token::End, _) => Ok(tree),
            (Token::Close, pos) => Err(pos.error(Problem::UnmatchedClose('}'))),
            (token, pos) => Err(pos.error(Problem::TrailingContent(token.describe()))),
        }
    }

    fn element(&mut self) -> Result<TopologyNode, TopologyError> {
        let (token, at) = self.lexer.next();
        let keyword = match token {
            Token::Word(w) if w == "cluster" || w == "group" => w,
            Token::Word(w) => return Err(at.error(Problem::UnknownKeyword(w))),
            Token::Close => return Err(at.error(Problem::UnmatchedClose('}'))),
            other => {
                return Err(at.error(Problem::Unexpected {
                    expected: "`cluster` or `group`",
                    found: other.describe(),
                }))
            }
        };
        let (token, open) = self.lexer.next();
        if token != Token::Open {
            let expected = if keyword == "cluster" {
                "`{` after `cluster`"
            } else {
                "`{` after `group`"
            };
            return Err(open.error(Problem::Unexpected {
                expected,
                found: token.describe(),
            }));
        }
        if keyword == "cluster" {
            self.cluster_body(at, open)
        } else {
            self.group_body(at, open)
        }
    }

    fn unclosed(open: Pos) -> Problem {
        Problem::Unclosed {
            open: '{',
            line: open.line,
            column: open.column,
        }
    }

    fn cluster_body(&mut self, at: Pos, open: Pos) -> Result<TopologyNode, TopologyError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(at.error(Problem::TooDeep { limit: MAX_DEPTH }));
        }
        let node = self.cluster_children(at, open);
        self.depth -= 1;
        node
    }

    fn cluster_children(&mut self, at: Pos, open: Pos) -> Result<TopologyNode, TopologyError> {
        let mut children = Vec::new();
        loop {
            match &self.lexer.peek().0 {
                Token::Close => {
                    self.lexer.next();
                    if children.is_empty() {
                        return Err(at.error(Problem::EmptyCluster));
                    }
                    return Ok(TopologyNode::cluster(children));
                }
                Token::End => {
                    let (_, end) = self.lexer.next();
                    return Err(end.error(Self::unclosed(open)));
                }
                Token::Word(_) => children.push(self.element()?),
                _ => {
                    let (token, pos) = self.lexer.next();
                    return Err(pos.error(Problem::Unexpected {
                        expected: "`cluster`, `group` or `}`",
                        found: token.describe(),
                    }));
                }
            }
        }
    }

    fn group_body(&mut self, at: Pos, open: Pos) -> Result<TopologyNode, TopologyError> {
        let mut ranks = Vec::new();
        // After a comma another rank must follow.
        let mut need_rank = false;
        loop {
            let (token, pos) = self.lexer.next();
            match token {
                Token::Number(text) => {
                    let start = self.rank(&text, pos)?;
                    let end = if self.lexer.peek().0 == Token::Dash {
                        self.lexer.next();
                        match self.lexer.next() {
                            (Token::Number(text), end_pos) => {
                                let end = self.rank(&text, end_pos)?;
                                if end < start {
                                    return Err(pos.error(Problem::ReversedRange { start, end }));
                                }
                                end
                            }
                            (token, p) => {
                                return Err(p.error(Problem::Unexpected {
                                    expected: "the end of the range",
                                    found: token.describe(),
                                }))
                            }
                        }
                    } else {
                        start
                    };
                    self.mark(start, end, pos)?;
                    ranks.extend(start..=end);
                    self.groups.push((start, end, pos));
                    need_rank = false;
                    if self.lexer.peek().0 == Token::Comma {
                        self.lexer.next();
                        need_rank = true;
                    }
                }
                Token::Close if !need_rank => {
                    if ranks.is_empty() {
                        return Err(at.error(Problem::EmptyGroup));
                    }
                    self.closes.push((pos.line, ranks.clone()));
                    return Ok(TopologyNode::group(ranks));
                }
                Token::End => return Err(pos.error(Self::unclosed(open))),
                token => {
                    let expected = if need_rank {
                        "a rank after `,`"
                    } else {
                        "a rank, a range such as `0-7`, or `}`"
                    };
                    return Err(pos.error(Problem::Unexpected {
                        expected,
                        found: token.describe(),
                    }));
                }
            }
        }
    }

    /// Marks `start..=end` as listed, or says where a rank of it was listed first.
    fn mark(&mut self, start: Rank, end: Rank, pos: Pos) -> Result<(), TopologyError> {
        let words = end / 64 + 1;
        if self.seen.len() < words {
            self.seen.resize(words, 0);
        }
        for rank in start..=end {
            let (word, bit) = (rank / 64, 1u64 << (rank % 64));
            if self.seen[word] & bit != 0 {
                let first = self
                    .groups
                    .iter()
                    .find(|&&(a, b, _)| (a..=b).contains(&rank))
                    .map_or(pos, |&(_, _, p)| p);
                return Err(pos.error(Problem::DuplicateRank {
                    rank,
                    first: first.location(),
                }));
            }
            self.seen[word] |= bit;
        }
        Ok(())
    }

    fn rank(&self, text: &str, pos: Pos) -> Result<Rank, TopologyError> {
        let rank = parse_rank(text).map_err(|p| pos.error(p))?;
        if let Some(n) = self.ranks {
            if rank >= n {
                return Err(pos.error(Problem::RankOutOfRange { rank, ranks: n }));
            }
        }
        Ok(rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGURE_3_4: &str = "\
cluster {
 cluster {
  cluster { group { 0-7 } }
  cluster { group { 8-15 } }
 }
 cluster {
  cluster { group { 16-23 } }
  cluster { group { 24-31 } }
 }
}
";

    #[test]
    fn figure_3_4_is_read_and_written_back_exactly() {
        let t = parse(FIGURE_3_4, None).unwrap();
        assert_eq!(t.ranks(), 32);
        assert_eq!(t.tree().groups().len(), 4);
        assert_eq!(to_string(&t), FIGURE_3_4);
    }

    #[test]
    fn comments_whitespace_and_rank_lists() {
        let text = "# a comment\ncluster{group{0,2,4-6}   # trailing\n\tgroup { 1 3 7 }}";
        let t = parse(text, None).unwrap();
        let groups = t.tree().groups();
        assert_eq!(groups[0], &[0, 2, 4, 5, 6]);
        assert_eq!(groups[1], &[1, 3, 7]);
        assert_eq!(
            to_string(&t),
            "cluster {\n group { 0,2,4-6 }\n group { 1,3,7 }\n}\n"
        );
    }

    fn problem(text: &str, ranks: Option<usize>) -> (Problem, String) {
        let err = parse(text, ranks).unwrap_err();
        let loc = err.location().map(ToString::to_string).unwrap_or_default();
        (err.problem().cloned().unwrap(), loc)
    }

    #[test]
    fn malformed_files_each_get_their_own_error() {
        let (p, at) = problem("cluster {\n group { 0-3 }\n group { 2 }\n}", None);
        assert_eq!(
            p,
            Problem::DuplicateRank {
                rank: 2,
                first: Location::Text {
                    line: 2,
                    column: 10
                }
            }
        );
        assert_eq!(at, "3:10");
        assert_eq!(
            problem("cluster {\n group { }\n}", None).0,
            Problem::EmptyGroup
        );
        assert_eq!(problem("cluster { }", None).0, Problem::EmptyCluster);
        assert!(matches!(
            problem("cluster {\n group { 0 }\n", None),
            (
                Problem::Unclosed {
                    open: '{',
                    line: 1,
                    column: 9
                },
                _
            )
        ));
        assert_eq!(
            problem("cluster { group { 0 } } }", None).0,
            Problem::UnmatchedClose('}')
        );
        assert_eq!(
            problem("cluster { group { 0-40 } }", Some(32)).0,
            Problem::RankOutOfRange {
                rank: 40,
                ranks: 32
            }
        );
        assert_eq!(
            problem("group { 7-3 }", None).0,
            Problem::ReversedRange { start: 7, end: 3 }
        );
        assert_eq!(
            problem("clustr { group { 0 } }", None).0,
            Problem::UnknownKeyword("clustr".into())
        );
        assert_eq!(problem("  # only a comment\n", None).0, Problem::EmptyInput);
        assert!(matches!(
            problem("group { 0 } group { 1 }", None).0,
            Problem::TrailingContent(_)
        ));
        assert!(matches!(
            problem("group { 0, }", None).0,
            Problem::Unexpected {
                expected: "a rank after `,`",
                ..
            }
        ));
        assert!(matches!(
            problem("group { cluster }", None).0,
            Problem::Unexpected { .. }
        ));
        assert!(matches!(
            problem("cluster group { 0 }", None).0,
            Problem::Unexpected {
                expected: "`{` after `cluster`",
                ..
            }
        ));
        assert_eq!(
            problem("group { 99999999999999999999999 }", None).0,
            Problem::TooManyRanks {
                what: "rank",
                value: "99999999999999999999999".into(),
                limit: crate::tree::MAX_RANKS
            }
        );
        // A 20-byte file may not name 16 million ranks, nor nest past the stack.
        assert!(matches!(
            problem("group { 4-16777215 }", None).0,
            Problem::TooManyRanks { what: "rank", .. }
        ));
        let deep = "cluster { ".repeat(30_000);
        assert_eq!(
            problem(&deep, None).0,
            Problem::TooDeep {
                limit: crate::tree::MAX_DEPTH
            }
        );
        let chain = format!(
            "{}group {{ 0-4095 }}{}",
            "cluster { ".repeat(1000),
            "}".repeat(1000)
        );
        assert!(matches!(
            problem(&chain, None).0,
            Problem::TooLarge {
                ranks: 4096,
                levels: 1000,
                ..
            }
        ));
        assert!(matches!(
            problem("group { -1 }", None).0,
            Problem::Unexpected { .. }
        ));
    }

    #[test]
    fn host_names_written_as_comments_are_read_back() {
        let hosts: Vec<String> = ["n0", "n0", "n1", "n1"].map(String::from).to_vec();
        let t = parse("cluster { group { 0 1 } group { 2 3 } }", None)
            .unwrap()
            .with_labels(hosts.clone())
            .unwrap();
        let back = parse(&to_string(&t), None).unwrap();
        assert_eq!(back.labels(), Some(hosts.as_slice()));
        // Groups below a host share its name.
        let below = "cluster {\n group { 0 }  # n0\n group { 1 }  # n0\n group { 2,3 }  # n1\n}\n";
        assert_eq!(parse(below, None).unwrap().labels(), Some(hosts.as_slice()));
        // Not every group named, several names in one, two groups on a line: no labels.
        for text in [
            "cluster {\n group { 0,1 }  # n0\n group { 2,3 }\n}\n",
            "cluster {\n group { 0,1 }  # n0, n1\n group { 2,3 }  # n1\n}\n",
            "cluster {\n group { 0,1 }  # n0 and 2 more\n group { 2,3 }  # n1\n}\n",
            "cluster { group { 0,1 } group { 2,3 } }  # n0\n",
            "# n0\ncluster { group { 0,1 } group { 2,3 } }\n",
        ] {
            assert_eq!(parse(text, None).unwrap().labels(), None, "{text}");
        }
        // A name with " and " in it is still one name.
        let t = parse(
            "cluster {\n group { 0,1 }  # rack and row\n group { 2,3 }  # b\n}\n",
            None,
        )
        .unwrap();
        assert_eq!(t.labels().map(|l| l[0].as_str()), Some("rack and row"));
    }

    #[test]
    fn labels_become_comments() {
        let t = parse("cluster { group { 0-1 } group { 2-3 } }", None)
            .unwrap()
            .with_labels(vec!["a".into(), "a".into(), "b".into(), "c".into()])
            .unwrap();
        let text = to_string(&t);
        assert!(text.contains("group { 0,1 }  # a\n"), "{text}");
        assert!(text.contains("group { 2,3 }  # b, c\n"), "{text}");
        // A label holding a line break stays in its comment.
        let t = Topology::from_tree(
            TopologyNode::cluster(vec![
                TopologyNode::group(vec![0]),
                TopologyNode::group(vec![1]),
            ]),
            Some(2),
        )
        .unwrap()
        .with_labels(vec!["n\n1".into(), "n2".into()])
        .unwrap();
        let text = to_string(&t);
        assert!(text.contains("group { 0 }  # n 1\n"), "{text}");
        assert_eq!(parse(&text, Some(2)).unwrap().tree(), t.tree());
        assert_eq!(parse(&text, None).unwrap().tree(), t.tree());
    }
}
