//! The topology a clustering gives as `cluster` writes it, and the levels `measure` records in
//! a run's report.json: what `cluster` finds there with its defaults, with each level's
//! confidence.

use std::path::Path;

use lgate_rundir::{FoundLevel, FoundLevels, UndecidedFound};

use crate::clustering::{cluster_matrices, Clustering, ClusteringError};
use crate::input::{InputError, UnboundLevel};
use crate::methods::Method;
use crate::taking_turns::TakingTurns;

/// The topology of the clustering `c` as `cluster` writes it: levels named after the run's
/// placement (those splitting ranks not bound apart left out, and returned), the slow items as
/// outliers, for `auto` each level's confidence from `resamples` resamples, and ranks taking
/// turns on the same CPUs as the finest level where the matrix shows them (returned too).
pub fn finished_topology(
    c: &Clustering,
    method: &Method,
    resamples: usize,
) -> Result<
    (
        lgate_topology::Topology,
        Vec<UnboundLevel>,
        Option<TakingTurns>,
    ),
    InputError,
> {
    let input = &c.input;
    let (topology, unbound) = input.placed_topology(&c.tree)?;
    let outliers = (c.slow.iter())
        .map(|&(i, f)| lgate_topology::Outlier {
            rank: input.ranks[i],
            slowness: f,
        })
        .collect();
    let topology = topology.with_outliers(outliers)?;
    let (topology, _) =
        crate::confidence::attach(input, topology, method, (&c.tree, &c.slow), resamples)?;
    let (topology, turns) = crate::taking_turns::add_level(input, topology)?;
    Ok((with_doubted(topology, c), unbound, turns))
}

/// `topology` with the groupings of hosts the pairs nearly decide (`c.doubted`) among its
/// undecided levels, where its confidence was estimated and no level or undecided level there
/// has their groups already.
fn with_doubted(topology: lgate_topology::Topology, c: &Clustering) -> lgate_topology::Topology {
    let Some(mut confidence) = topology.confidence().cloned() else {
        return topology;
    };
    let canonical = |groups: &[Vec<usize>]| {
        let mut g: Vec<Vec<usize>> = (groups.iter())
            .map(|g| {
                let mut g = g.clone();
                g.sort_unstable();
                g
            })
            .collect();
        g.sort();
        g
    };
    let mut known: Vec<Vec<Vec<usize>>> = (topology.levels().iter())
        .map(|l| canonical(&l.groups))
        .chain(confidence.undecided.iter().map(|u| canonical(&u.members)))
        .collect();
    for (items, z) in &c.doubted {
        let members: Vec<Vec<usize>> = (items.iter())
            .map(|g| {
                g.iter()
                    .filter_map(|&i| c.input.ranks.get(i).copied())
                    .collect()
            })
            .collect();
        let key = canonical(&members);
        if members.len() < 2 || known.contains(&key) {
            continue;
        }
        known.push(key);
        confidence.undecided.push(lgate_topology::UndecidedLevel {
            groups: members.len(),
            share: 0.0,
            name: None,
            members,
            z: Some(*z),
        });
    }
    topology.with_confidence(Some(confidence))
}

/// The levels `cluster` finds in the run directory `run` with its defaults, with how sure it
/// is of each; `notes` (what measuring said about levels in doubt) come first among its notes.
pub fn found_levels(run: &Path, notes: Vec<String>) -> Result<FoundLevels, ClusteringError> {
    let inputs = crate::input::load_candidates(run)?;
    let method = Method::default();
    let c = cluster_matrices(inputs, &method, None, None)?;
    let resamples = crate::confidence::default_resamples(c.input.items());
    let (topology, _, _) = finished_topology(&c, &method, resamples)?;
    let confidence = topology.confidence();
    let mut notes = notes;
    notes.extend(
        (c.note.iter())
            .flat_map(|n| n.lines())
            .filter(|l| l.starts_with("undecided"))
            .map(str::to_string),
    );
    Ok(FoundLevels {
        levels: (topology.levels().iter())
            .map(|l| FoundLevel {
                confidence: l.confidence,
                groups: l.groups.len(),
                name: l.name.clone(),
            })
            .collect(),
        matrix: c.input.source.clone(),
        notes,
        resamples: confidence.map_or(0, |c| c.resamples),
        same_levels: confidence.map(|c| c.same_levels),
        undecided: (confidence.iter())
            .flat_map(|c| c.undecided.iter())
            .map(|u| UndecidedFound {
                groups: u.groups,
                name: u.name.clone(),
                share: u.share,
                z: u.z,
            })
            .collect(),
    })
}
