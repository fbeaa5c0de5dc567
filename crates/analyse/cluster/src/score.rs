//! How well a found partition matches a known one.

use std::collections::HashMap;

/// Counts of the pairs (a label, b label).
fn contingency(a: &[usize], b: &[usize]) -> HashMap<(usize, usize), usize> {
    let mut c = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *c.entry((x, y)).or_insert(0) += 1;
    }
    c
}

fn pairs(n: usize) -> f64 {
    (n * n.saturating_sub(1)) as f64 / 2.0
}

/// The adjusted Rand index of two labelings of the same items: 1 when they are the same
/// partition, about 0 for unrelated ones. Two labelings that each put everything in one group
/// (or everything apart) agree and score 1.
pub fn adjusted_rand_index(a: &[usize], b: &[usize]) -> f64 {
    assert_eq!(a.len(), b.len(), "labelings of the same items");
    let n = a.len();
    let c = contingency(a, b);
    let mut rows: HashMap<usize, usize> = HashMap::new();
    let mut cols: HashMap<usize, usize> = HashMap::new();
    for (&(x, y), &k) in &c {
        *rows.entry(x).or_insert(0) += k;
        *cols.entry(y).or_insert(0) += k;
    }
    let index: f64 = c.values().map(|&k| pairs(k)).sum();
    let sum_a: f64 = rows.values().map(|&k| pairs(k)).sum();
    let sum_b: f64 = cols.values().map(|&k| pairs(k)).sum();
    let expected = sum_a * sum_b / pairs(n).max(1.0);
    let max = (sum_a + sum_b) / 2.0;
    if (max - expected).abs() < 1e-12 {
        return if (index - expected).abs() < 1e-12 {
            1.0
        } else {
            0.0
        };
    }
    (index - expected) / (max - expected)
}

/// The thesis's accuracy (equations 3.7-3.9): the share of ranks mapped to the correct group.
/// Found groups are matched one to one with true groups, largest overlaps first; a rank is
/// correct when its found group is matched with its true group.
pub fn accuracy(truth: &[usize], found: &[usize]) -> f64 {
    assert_eq!(truth.len(), found.len(), "labelings of the same items");
    if truth.is_empty() {
        return 1.0;
    }
    let mut overlaps: Vec<((usize, usize), usize)> =
        contingency(found, truth).into_iter().collect();
    overlaps.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut used_found, mut used_true) = (HashMap::new(), HashMap::new());
    let mut correct = 0;
    for ((f, t), k) in overlaps {
        if used_found.contains_key(&f) || used_true.contains_key(&t) {
            continue;
        }
        used_found.insert(f, ());
        used_true.insert(t, ());
        correct += k;
    }
    correct as f64 / truth.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ari_of_known_cases() {
        assert_eq!(adjusted_rand_index(&[0, 0, 1, 1], &[5, 5, 3, 3]), 1.0);
        assert!(adjusted_rand_index(&[0, 0, 1, 1], &[0, 1, 0, 1]) < 0.0);
        assert_eq!(adjusted_rand_index(&[0, 0, 0], &[1, 1, 1]), 1.0);
        // sklearn: adjusted_rand_score([0,0,0,1,1,1],[0,0,1,1,2,2]) = 0.24242424...
        let x = adjusted_rand_index(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 2, 2]);
        assert!((x - 0.242424242424).abs() < 1e-9, "{x}");
    }

    #[test]
    fn accuracy_matches_groups_one_to_one() {
        assert_eq!(accuracy(&[0, 0, 1, 1], &[1, 1, 0, 0]), 1.0);
        assert_eq!(accuracy(&[0, 0, 1, 1], &[0, 0, 0, 0]), 0.5);
        assert_eq!(accuracy(&[0, 0, 1, 1], &[0, 1, 2, 3]), 0.5);
        assert_eq!(accuracy(&[0, 0, 0, 1], &[0, 0, 1, 1]), 0.75);
    }

    #[test]
    fn a_level_missed_by_a_topology_of_one_group_is_matched_by_the_group() {
        // Both candidates score ARI 0: the one group the topology is, not one rank each.
        let truth = lgate_rundir::KnownPlacement {
            levels: vec![("node".into(), vec![0, 0, 1, 1])],
            shared_cpus: None,
            same_cpus: None,
        };
        let one = lgate_topology::Topology::from_levels(4, Vec::new()).unwrap();
        let rows = score_levels(&truth, &one).unwrap();
        assert_eq!(rows[0].best_match, "(one group)", "{rows:?}");
        assert_eq!(rows[0].ari, 0.0);
    }
}

/// How one known level is matched by a topology.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelScore {
    /// The known level's name (`node`, `socket`, ...).
    pub level: String,
    /// Its number of groups.
    pub groups: usize,
    /// The topology's level that matches it best, `(one group)` or `(one rank each)`.
    pub best_match: String,
    /// The adjusted Rand index of that match.
    pub ari: f64,
    /// The share of ranks that match placed as the known level does.
    pub accuracy: f64,
}

