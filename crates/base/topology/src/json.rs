//! The topology JSON document (`"format": "lgate-plogp-topology"`, version 1).
//!
//! ```json
//! {
//!   "format": "lgate-plogp-topology",
//!   "version": 1,
//!   "ranks": 4,
//!   "labels": ["n1", "n1", "n2", "n2"],
//!   "tree": {
//!     "children": [
//!       {"children": [], "ranks": [0, 1]},
//!       {"children": [], "ranks": [2, 3]}
//!     ],
//!     "ranks": [],
//!     "height": 1.9
//!   },
//!   "levels": [
//!     {"name": "node", "groups": [[0, 1], [2, 3]], "separation": 3.2}
//!   ]
//! }
//! ```
//!
//! A node is a cluster (non-empty `children`, empty `ranks`) or a group (`ranks`, no children).
//! `labels`, `height`, `separation` and `outliers` (ranks measured slower towards every other
//! rank, each `{"rank": 5, "slowness": 1.4}`, as `cluster --algo auto` reports them) are
//! optional. Every level is a partition of `0..ranks`,
//! coarsest first. When reading, either `tree` or `levels` may be left out and is derived from
//! the other; when both are given they must agree.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::error::{Location, Problem, TopologyError};
use crate::ranks::Rank;
use crate::tree::{Level, Topology, TopologyNode};

/// The value of the `format` field.
pub const FORMAT_TAG: &str = "lgate-plogp-topology";
/// The version of the document this build writes and reads.
pub const VERSION: u64 = 1;

#[derive(Deserialize)]
struct Document {
    format: String,
    version: u64,
    ranks: usize,
    #[serde(default)]
    labels: Option<Vec<String>>,
    #[serde(default)]
    tree: Option<Node>,
    #[serde(default)]
    levels: Option<Vec<LevelDoc>>,
    #[serde(default)]
    outliers: Vec<OutlierDoc>,
    #[serde(default)]
    confidence: Option<ConfidenceDoc>,
}

#[derive(Deserialize)]
struct ConfidenceDoc {
    resamples: usize,
    same_levels: f64,
    #[serde(default)]
    undecided: Vec<UndecidedDoc>,
}

#[derive(Deserialize)]
struct UndecidedDoc {
    groups: usize,
    share: f64,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    members: Vec<Vec<Rank>>,
    #[serde(default)]
    z: Option<f64>,
}

#[derive(Deserialize)]
struct OutlierDoc {
    rank: Rank,
    slowness: f64,
}

#[derive(Deserialize)]
struct Node {
    #[serde(default)]
    children: Vec<Node>,
    #[serde(default)]
    ranks: Vec<Rank>,
    #[serde(default)]
    height: Option<f64>,
}

#[derive(Deserialize)]
struct LevelDoc {
    name: String,
    groups: Vec<Vec<Rank>>,
    #[serde(default)]
    separation: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
}

