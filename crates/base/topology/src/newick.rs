//! Newick trees, for dendrogram viewers: `((0,1,2,3),(4,5,6,7));`.
//!
//! Taxa are rank numbers. Every group is written in parentheses, so a node whose children are
//! all taxa reads back as a group and a node whose children are all subtrees as a cluster; taxa
//! beside subtrees (as other tools write them) read as single-rank groups. Branch lengths are
//! written from node heights when known and are skipped when reading, as are internal node
//! labels and `[comments]`.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::error::{Location, Problem, TopologyError};
use crate::ranks::Rank;
use crate::tree::{parse_rank, Topology, TopologyNode, MAX_DEPTH};

/// Writes a topology as a Newick tree ending in `;` and a newline.
pub fn to_string(topology: &Topology) -> String {
    let mut out = String::new();
    let heights = if grows_to_the_root(topology.tree()) {
        Heights::AsGiven
    } else {
        Heights::Stacked
    };
    write_node(&mut out, topology.tree(), heights);
    out.push_str(";\n");
    out
}

/// How node heights become the heights a dendrogram draws (branch lengths are differences).
#[derive(Debug, Clone, Copy)]
enum Heights {
    /// Every node at its own height: they grow towards the root (merge distances).
    AsGiven,
    /// Every node at its own height plus the highest of its children's drawn heights: heights
    /// that are each split's separation (`auto`'s) need not grow towards the root, and a
    /// parent drawn no higher than a child would hide its level behind a branch of length 0.
    Stacked,
}

impl Heights {
    /// The height `node` is drawn at, if it has one.
    fn of(self, node: &TopologyNode) -> Option<f64> {
        let below = node
            .children()
            .iter()
            .filter_map(|c| self.of(c))
            .reduce(f64::max);
        match (self, node.height(), below) {
            (Heights::AsGiven, h, _) => h,
            (Heights::Stacked, Some(h), Some(b)) => Some(h + b),
            (Heights::Stacked, h, None) => h,
            (Heights::Stacked, None, Some(_)) => None,
        }
    }
}

/// Whether no node is lower than any node below it.
fn grows_to_the_root(node: &TopologyNode) -> bool {
    node.children().iter().all(|c| {
        grows_to_the_root(c)
            && match (node.height(), highest(c)) {
                (Some(h), Some(b)) => h >= b,
                _ => true,
            }
    })
}

/// The highest height in `node`'s subtree.
fn highest(node: &TopologyNode) -> Option<f64> {
    node.children()
        .iter()
        .filter_map(highest)
        .chain(node.height())
        .reduce(f64::max)
}

fn write_node(out: &mut String, node: &TopologyNode, heights: Heights) {
    out.push('(');
    let height = heights.of(node);
    match node {
        TopologyNode::Group { ranks, .. } => {
            for (i, r) in ranks.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{r}");
                if let Some(h) = height {
                    let _ = write!(out, ":{h}");
                }
            }
        }
        TopologyNode::Cluster { children, .. } => {
            for (i, child) in children.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(out, child, heights);
                if let (Some(h), Some(c)) = (height, heights.of(child)) {
                    let _ = write!(out, ":{}", h - c);
                }
            }
        }
    }
    out.push(')');
}

/// Parses a Newick tree whose taxa are rank numbers; `ranks`, when given, bounds them.
pub fn parse(text: &str, ranks: Option<usize>) -> Result<Topology, TopologyError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        column: 1,
        depth: 0,
    };
    p.skip();
    if p.peek().is_none() {
        return Err(TopologyError::at(Location::Document, Problem::EmptyInput));
    }
    let tree = p.subtree()?;
    if let Parsed::Taxon { name, line, column } = &tree {
        // `7` alone is a one-leaf Newick tree, but as a topology it is a mistake.
        return Err(TopologyError::at_text(
            *line,
            *column,
            Problem::Unexpected {
                expected: "`(` opening a Newick tree of ranks",
                found: format!("`{name}` alone"),
            },
        ));
    }
    p.skip();
    if p.peek() == Some(';') {
        p.bump();
        p.skip();
    }
    if let Some(c) = p.peek() {
        let problem = if c == ')' {
            Problem::UnmatchedClose(')')
        } else {
            Problem::TrailingContent(format!("`{c}`"))
        };
        return Err(p.error(problem));
    }
    let mut first_seen = HashMap::new();
    let node = to_node(tree, ranks, &mut first_seen)?;
    Topology::from_tree(node, ranks)
}

