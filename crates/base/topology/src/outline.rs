//! A topology drawn for people: an indented tree with compressed rank ranges and group sizes.

use std::fmt::Write as _;

use crate::ranks::{sorted_rank_list, Rank};
use crate::tree::{Level, Topology, TopologyNode};

/// How much of the tree an outline shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutlineOptions {
    /// Deepest node depth drawn (root is 0); deeper subtrees are summarised. `None` draws all.
    pub max_depth: Option<usize>,
}

/// How large a topology is, for people: `4 ranks, 2 groups, 1 level`.
pub fn size_summary(topology: &Topology) -> String {
    let groups = topology.tree().groups().len();
    let levels = topology.levels().len();
    format!(
        "{} {}, {} {}, {} {}",
        topology.ranks(),
        plural(topology.ranks(), "rank", "ranks"),
        groups,
        plural(groups, "group", "groups"),
        levels,
        plural(levels, "level", "levels"),
    )
}

/// The outline: a summary line, the tree, and the levels with their group sizes.
pub fn outline(topology: &Topology, options: OutlineOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", size_summary(topology));
    let mut lines = Vec::new();
    draw(topology, topology.tree(), 0, options, &mut lines);
    // Prefixes from the tree structure: the last child of a node gets a corner.
    for (i, (depth, text)) in lines.iter().enumerate() {
        let mut prefix = String::new();
        for d in 1..=*depth {
            let last_at_d = lines[i + 1..]
                .iter()
                .take_while(|(e, _)| *e >= d)
                .all(|(e, _)| *e > d);
            let text = match (d == *depth, last_at_d) {
                (true, true) => "└─ ",
                (true, false) => "├─ ",
                (false, true) => "   ",
                (false, false) => "│  ",
            };
            prefix.push_str(text);
        }
        let _ = writeln!(out, "{prefix}{text}");
    }
    let missing = topology.missing_ranks();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "not in the tree: {} (a group of its own in every level)",
            sorted_rank_list(&missing)
        );
    }
    if !topology.levels().is_empty() {
        out.push_str("levels, coarsest first:\n");
        out.push_str(&level_summary(topology));
    }
    out
}

/// One line per level: its name, group sizes and separation.
pub fn level_summary(topology: &Topology) -> String {
    let mut out = String::new();
    let width = topology
        .levels()
        .iter()
        .map(|l| l.name.chars().count())
        .max()
        .unwrap_or(0);
    for level in topology.levels() {
        let _ = write!(out, "  {:width$}  {}", level.name, group_sizes(level));
        if let Some(s) = level.separation {
            let _ = write!(out, ", separation {}", short(s));
        }
        if let Some(c) = level.confidence {
            let _ = write!(out, ", confidence {c:.2}");
        }
        out.push('\n');
    }
    out
}

fn draw(
    topology: &Topology,
    node: &TopologyNode,
    depth: usize,
    options: OutlineOptions,
    lines: &mut Vec<(usize, String)>,
) {
    let ranks = node.ranks();
    let mut text = match node {
        TopologyNode::Cluster { .. } => format!("cluster {}", sorted_rank_list(&ranks)),
        TopologyNode::Group { .. } => format!("group {}", sorted_rank_list(&ranks)),
    };
    let _ = write!(
        text,
        "  ({} {})",
        ranks.len(),
        plural(ranks.len(), "rank", "ranks")
    );
    if let Some(h) = node.height() {
        let _ = write!(text, "  height {}", short(h));
    }
    if let Some(labels) = topology.labels() {
        if node.is_group() || options.max_depth == Some(depth) {
            let _ = write!(text, "  {}", label_summary(labels, &ranks));
        }
    }
    let children = node.children();
    if options.max_depth == Some(depth) && !children.is_empty() {
        let groups = node.groups().len();
        let _ = write!(
            text,
            "  [{} {} below]",
            groups,
            plural(groups, "group", "groups")
        );
        lines.push((depth, text));
        return;
    }
    lines.push((depth, text));
    for child in children {
        draw(topology, child, depth + 1, options, lines);
    }
}

fn label_summary(labels: &[String], ranks: &[Rank]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for &r in ranks {
        if !names.contains(&labels[r].as_str()) {
            names.push(&labels[r]);
        }
    }
    const SHOWN: usize = 3;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        )
    }
}

/// `4 groups of 8`, or `3 groups of 2-8 ranks (8, 4, 2)`.
fn group_sizes(level: &Level) -> String {
    let sizes: Vec<usize> = level.groups.iter().map(Vec::len).collect();
    let n = sizes.len();
    let (min, max) = (
        sizes.iter().copied().min().unwrap_or(0),
        sizes.iter().copied().max().unwrap_or(0),
    );
    let groups = plural(n, "group", "groups");
    if min == max {
        return format!("{n} {groups} of {min}");
    }
    let mut s = format!("{n} {groups} of {min}-{max} ranks");
    const LISTED: usize = 8;
    if n <= LISTED {
        let list: Vec<String> = sizes.iter().map(ToString::to_string).collect();
        let _ = write!(s, " ({})", list.join(", "));
    }
    s
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// A number with four significant digits, for people.
fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-3) {
        format!("{x:.3e}")
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lgate;

    #[test]
    fn draws_figure_3_4() {
        let t = lgate::parse(
            "cluster {\n cluster { cluster { group { 0-7 } } cluster { group { 8-15 } } }\n \
             cluster { cluster { group { 16-23 } } cluster { group { 24-31 } } }\n}",
            None,
        )
        .unwrap();
        let text = outline(&t, OutlineOptions::default());
        let expected = "\
32 ranks, 4 groups, 2 levels
cluster 0-31  (32 ranks)
├─ cluster 0-15  (16 ranks)
│  ├─ cluster 0-7  (8 ranks)
│  │  └─ group 0-7  (8 ranks)
│  └─ cluster 8-15  (8 ranks)
│     └─ group 8-15  (8 ranks)
└─ cluster 16-31  (16 ranks)
   ├─ cluster 16-23  (8 ranks)
   │  └─ group 16-23  (8 ranks)
   └─ cluster 24-31  (8 ranks)
      └─ group 24-31  (8 ranks)
levels, coarsest first:
  level1  2 groups of 16
  level2  4 groups of 8
";
        assert_eq!(text, expected);
        let shallow = outline(&t, OutlineOptions { max_depth: Some(1) });
        assert!(
            shallow.contains("├─ cluster 0-15  (16 ranks)  [2 groups below]\n"),
            "{shallow}"
        );
    }

    #[test]
    fn uneven_levels_labels_and_missing_ranks() {
        let t = lgate::parse("cluster { group { 0-3 } group { 4,5 } }", Some(7))
            .unwrap()
            .with_labels((0..7).map(|r| format!("n{}", r / 2)).collect())
            .unwrap();
        let text = outline(&t, OutlineOptions::default());
        assert!(text.contains("├─ group 0-3  (4 ranks)  n0, n1\n"), "{text}");
        assert!(text.contains("not in the tree: 6 "), "{text}");
        assert!(
            text.contains("level1  3 groups of 1-4 ranks (4, 2, 1)"),
            "{text}"
        );
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(1.9), "1.9");
        assert_eq!(short(0.00000123), "1.230e-6");
        assert_eq!(short(3.0), "3");
    }
}
