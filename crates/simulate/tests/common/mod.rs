//! What the simulation tests share: how `auto` did on a simulated run against its truth.

use std::path::Path;

use lgate_cluster::{adjusted_rand_index, auto, topology_of, AutoParams};

/// The levels `auto` finds in the run's default matrix, coarsest first: a label per rank each.
fn found_levels(run: &Path) -> Vec<Vec<usize>> {
    let input = lgate_cluster::load(run, None).unwrap();
    let n = input.matrix.len();
    let tree = auto(input.matrix.values(), &AutoParams::default());
    topology_of(&tree, n, None)
        .unwrap()
        .levels()
        .iter()
        .map(|l| l.labels(n))
        .collect()
}

/// What `auto` got wrong on the run's default matrix, if anything: a true level (more than one
/// group, fewer groups than ranks) not recovered exactly (ARI 1), or more or fewer levels than
/// the machine has.
pub fn recovery_error(run: &Path, what: &str) -> Option<String> {
    let found = found_levels(run);
    let truth: Vec<(String, Vec<usize>)> = lgate_cluster::read_truth(run)
        .unwrap()
        .levels
        .into_iter()
        .filter(|(_, labels)| {
            let groups = labels.iter().max().map_or(0, |&m| m + 1);
            groups > 1 && groups < labels.len()
        })
        .collect();
    for (name, labels) in &truth {
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

/// What `auto` got wrong on the run's default matrix against one `expected` level, if
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