/// Parses a topology JSON document; `ranks`, when given, must be its declared rank count.
pub fn parse(text: &str, ranks: Option<usize>) -> Result<Topology, TopologyError> {
    let doc: Document = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        // serde_json appends the position; it goes into the location instead.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        TopologyError::at_text(e.line(), e.column(), Problem::Json(message))
    })?;
    let at = |path: &str, problem| TopologyError::at(Location::Path(path.into()), problem);
    if doc.format != FORMAT_TAG {
        return Err(at("format", Problem::WrongFormatTag(doc.format)));
    }
    if doc.version != VERSION {
        return Err(at("version", Problem::UnsupportedVersion(doc.version)));
    }
    if let Some(expected) = ranks.filter(|&n| n != doc.ranks) {
        let problem = Problem::RankCount {
            declared: doc.ranks,
            expected,
        };
        return Err(at("ranks", problem));
    }
    // Shares are between 0 and 1.
    let share = |path: String, x: f64| {
        if (0.0..=1.0).contains(&x) {
            Ok(())
        } else {
            Err(at(
                &path,
                Problem::Json(format!("{x} is no share (between 0 and 1)")),
            ))
        }
    };
    for (i, level) in doc.levels.iter().flatten().enumerate() {
        if let Some(c) = level.confidence {
            share(format!("levels[{i}].confidence"), c)?;
        }
    }
    if let Some(c) = &doc.confidence {
        share("confidence.same_levels".into(), c.same_levels)?;
        for (i, u) in c.undecided.iter().enumerate() {
            share(format!("confidence.undecided[{i}].share"), u.share)?;
            if u.z.is_some_and(|z| !(z.is_finite() && z >= 0.0)) {
                return Err(at(
                    &format!("confidence.undecided[{i}].z"),
                    Problem::Json("not a number of 0 or more".into()),
                ));
            }
            if let Some(&r) = u.members.iter().flatten().find(|&&r| r >= doc.ranks) {
                return Err(at(
                    &format!("confidence.undecided[{i}].members"),
                    Problem::Json(format!("rank {r} of a job of {} ranks", doc.ranks)),
                ));
            }
        }
    }
    let levels = doc.levels.map(|levels| {
        levels
            .into_iter()
            .map(|l| Level {
                name: l.name,
                groups: l.groups,
                separation: l.separation,
                confidence: l.confidence,
            })
            .collect::<Vec<_>>()
    });
    let topology = match (doc.tree, levels) {
        (Some(tree), levels) => {
            let tree = node_of(tree, "tree")?;
            let topology = Topology::from_tree(tree, Some(doc.ranks))?;
            match levels {
                Some(levels) => topology.with_levels(levels)?,
                None => topology,
            }
        }
        (None, Some(levels)) => Topology::from_levels(doc.ranks, levels)?,
        (None, None) => return Err(at("tree", Problem::NoTree)),
    };
    let topology = topology.with_outliers(
        doc.outliers
            .into_iter()
            .map(|o| crate::tree::Outlier {
                rank: o.rank,
                slowness: o.slowness,
            })
            .collect(),
    )?;
    let topology = topology.with_confidence(doc.confidence.map(|c| {
        crate::tree::Confidence {
            resamples: c.resamples,
            same_levels: c.same_levels,
            undecided: (c.undecided.into_iter())
                .map(|u| crate::tree::UndecidedLevel {
                    groups: u.groups,
                    share: u.share,
                    name: u.name,
                    members: u.members,
                    z: u.z,
                })
                .collect(),
        }
    }));
    match doc.labels {
        Some(labels) => topology.with_labels(labels),
        None => Ok(topology),
    }
}

