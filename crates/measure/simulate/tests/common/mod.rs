//! What the simulation tests share: how `auto` did on a simulated run against its truth.

use std::path::Path;

use lgate_cluster::{adjusted_rand_index, auto, topology_of, AutoParams};

/// The levels `auto` finds in the run as `cluster` reads it (each screening size tried, the
/// one showing the most levels kept), coarsest first: a label per rank each.
fn found_levels(run: &Path) -> Vec<Vec<usize>> {
    let inputs = lgate_cluster::load_candidates(run).unwrap();
    let (input, tree, _) =
        lgate_cluster::choose_by_levels::<lgate_cluster::InputError>(inputs, |input| {
            Ok(auto(
                input.dense().unwrap().values(),
                &AutoParams::default(),
            ))
        })
        .unwrap();
    let n = input.items();
    topology_of(&tree, n, None)
        .unwrap()
        .levels()
        .iter()
        .map(|l| l.labels(n))
        .collect()
}

/// What `auto` got wrong on the run, if anything: a true level (more than one
/// group, fewer groups than ranks) not recovered exactly (ARI 1), or more or fewer levels than
/// the machine has.
pub fn recovery_error(run: &Path, what: &str) -> Option<String> {
    let truth: Vec<(String, Vec<usize>)> = lgate_cluster::read_truth(run)
        .unwrap()
        .levels
        .into_iter()
        .filter(|(_, labels)| {
            let groups = labels.iter().max().map_or(0, |&m| m + 1);
            groups > 1 && groups < labels.len()
        })
        .map(|(name, labels)| (name, without_slow_pairs(run, labels)))
        .collect();
    levels_error(run, &truth, what)
}

/// What `auto` got wrong on the run against the `expected` levels (name,
/// label per rank), if anything: one not recovered exactly, or more or fewer levels.
pub fn levels_error(run: &Path, truth: &[(String, Vec<usize>)], what: &str) -> Option<String> {
    let found = found_levels(run);
    for (name, labels) in truth {
        let best = found
            .iter()
            .map(|f| adjusted_rand_index(labels, f))
            .fold(0.0, f64::max);
        if best < 1.0 {
            return Some(format!("{what}: true level {name} best ARI {best:.3}"));
        }
    }
    (found.len() != truth.len()).then(|| {
        format!(
            "{what}: {} levels found, the machine has {} ({:?})",
            found.len(),
            truth.len(),
            truth.iter().map(|t| &t.0).collect::<Vec<_>>()
        )
    })
}

/// `labels` with every rank all of whose pairs with its group's other ranks were slowed
/// (meta.json's `simulation.slow_pairs`, and ranks 0 and 1 when the slow first pair is on)
/// made a singleton, where each such pair was measured farther apart than the rank is from a
/// rank of another group: no measurement then says the rank belongs to its group (a group of
/// two whose pair was slowed, the third core of a CCD slowed towards both others).
pub fn without_slow_pairs(run: &Path, mut labels: Vec<usize>) -> Vec<usize> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    let simulation = &meta["simulation"];
    let mut slow: Vec<(usize, usize)> = simulation["slow_pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let (a, b) = (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            );
            (a.min(b), a.max(b))
        })
        .collect();
    if simulation["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "first-pair")
    {
        slow.push((0, 1));
    }
    let input = lgate_cluster::load(run, None).unwrap();
    let d = input.dense().unwrap().values();
    let original = labels.clone();
    let n = labels.len();
    let mut fresh = labels.iter().max().map_or(0, |&m| m + 1);
    for r in 0..n {
        let mates: Vec<usize> = (0..n)
            .filter(|&k| k != r && original[k] == original[r])
            .collect();
        let nearest_outside = (0..n)
            .filter(|&k| original[k] != original[r])
            .map(|k| d[[r, k]])
            .fold(f64::INFINITY, f64::min);
        let cut_off = !mates.is_empty()
            && mates
                .iter()
                .all(|&k| slow.contains(&(r.min(k), r.max(k))) && d[[r, k]] > nearest_outside);
        if cut_off {
            labels[r] = fresh;
            fresh += 1;
        }
    }
    labels
}

/// What `auto` got wrong on the run against one `expected` level, if
/// anything: more or fewer levels than one, or that level not found exactly.
#[allow(dead_code)]
pub fn level_error(run: &Path, expected: &[usize], what: &str) -> Option<String> {
    let found = found_levels(run);
    match found.as_slice() {
        [one] => {
            let ari = adjusted_rand_index(expected, one);
            (ari < 1.0).then(|| format!("{what}: ARI {ari:.3}, found {one:?}"))
        }
        _ => Some(format!("{what}: {} levels found, not 1", found.len())),
    }
}