/// A parsed Newick node before it is read as clusters and groups.
enum Parsed {
    Taxon {
        name: String,
        line: usize,
        column: usize,
    },
    Inner(Vec<Parsed>),
}

fn to_node(
    parsed: Parsed,
    ranks: Option<usize>,
    first_seen: &mut HashMap<Rank, Location>,
) -> Result<TopologyNode, TopologyError> {
    match parsed {
        Parsed::Taxon { name, line, column } => Ok(TopologyNode::group(vec![rank_of(
            name, line, column, ranks, first_seen,
        )?])),
        Parsed::Inner(children) if children.iter().all(|c| matches!(c, Parsed::Taxon { .. })) => {
            let mut group = Vec::with_capacity(children.len());
            for child in children {
                if let Parsed::Taxon { name, line, column } = child {
                    group.push(rank_of(name, line, column, ranks, first_seen)?);
                }
            }
            Ok(TopologyNode::group(group))
        }
        Parsed::Inner(children) => {
            let children = children
                .into_iter()
                .map(|c| to_node(c, ranks, first_seen))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(TopologyNode::cluster(children))
        }
    }
}

/// The rank a taxon names, checked against the rank count and the ranks seen before.
fn rank_of(
    name: String,
    line: usize,
    column: usize,
    ranks: Option<usize>,
    first_seen: &mut HashMap<Rank, Location>,
) -> Result<Rank, TopologyError> {
    let here = Location::Text { line, column };
    let rank = parse_rank(&name).map_err(|p| TopologyError::at(here.clone(), p))?;
    if let Some(n) = ranks.filter(|&n| rank >= n) {
        return Err(TopologyError::at(
            here,
            Problem::RankOutOfRange { rank, ranks: n },
        ));
    }
    if let Some(first) = first_seen.insert(rank, here.clone()) {
        return Err(TopologyError::at(
            here,
            Problem::DuplicateRank { rank, first },
        ));
    }
    Ok(rank)
}

struct Parser {
    chars: Vec<char>,
    i: usize,
    line: usize,
    column: usize,
    /// How many parentheses are open.
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error(&self, problem: Problem) -> TopologyError {
        TopologyError::at_text(self.line, self.column, problem)
    }

