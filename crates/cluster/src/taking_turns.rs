//! Ranks bound to the very same CPUs take turns on them: each waits while the other runs, so
//! their pairs measure slower than the host's other pairs, the opposite of every other level.
//! Clustering by distance cannot find them (two ranks far apart are grouped with neither), so
//! where the run recorded such binding and every one of those pairs measures clearly slower
//! than the host's others, they are added as the finest level, named from the placement.

use lgate_topology::{Level, Topology, TopologyError};

use crate::input::ClusterInput;

/// How clearly slower the pairs taking turns must be: their lowest tenth at least this many
/// times the highest tenth of the other pairs of their hosts.
pub const TAKING_TURNS_RATIO: f64 = 1.5;

/// A level of ranks taking turns on their CPUs, as found.
#[derive(Debug, Clone, PartialEq)]
pub struct TakingTurns {
    /// The level's name (from the placement, such as `core`).
    pub name: String,
    /// Its groups.
    pub groups: usize,
    /// The lowest tenth of the pairs taking turns over the highest tenth of their hosts'
    /// other pairs.
    pub ratio: f64,
}

/// `topology` (a clustering of `input`) with the ranks taking turns on their CPUs as its finest
/// level, when the run bound ranks to the same CPUs, every level of `topology` keeps each such
/// group whole, and the matrix shows them taking turns ([`TAKING_TURNS_RATIO`]); else as it was.
pub fn add_level(
    input: &ClusterInput,
    topology: Topology,
) -> Result<(Topology, Option<TakingTurns>), TopologyError> {
    let Some((groups, ratio)) = groups_taking_turns(input) else {
        return Ok((topology, None));
    };
    let n = topology.ranks();
    let nested = (topology.levels().iter()).all(|level| {
        let labels = level.labels(n);
        (groups.iter()).all(|g| g.iter().all(|&r| labels.get(r) == labels.get(g[0])))
    });
    if !nested || groups.iter().any(|g| g.iter().any(|&r| r >= n)) {
        return Ok((topology, None));
    }
    // Found already by distance (where sharing a CPU made pairs nearer, as on some guests).
    let mut wanted: Vec<Vec<usize>> = groups.iter().map(|g| sorted(g)).collect();
    wanted.sort();
    let same_groups = |level: &Level| {
        let mut have: Vec<Vec<usize>> = level.groups.iter().map(|g| sorted(g)).collect();
        have.retain(|g| g.len() > 1 || wanted.iter().any(|w| w == g));
        have.sort();
        have == wanted
    };
    if topology.levels().iter().any(same_groups) {
        return Ok((topology, None));
    }
    let mut levels = topology.levels().to_vec();
    levels.push(Level {
        name: "taking turns".into(),
        groups: groups.clone(),
        separation: Some(ratio),
        confidence: None,
    });
    let mut topology = topology.keeping_levels(levels)?;
    if let Some(placement) = &input.placement {
        topology = crate::score::name_levels(topology, placement)?;
    }
    let name = (topology.levels().last()).map_or_else(String::new, |l| l.name.clone());
    let turns = TakingTurns {
        name,
        groups: groups.len(),
        ratio,
    };
    Ok((topology, Some(turns)))
}

fn sorted(group: &[usize]) -> Vec<usize> {
    let mut g = group.to_vec();
    g.sort_unstable();
    g
}

