//! The topology change: each level `cluster` finds in run A against the same level in run B
//! over the matched ranks (adjusted Rand index, groups split or merged, ranks that moved).

use std::collections::{BTreeMap, BTreeSet};

use lgate_topology::Topology;

/// Ranks listed in full at most.
const LISTED: usize = 100;

/// One level compared.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelChange {
    /// The level's name (A's, or B's for a level only B has).
    pub name: String,
    /// Groups in A and in B (`None` where the run lacks the level).
    pub groups: (Option<usize>, Option<usize>),
    /// The adjusted Rand index of the two partitions of the matched ranks (`None` for a level
    /// one run lacks).
    pub ari: Option<f64>,
    /// Groups of A whose ranks went to more than one group of B.
    pub split: usize,
    /// Groups of B that hold ranks of more than one group of A.
    pub merged: usize,
    /// Ranks of A (matched) not in the B group most of their A group went to.
    pub moved: Vec<usize>,
}

impl LevelChange {
    /// Whether the level differs between the runs.
    pub fn changed(&self) -> bool {
        self.ari.is_none_or(|x| x < 1.0 - 1e-12)
    }

    /// The level as JSON.
    pub fn to_json(&self) -> crate::json::LevelJson {
        crate::json::LevelJson {
            ari: self.ari,
            changed: self.changed(),
            groups_a: self.groups.0,
            groups_b: self.groups.1,
            level: self.name.clone(),
            merged: self.merged,
            moved: self.moved.iter().take(LISTED).copied().collect(),
            moved_count: self.moved.len(),
            split: self.split,
        }
    }

    /// One line for people.
    pub fn line(&self) -> String {
        match (self.groups, self.ari) {
            ((Some(a), None), _) => format!("level {}: {a} groups in A, gone in B", self.name),
            ((None, Some(b)), _) => format!("level {}: new in B, {b} groups", self.name),
            ((Some(a), Some(b)), Some(ari)) if self.changed() => format!(
                "level {}: {a} groups in A, {b} in B (ARI {ari:.3}): {} split, {} merged, {} \
                 rank(s) moved{}",
                self.name,
                self.split,
                self.merged,
                self.moved.len(),
                list_ranks(&self.moved)
            ),
            ((Some(a), _), _) => format!("level {}: the same {a} groups", self.name),
            _ => format!("level {}", self.name),
        }
    }
}

/// ` (1, 2, 3, ...)` for up to eight ranks.
fn list_ranks(ranks: &[usize]) -> String {
    if ranks.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = ranks.iter().take(8).map(|r| r.to_string()).collect();
    let more = if ranks.len() > 8 { ", ..." } else { "" };
    format!(" ({}{more})", shown.join(", "))
}

fn compare_level(
    name: &str,
    a: &lgate_topology::Level,
    b: &lgate_topology::Level,
    sizes: (usize, usize),
    matched: &[(usize, usize)],
) -> LevelChange {
    let ra: Vec<usize> = matched.iter().map(|p| p.0).collect();
    let rb: Vec<usize> = matched.iter().map(|p| p.1).collect();
    // Ranks a level leaves out are groups of their own.
    let (la, lb) = (a.labels_of(&ra, sizes.0), b.labels_of(&rb, sizes.1));
    let ari = lgate_cluster::adjusted_rand_index(&la, &lb);
    let mut a_to_b: BTreeMap<usize, BTreeMap<usize, usize>> = BTreeMap::new();
    let mut b_to_a: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (&x, &y) in la.iter().zip(&lb) {
        *a_to_b.entry(x).or_default().entry(y).or_insert(0) += 1;
        b_to_a.entry(y).or_default().insert(x);
    }
    let split = a_to_b.values().filter(|m| m.len() > 1).count();
    let merged = b_to_a.values().filter(|s| s.len() > 1).count();
    let majority: BTreeMap<usize, usize> = a_to_b
        .iter()
        .map(|(&g, m)| {
            let (&y, _) = m
                .iter()
                .max_by_key(|&(&y, &c)| (c, std::cmp::Reverse(y)))
                .expect("a group has ranks");
            (g, y)
        })
        .collect();
    let moved = la
        .iter()
        .zip(&lb)
        .zip(&ra)
        .filter(|((x, y), _)| majority[x] != **y)
        .map(|(_, &r)| r)
        .collect();
    LevelChange {
        name: name.to_string(),
        groups: (Some(a.groups.len()), Some(b.groups.len())),
        ari: Some(ari),
        split,
        merged,
        moved,
    }
}

/// Compares the levels of two topologies over the matched ranks ((rank in A, rank in B)):
/// levels are paired by name where both have it, the rest in order from the top.
pub fn compare_topologies(
    a: &Topology,
    b: &Topology,
    matched: &[(usize, usize)],
) -> Vec<LevelChange> {
    let (la, lb) = (a.levels(), b.levels());
    let sizes = (a.ranks(), b.ranks());
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let mut used_b = BTreeSet::new();
    let mut unpaired_a = Vec::new();
    for (i, l) in la.iter().enumerate() {
        match lb.iter().position(|m| m.name == l.name) {
            Some(j) if !used_b.contains(&j) => {
                used_b.insert(j);
                pairs.push((Some(i), Some(j)));
            }
            _ => unpaired_a.push(i),
        }
    }
    let mut free_b = (0..lb.len()).filter(|j| !used_b.contains(j));
    for i in unpaired_a {
        pairs.push((Some(i), free_b.next()));
    }
    for j in free_b {
        pairs.push((None, Some(j)));
    }
    pairs.sort_by_key(|&(i, j)| (i.unwrap_or(usize::MAX), j));
    pairs
        .into_iter()
        .map(|p| match p {
            (Some(i), Some(j)) => compare_level(&la[i].name, &la[i], &lb[j], sizes, matched),
            (Some(i), None) => LevelChange {
                name: la[i].name.clone(),
                groups: (Some(la[i].groups.len()), None),
                ari: None,
                split: 0,
                merged: 0,
                moved: Vec::new(),
            },
            (None, Some(j)) => LevelChange {
                name: lb[j].name.clone(),
                groups: (None, Some(lb[j].groups.len())),
                ari: None,
                split: 0,
                merged: 0,
                moved: Vec::new(),
            },
            (None, None) => unreachable!("a pair has a level"),
        })
        .collect()
}