    /// Skips whitespace and `[comments]`.
    fn skip(&mut self) {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('[') => {
                    while let Some(c) = self.bump() {
                        if c == ']' {
                            break;
                        }
                    }
                }
                _ => return,
            }
        }
    }

    fn subtree(&mut self) -> Result<Parsed, TopologyError> {
        self.skip();
        let node = if self.peek() == Some('(') {
            let (line, column) = (self.line, self.column);
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.error(Problem::TooDeep { limit: MAX_DEPTH }));
            }
            self.bump();
            let mut children = vec![self.subtree()?];
            loop {
                self.skip();
                match self.bump() {
                    Some(',') => children.push(self.subtree()?),
                    Some(')') => break,
                    None | Some(';') => {
                        return Err(self.error(Problem::Unclosed {
                            open: '(',
                            line,
                            column,
                        }))
                    }
                    Some(c) => {
                        self.i -= 1;
                        self.column -= 1;
                        return Err(self.error(Problem::Unexpected {
                            expected: "`,` or `)`",
                            found: format!("`{c}`"),
                        }));
                    }
                }
            }
            self.depth -= 1;
            // An internal node's label carries no rank: skip it.
            self.label()?;
            Parsed::Inner(children)
        } else {
            let (line, column) = (self.line, self.column);
            let name = self.label()?;
            if name.is_empty() {
                let found = self
                    .peek()
                    .map_or("end of file".into(), |c| format!("`{c}`"));
                return Err(self.error(Problem::Unexpected {
                    expected: "a rank or `(`",
                    found,
                }));
            }
            Parsed::Taxon { name, line, column }
        };
        self.skip();
        if self.peek() == Some(':') {
            self.bump();
            self.skip();
            let length = self.label()?;
            if length.parse::<f64>().is_err() {
                return Err(self.error(Problem::Unexpected {
                    expected: "a branch length after `:`",
                    found: format!("`{length}`"),
                }));
            }
        }
        Ok(node)
    }

    /// Reads a quoted or unquoted label; empty when there is none.
    fn label(&mut self) -> Result<String, TopologyError> {
        self.skip();
        let mut s = String::new();
        if self.peek() == Some('\'') {
            let (line, column) = (self.line, self.column);
            self.bump();
            loop {
                match self.bump() {
                    Some('\'') if self.peek() == Some('\'') => {
                        self.bump();
                        s.push('\'');
                    }
                    Some('\'') => return Ok(s),
                    Some(c) => s.push(c),
                    None => {
                        return Err(TopologyError::at_text(
                            line,
                            column,
                            Problem::Unclosed {
                                open: '\'',
                                line,
                                column,
                            },
                        ))
                    }
                }
            }
        }
        while let Some(c) = self.peek() {
            if c.is_whitespace() || "():;,[]'".contains(c) {
                break;
            }
            s.push(c);
            self.bump();
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_groups_in_parentheses() {
        let tree = TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 1]),
            TopologyNode::cluster(vec![
                TopologyNode::group(vec![2]),
                TopologyNode::group(vec![3]),
            ]),
        ]);
        let t = Topology::from_tree(tree, None).unwrap();
        let text = to_string(&t);
        assert_eq!(text, "((0,1),((2),(3)));\n");
        assert_eq!(parse(&text, None).unwrap(), t);
    }

    #[test]
    fn branch_lengths_follow_heights() {
        let tree = TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 1]).with_height(Some(0.5)),
            TopologyNode::group(vec![2, 3]).with_height(Some(0.25)),
        ])
        .with_height(Some(2.0));
        let t = Topology::from_tree(tree, None).unwrap();
        let text = to_string(&t);
        assert_eq!(text, "((0:0.5,1:0.5):1.5,(2:0.25,3:0.25):1.75);\n");
        assert_eq!(
            parse(&text, None).unwrap().tree(),
            &t.tree().without_heights()
        );
    }

    #[test]
    fn branch_lengths_are_never_negative() {
        // Separations as heights: the root's split is weaker than its children's.
        let tree = TopologyNode::cluster(vec![
            TopologyNode::cluster(vec![
                TopologyNode::group(vec![0, 1]),
                TopologyNode::group(vec![2, 3]),
            ])
            .with_height(Some(9.0)),
            TopologyNode::group(vec![4, 5]).with_height(Some(0.5)),
        ])
        .with_height(Some(3.0));
        let text = to_string(&Topology::from_tree(tree, None).unwrap());
        // Drawn stacked: the root at its 3 above its highest child's 9, so its level shows.
        assert_eq!(text, "(((0,1),(2,3)):3,(4:0.5,5:0.5):11.5);\n");
        assert!(!text.contains(":-"), "{text}");
        assert!(!text.contains(":0,") && !text.contains(":0)"), "{text}");
    }

    #[test]
    fn a_bare_number_is_not_a_topology() {
        let e = parse("7\n", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1:1: expected `(` opening a Newick tree of ranks, found `7` alone"
        );
        let deep = "(".repeat(100_000);
        assert_eq!(
            parse(&deep, None).unwrap_err().problem(),
            Some(&Problem::TooDeep {
                limit: crate::tree::MAX_DEPTH
            })
        );
    }

    #[test]
    fn reads_other_tools_trees() {
        // Internal labels, comments, quoted taxa and taxa beside subtrees.
        let t = parse("[a dendrogram]\n((0,1)n1:0.1,'2',(3,4)):0.0;", None).unwrap();
        let groups = t.tree().groups();
        assert_eq!(groups, vec![&[0, 1][..], &[2][..], &[3, 4][..]]);
    }

    #[test]
    fn malformed_trees() {
        let problem = |s: &str| parse(s, None).unwrap_err();
        let e = problem("((0,1),(2,3);");
        assert!(matches!(
            e.problem(),
            Some(Problem::Unclosed {
                open: '(',
                line: 1,
                column: 1
            })
        ));
        assert!(matches!(
            problem("(0,1));").problem(),
            Some(Problem::UnmatchedClose(')'))
        ));
        assert!(matches!(
            problem("(0,x);").problem(),
            Some(Problem::NotARank(_))
        ));
        assert!(matches!(
            problem("(0,1,0);").problem(),
            Some(Problem::DuplicateRank { rank: 0, .. })
        ));
        assert!(matches!(
            problem("(0,,1);").problem(),
            Some(Problem::Unexpected { .. })
        ));
        assert!(matches!(
            problem("(0:abc,1);").problem(),
            Some(Problem::Unexpected { .. })
        ));
        assert!(matches!(
            problem("(0,1); (2)").problem(),
            Some(Problem::TrailingContent(_))
        ));
        assert_eq!(problem(" ").problem(), Some(&Problem::EmptyInput));
        let e = parse("(0,5);", Some(4)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1:4: rank 5 is beyond the rank count 4 (ranks are 0 to 3)"
        );
    }
}