fn node_of(node: Node, path: &str) -> Result<TopologyNode, TopologyError> {
    match (node.children.is_empty(), node.ranks.is_empty()) {
        (false, false) => Err(TopologyError::at(
            Location::Path(path.into()),
            Problem::MixedNode,
        )),
        (true, _) => Ok(TopologyNode::group(node.ranks).with_height(node.height)),
        (false, true) => {
            let children = node
                .children
                .into_iter()
                .enumerate()
                .map(|(i, child)| node_of(child, &format!("{path}.children[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(TopologyNode::cluster(children).with_height(node.height))
        }
    }
}

/// The topology as a JSON value (the document [`to_string`] writes), for embedding in other
/// JSON files such as a run's meta.json.
pub fn to_value(topology: &Topology) -> serde_json::Value {
    serde_json::from_str(&to_string(topology)).expect("the topology's JSON parses")
}

/// Serde for an optional topology inside another JSON file (a run's meta.json): the document
/// [`to_string`] writes, checked as [`parse`] checks it when read; `{}` for none.
pub mod embedded {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::tree::Topology;

    /// Writes the topology as its document, or `{}`.
    pub fn serialize<S: Serializer>(topology: &Option<Topology>, s: S) -> Result<S::Ok, S::Error> {
        match topology {
            Some(t) => super::to_value(t).serialize(s),
            None => serde_json::Map::new().serialize(s),
        }
    }

    /// Reads a topology document, or `{}` as none.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Topology>, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        if value.as_object().is_some_and(|o| o.is_empty()) {
            return Ok(None);
        }
        super::parse(&value.to_string(), None)
            .map(Some)
            .map_err(D::Error::custom)
    }
}

/// Writes a topology as a JSON document: one line per group and level, ranks kept on one line.
pub fn to_string(topology: &Topology) -> String {
    let mut out = String::new();
    out.push_str("{\n");
    let _ = writeln!(out, "  \"format\": {},", string(FORMAT_TAG));
    let _ = writeln!(out, "  \"version\": {VERSION},");
    let _ = writeln!(out, "  \"ranks\": {},", topology.ranks());
    if let Some(labels) = topology.labels() {
        let labels: Vec<String> = labels.iter().map(|l| string(l)).collect();
        let _ = writeln!(out, "  \"labels\": [{}],", labels.join(", "));
    }
    out.push_str("  \"tree\": ");
    write_node(&mut out, topology.tree(), 1);
    out.push_str(",\n  \"levels\": [");
    for (i, level) in topology.levels().iter().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        let _ = write!(out, "{{\"name\": {}, \"groups\": [", string(&level.name));
        for (k, group) in level.groups.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            write_ranks(&mut out, group);
        }
        out.push(']');
        if let Some(s) = level.separation {
            let _ = write!(out, ", \"separation\": {}", number(s));
        }
        if let Some(c) = level.confidence {
            let _ = write!(out, ", \"confidence\": {}", number(c));
        }
        out.push('}');
    }
    if !topology.levels().is_empty() {
        out.push_str("\n  ");
    }
    out.push(']');
    if !topology.outliers().is_empty() {
        let list: Vec<String> = topology
            .outliers()
            .iter()
            .map(|o| {
                format!(
                    "{{\"rank\": {}, \"slowness\": {}}}",
                    o.rank,
                    number((o.slowness * 1000.0).round() / 1000.0)
                )
            })
            .collect();
        let _ = write!(out, ",\n  \"outliers\": [{}]", list.join(", "));
    }
    if let Some(c) = topology.confidence() {
        let undecided: Vec<String> = (c.undecided.iter())
            .map(|u| {
                let name = (u.name.as_deref())
                    .map_or(String::new(), |n| format!("\"name\": {}, ", string(n)));
                let members = if u.members.is_empty() {
                    String::new()
                } else {
                    let groups: Vec<String> = (u.members.iter())
                        .map(|g| {
                            let ranks: Vec<String> = g.iter().map(|r| r.to_string()).collect();
                            format!("[{}]", ranks.join(", "))
                        })
                        .collect();
                    format!(", \"members\": [{}]", groups.join(", "))
                };
                let z =
                    u.z.map_or(String::new(), |z| format!(", \"z\": {}", number(z)));
                format!(
                    "{{{name}\"groups\": {}, \"share\": {}{members}{z}}}",
                    u.groups,
                    number(u.share)
                )
            })
            .collect();
        let _ = write!(
            out,
            ",\n  \"confidence\": {{\"resamples\": {}, \"same_levels\": {}, \"undecided\": [{}]}}",
            c.resamples,
            number(c.same_levels),
            undecided.join(", ")
        );
    }
    out.push_str("\n}\n");
    out
}

fn write_node(out: &mut String, node: &TopologyNode, depth: usize) {
    let height = node
        .height()
        .map(|h| format!(", \"height\": {}", number(h)))
        .unwrap_or_default();
    match node {
        TopologyNode::Group { ranks: r, .. } => {
            out.push_str("{\"children\": [], \"ranks\": ");
            write_ranks(out, r);
            let _ = write!(out, "{height}}}");
        }
        TopologyNode::Cluster { children, .. } => {
            let inner = "  ".repeat(depth + 1);
            let _ = write!(out, "{{\n{inner}\"children\": [");
            for (i, child) in children.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                out.push_str(&"  ".repeat(depth + 2));
                write_node(out, child, depth + 2);
            }
            let _ = write!(out, "\n{inner}],\n{inner}\"ranks\": []{height}\n");
            out.push_str(&"  ".repeat(depth));
            out.push('}');
        }
    }
}

/// Writes ranks as a JSON array; without a string a rank (a level of 16 000 singletons took
/// a fifth of a JSON round trip that way).
fn write_ranks(out: &mut String, ranks: &[Rank]) {
    out.push('[');
    for (k, r) in ranks.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{r}");
    }
    out.push(']');
}