/// The groups of ranks bound to the same CPUs (every rank of the matrix in one, most of one
/// rank) and how clearly slower their pairs measure, when there are such ranks and their pairs
/// are slower by [`TAKING_TURNS_RATIO`].
fn groups_taking_turns(input: &ClusterInput) -> Option<(Vec<Vec<usize>>, f64)> {
    let placement = input.placement.as_ref()?;
    let same = placement.same_cpus.as_deref()?;
    let matrix = input.dense()?;
    let d = matrix.values();
    let ranks = &input.ranks;
    let label = |item: usize| same.get(ranks[item]).copied();
    let node = (placement.levels.iter()).find(|(name, _)| name == "node");
    let host = |item: usize| node.and_then(|(_, labels)| labels.get(ranks[item]).copied());
    let items = ranks.len().min(d.nrows());
    let (mut inside, mut between) = (Vec::new(), Vec::new());
    for i in 0..items {
        for j in 0..i {
            if label(i).is_none() || label(j).is_none() || host(i) != host(j) {
                continue;
            }
            if label(i) == label(j) {
                inside.push(d[[i, j]]);
            } else {
                between.push(d[[i, j]]);
            }
        }
    }
    if inside.is_empty() || between.is_empty() {
        return None;
    }
    let ratio = lgate_stats::quantile(&mut inside, 0.1) / lgate_stats::quantile(&mut between, 0.9);
    // A NaN ratio (no spread to divide by) is no evidence either.
    if ratio.is_nan() || ratio < TAKING_TURNS_RATIO {
        return None;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (item, &rank) in ranks.iter().enumerate().take(items) {
        let key = label(item)?;
        let k = *seen.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[k].push(rank);
    }
    (groups.len() >= 2).then_some((groups, ratio))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Distances, Truth};
    use lgate_matrix::DistanceMatrix;

    /// Four ranks on one host, 0 and 2 bound to one core, 1 and 3 to the other; `turns` the
    /// round trip of a pair on one core, 1 those across.
    fn input(turns: f64) -> ClusterInput {
        let values = ndarray::Array2::from_shape_fn((4, 4), |(i, j)| match (i, j) {
            _ if i == j => 0.0,
            _ if i % 2 == j % 2 => turns,
            // Noise across cores, as measured.
            _ => 1.0 + 0.05 * ((i + j) % 3) as f64,
        });
        ClusterInput {
            distances: Distances::Dense(DistanceMatrix::new(values, None).unwrap()),
            ranks: (0..4).collect(),
            job_size: 4,
            hosts: None,
            source: "demo".into(),
            matrix: None,
            warnings: Vec::new(),
            placement: Some(Truth {
                levels: vec![
                    ("node".into(), vec![0, 0, 0, 0]),
                    ("core".into(), vec![0, 1, 0, 1]),
                ],
                shared_cpus: Some(vec![0, 1, 0, 1]),
                same_cpus: Some(vec![0, 1, 0, 1]),
            }),
            filled: None,
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        }
    }

    fn one_group() -> Topology {
        Topology::from_levels(4, Vec::new()).unwrap()
    }

    #[test]
    fn ranks_taking_turns_on_one_core_are_its_level() {
        let (topology, turns) = add_level(&input(2.0), one_group()).unwrap();
        let turns = turns.expect("the level of ranks taking turns");
        assert_eq!((turns.name.as_str(), turns.groups), ("core", 2));
        assert!(turns.ratio >= TAKING_TURNS_RATIO, "{turns:?}");
        let level = &topology.levels()[0];
        assert_eq!(level.groups, vec![vec![0, 2], vec![1, 3]]);
    }

    #[test]
    fn pairs_not_clearly_slower_or_a_level_across_them_add_nothing() {
        // Slower, but not by half.
        let (topology, turns) = add_level(&input(1.3), one_group()).unwrap();
        assert!(turns.is_none() && topology.levels().is_empty());
        // A level found that puts 0 and 2 apart: they cannot also be one group under it.
        let across = Topology::from_levels(
            4,
            vec![Level {
                name: "socket".into(),
                groups: vec![vec![0, 1], vec![2, 3]],
                separation: None,
                confidence: None,
            }],
        )
        .unwrap();
        let (topology, turns) = add_level(&input(2.0), across).unwrap();
        assert!(turns.is_none());
        assert_eq!(topology.levels().len(), 1);
        // Found already by distance: not added twice.
        let found = Topology::from_levels(
            4,
            vec![Level {
                name: "core".into(),
                groups: vec![vec![0, 2], vec![1, 3]],
                separation: None,
                confidence: None,
            }],
        )
        .unwrap();
        let (topology, turns) = add_level(&input(2.0), found).unwrap();
        assert!(turns.is_none());
        assert_eq!(topology.levels().len(), 1);
        // No binding recorded: nothing to check the pairs against.
        let mut free = input(2.0);
        free.placement = None;
        assert!(add_level(&free, one_group()).unwrap().1.is_none());
    }
}