/// An error of scoring a topology.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    /// The topology and the known placement are of different jobs.
    #[error("the topology has {found} ranks, the truth {truth}")]
    RankCount {
        /// Ranks of the topology.
        found: usize,
        /// Ranks of the known placement.
        truth: usize,
    },
    /// The topology cannot be read over the truth's ranks.
    #[error(transparent)]
    Topology(#[from] lgate_topology::TopologyError),
}

/// Scores each known level against the best-matching level of `topology` (its levels over the
/// truth's ranks, plus one group of all and one group per rank), keeping the file's level names.
pub fn score_levels(
    truth: &lgate_rundir::KnownPlacement,
    topology: &lgate_topology::Topology,
) -> Result<Vec<LevelScore>, ScoreError> {
    use lgate_topology::Topology;
    let n = truth.levels.first().map_or(topology.ranks(), |l| l.1.len());
    if truth.levels.iter().any(|l| l.1.len() != n) || topology.ranks() > n {
        return Err(ScoreError::RankCount {
            found: topology.ranks(),
            truth: n,
        });
    }
    // Over the truth's ranks, keeping the file's level names where the levels are the same.
    let named = topology.levels().to_vec();
    let topology = Topology::from_tree(topology.tree().clone(), Some(n))?;
    let levels: Vec<_> = topology
        .levels()
        .iter()
        .map(|l| {
            let mut l = l.clone();
            if let Some(same) = named.iter().find(|m| m.groups == l.groups) {
                l.name = same.name.clone();
            }
            l
        })
        .collect();
    let topology = topology.with_levels(levels)?;
    let mut found: Vec<(String, Vec<usize>)> = topology
        .levels()
        .iter()
        .map(|l| (l.name.clone(), l.labels(n)))
        .collect();
    found.push(("(one group)".into(), vec![0; n]));
    // A level of one rank per group (cores, when each rank has its own) is matched by the
    // leaves themselves.
    found.push(("(one rank each)".into(), (0..n).collect()));
    let mut rows = Vec::new();
    for (name, labels) in &truth.levels {
        // Of equal scores the first: a level found, then one group, then one rank each (a
        // true level of 2 groups of 2 against a topology of one group is matched by the group).
        let (best, ari) = found
            .iter()
            .map(|(f, l)| (f, l, adjusted_rand_index(labels, l)))
            .rev()
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(f, l, ari)| ((f, l), ari))
            .expect("one level at least");
        rows.push(LevelScore {
            level: name.clone(),
            groups: labels.iter().max().map_or(0, |&m| m + 1),
            best_match: best.0.clone(),
            ari,
            accuracy: accuracy(labels, best.1),
        });
    }
    Ok(rows)
}

/// One known level's score as `score` writes it in JSON (the keys in their written order).
#[derive(serde::Serialize)]
struct ScoreRecord<'a> {
    accuracy: f64,
    ari: f64,
    best_match: &'a str,
    groups: usize,
    level: &'a str,
}

/// The scores as pretty JSON, one object per known level.
pub fn scores_json(rows: &[LevelScore]) -> serde_json::Result<String> {
    let records: Vec<ScoreRecord<'_>> = (rows.iter())
        .map(|r| ScoreRecord {
            accuracy: r.accuracy,
            ari: r.ari,
            best_match: &r.best_match,
            groups: r.groups,
            level: &r.level,
        })
        .collect();
    serde_json::to_string_pretty(&records)
}

/// The scores as a table for people.
pub fn scores_table(rows: &[LevelScore]) -> String {
    use std::fmt::Write as _;
    let mut t = format!(
        "{:<24} {:>7}  {:<14} {:>6} {:>9}\n",
        "true level", "groups", "best match", "ARI", "accuracy"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "{:<24} {:>7}  {:<14} {:>6.3} {:>8.1}%",
            r.level,
            r.groups,
            r.best_match,
            r.ari,
            100.0 * r.accuracy
        );
    }
    t
}

/// Names each level of `topology` after the known level (node, socket, core, ...) whose groups
/// it has exactly.
pub fn name_levels(
    topology: lgate_topology::Topology,
    truth: &lgate_rundir::KnownPlacement,
) -> Result<lgate_topology::Topology, lgate_topology::TopologyError> {
    let n = topology.ranks();
    let mut levels = topology.levels().to_vec();
    for level in &mut levels {
        let found = level.labels(n);
        if let Some((name, _)) = truth
            .levels
            .iter()
            .find(|(_, t)| t.len() == n && adjusted_rand_index(t, &found) >= 1.0 - 1e-12)
        {
            level.name = name.clone();
        }
    }
    topology.with_levels(levels)
}