fn string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn number(x: f64) -> String {
    // Finite by validation; serde_json writes the shortest text that reads back exactly.
    serde_json::Value::from(x).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> &'static str {
        r#"{
  "format": "lgate-plogp-topology",
  "version": 1,
  "ranks": 8,
  "labels": ["c48-8", "c48-8", "c48-8", "c48-8", "c48-9", "c48-9", "c48-9", "c48-9"],
  "tree": {"children": [{"children": [{"children": [], "ranks": [0, 1]}, {"children": [], "ranks": [2, 3]}], "ranks": []},
                        {"children": [{"children": [], "ranks": [4, 5]}, {"children": [], "ranks": [6, 7]}], "ranks": []}],
           "ranks": [], "height": 1.9},
  "levels": [
    {"name": "node", "groups": [[0, 1, 2, 3], [4, 5, 6, 7]], "separation": 3.2},
    {"name": "socket", "groups": [[0, 1], [2, 3], [4, 5], [6, 7]], "separation": 1.8}
  ]
}"#
    }

    #[test]
    fn reads_the_documented_example_and_writes_it_back() {
        let t = parse(example(), None).unwrap();
        assert_eq!(t.ranks(), 8);
        assert_eq!(t.levels()[0].name, "node");
        assert_eq!(t.levels()[1].separation, Some(1.8));
        assert_eq!(t.tree().height(), Some(1.9));
        assert_eq!(t.labels().unwrap()[4], "c48-9");
        let again = parse(&to_string(&t), None).unwrap();
        assert_eq!(again, t);
        let value: serde_json::Value = serde_json::from_str(&to_string(&t)).unwrap();
        assert_eq!(value["levels"][1]["groups"][3], serde_json::json!([6, 7]));
    }

    #[test]
    fn confidence_is_written_and_read_back() {
        let t = parse(example(), None).unwrap();
        let mut levels = t.levels().to_vec();
        levels[0].confidence = Some(1.0);
        levels[1].confidence = Some(0.85);
        let confidence = crate::tree::Confidence {
            resamples: 20,
            same_levels: 0.85,
            undecided: vec![crate::tree::UndecidedLevel {
                groups: 3,
                share: 0.25,
                name: Some("leaf".into()),
                members: vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7]],
                z: None,
            }],
        };
        let t = t
            .with_levels(levels)
            .unwrap()
            .with_confidence(Some(confidence.clone()));
        let text = to_string(&t);
        assert!(text.contains("\"confidence\": 0.85"), "{text}");
        let back = parse(&text, None).unwrap();
        assert_eq!(back.levels()[1].confidence, Some(0.85));
        assert_eq!(back.confidence(), Some(&confidence));
        assert_eq!(to_string(&back), text);
    }

    #[test]
    fn outliers_are_written_and_read_back() {
        let slow = vec![
            crate::tree::Outlier {
                rank: 5,
                slowness: 1.4,
            },
            crate::tree::Outlier {
                rank: 4,
                slowness: 1.38,
            },
        ];
        let t = parse(example(), None).unwrap().with_outliers(slow).unwrap();
        assert_eq!(t.outliers()[0].rank, 4, "in rank order");
        let text = to_string(&t);
        assert!(
            text.contains(
                r#""outliers": [{"rank": 4, "slowness": 1.38}, {"rank": 5, "slowness": 1.4}]"#
            ),
            "{text}"
        );
        assert_eq!(parse(&text, None).unwrap(), t);
        let bad = text.replace(r#""rank": 5"#, r#""rank": 8"#);
        let err = parse(&bad, None).unwrap_err();
        assert_eq!(err.location().unwrap().to_string(), "outliers");
        assert!(err.to_string().contains("outlier rank 8"), "{err}");
    }

    #[test]
    fn rank_counts_past_the_limit_are_refused_before_allocating() {
        for ranks in ["18446744073709551615", "1099511627776", "1000000000"] {
            let text = format!(
                r#"{{"format": "lgate-plogp-topology", "version": 1, "ranks": {ranks},
                    "levels": [{{"name": "node", "groups": [[0, 1]]}}]}}"#
            );
            let e = parse(&text, None).unwrap_err();
            assert!(
                matches!(e.problem(), Some(Problem::TooManyRanks { .. })),
                "{ranks}: {e}"
            );
        }
        // Within the rank limit, but too many levels of singletons for it.
        let levels: Vec<String> = (0..3)
            .map(|k| {
                format!(
                    r#"{{"name": "l{k}", "groups": [[{}]]}}"#,
                    (0..4 >> k)
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            })
            .collect();
        let text = format!(
            r#"{{"format": "lgate-plogp-topology", "version": 1, "ranks": 1048576, "levels": [{}]}}"#,
            levels.join(",")
        );
        let e = parse(&text, None).unwrap_err();
        assert!(
            matches!(e.problem(), Some(Problem::TooLarge { levels: 3, .. })),
            "{e}"
        );
    }

    #[test]
    fn levels_alone_give_the_tree() {
        let text = r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 4,
                       "levels": [{"name": "node", "groups": [[0, 1], [2, 3]]}]}"#;
        let t = parse(text, None).unwrap();
        assert_eq!(t.tree().groups(), vec![&[0, 1][..], &[2, 3][..]]);
    }

    fn problem(text: &str) -> (Problem, String) {
        let err = parse(text, None).unwrap_err();
        (
            err.problem().cloned().unwrap(),
            err.location().unwrap().to_string(),
        )
    }

    #[test]
    fn malformed_documents() {
        let head = r#""format": "lgate-plogp-topology", "version": 1"#;
        let (p, at) = problem("{\n  \"format\": \"lgate-plogp-topology\",\n  \"version\": 1,\n  \"ranks\": 4,\n  \"tree\": {\"ranks\": [0, 1,]}\n}");
        assert!(matches!(p, Problem::Json(_)), "{p:?}");
        assert_eq!(at, "5:27", "the stray `]`");
        assert_eq!(
            problem(r#"{"format": "other", "version": 1, "ranks": 1}"#).0,
            Problem::WrongFormatTag("other".into())
        );
        assert_eq!(
            problem(r#"{"format": "lgate-plogp-topology", "version": 2, "ranks": 1}"#).0,
            Problem::UnsupportedVersion(2)
        );
        let (p, at) = problem(&format!(
            r#"{{{head}, "ranks": 2, "tree": {{"children": [{{"ranks": [0]}}], "ranks": [1]}}}}"#
        ));
        assert_eq!((p, at.as_str()), (Problem::MixedNode, "tree"));
        assert_eq!(
            problem(&format!(r#"{{{head}, "ranks": 2}}"#)).0,
            Problem::NoTree
        );
        assert_eq!(
            problem(&format!(
                r#"{{{head}, "ranks": 2, "labels": ["a"], "tree": {{"ranks": [0, 1]}}}}"#
            ))
            .0,
            Problem::LabelCount {
                labels: 1,
                ranks: 2
            }
        );
        let (p, at) = problem(&format!(
            r#"{{{head}, "ranks": 2, "tree": {{"children": [{{"ranks": [0, 2]}}]}}}}"#
        ));
        assert_eq!(p, Problem::RankOutOfRange { rank: 2, ranks: 2 });
        assert_eq!(at, "tree.children[0].ranks[1]");
        let (p, _) = problem(&format!(
            r#"{{{head}, "ranks": 4, "tree": {{"children": [{{"ranks": [0, 1]}}, {{"ranks": [2, 3]}}]}},
                "levels": [{{"name": "x", "groups": [[0, 2], [1, 3]]}}]}}"#
        ));
        assert!(matches!(p, Problem::LevelsDisagree(_)));
        let e = parse(
            &format!(r#"{{{head}, "ranks": 3, "tree": {{"ranks": [0]}}}}"#),
            Some(4),
        );
        assert_eq!(
            e.unwrap_err().problem(),
            Some(&Problem::RankCount {
                declared: 3,
                expected: 4
            })
        );
        let (p, _) = problem(&format!(r#"{{{head}, "ranks": "four"}}"#));
        assert!(
            matches!(p, Problem::Json(ref m) if m.contains("invalid type")),
            "{p:?}"
        );
    }

    #[test]
    fn an_embedded_topology_is_read_back_as_written_and_an_empty_object_is_none() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct Holder {
            #[serde(with = "super::embedded")]
            topology: Option<Topology>,
        }
        let t = parse(
            r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 4,
                "labels": ["a", "a", "b", "b"],
                "levels": [{"name": "node", "groups": [[0, 1], [2, 3]]}]}"#,
            None,
        )
        .unwrap();
        let text = serde_json::to_string(&Holder {
            topology: Some(t.clone()),
        })
        .unwrap();
        let back: Holder = serde_json::from_str(&text).unwrap();
        assert_eq!(back.topology, Some(t));
        let none = serde_json::to_string(&Holder { topology: None }).unwrap();
        assert_eq!(none, r#"{"topology":{}}"#);
        assert_eq!(
            serde_json::from_str::<Holder>(&none).unwrap().topology,
            None
        );
        // A document that does not hold together is an error, not a topology.
        let bad = r#"{"topology": {"format": "lgate-plogp-topology", "version": 1, "ranks": 2,
            "levels": [{"name": "node", "groups": [[0, 1], [1]]}]}}"#;
        assert!(serde_json::from_str::<Holder>(bad).is_err());
    }
}
