//! Open MPI rankfiles: where each rank of the next job runs, along a discovered topology.

use std::fmt::Write as _;

use crate::tree::{Topology, TopologyNode};
use crate::Rank;

/// Why a rankfile cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankfileError {
    /// The places do not cover the topology's ranks.
    #[error("the run has {places} ranks with a place, the topology {ranks}")]
    PlaceCount {
        /// Ranks with a host and CPU.
        places: usize,
        /// Ranks of the topology.
        ranks: usize,
    },
    /// Two ranks of the run shared a CPU: a rankfile would stack two ranks there.
    #[error("ranks {first} and {second} both ran on CPU {cpu} of {host}: a rankfile gives each rank a CPU of its own; measure with a CPU per rank (mpirun --bind-to core)")]
    SharedCpu {
        /// One rank.
        first: Rank,
        /// The other.
        second: Rank,
        /// Their host.
        host: String,
        /// Their CPU.
        cpu: usize,
    },
}

/// Where a rank ran: its host and CPU (OS index).
pub type Place = (String, usize);

/// The ranks of `node` in the tree's order.
fn leaves(node: &TopologyNode, out: &mut Vec<Rank>) {
    match node {
        TopologyNode::Group { ranks, .. } => out.extend(ranks),
        TopologyNode::Cluster { children, .. } => {
            for c in children {
                leaves(c, out);
            }
        }
    }
}

/// An Open MPI rankfile for a job of as many ranks as `topology` has, each rank on a CPU where
/// a rank of the measured run ran (`places`, by rank): compact, consecutive ranks fill the
/// CPUs of one group before the next, in the tree's order (neighbours in rank order are
/// neighbours in the machine); or, with `spread`, consecutive ranks go round the top-level
/// groups (rank 0 in the first, rank 1 in the second, ...). Slots are OS CPU numbers: load
/// it with `mpirun --mca rmaps_rank_file_physical 1 -rf FILE`.
pub fn rankfile(
    topology: &Topology,
    places: &[Place],
    spread: bool,
) -> Result<String, RankfileError> {
    if places.len() != topology.ranks() {
        return Err(RankfileError::PlaceCount {
            places: places.len(),
            ranks: topology.ranks(),
        });
    }
    let mut seen: std::collections::HashMap<&Place, Rank> = Default::default();
    for (rank, place) in places.iter().enumerate() {
        if let Some(&first) = seen.get(place) {
            return Err(RankfileError::SharedCpu {
                first,
                second: rank,
                host: place.0.clone(),
                cpu: place.1,
            });
        }
        seen.insert(place, rank);
    }
    // The CPUs of each top-level group in the tree's order; ranks the tree leaves out last.
    let tree = topology.tree();
    let tops: Vec<&TopologyNode> = match tree {
        TopologyNode::Cluster { children, .. } => children.iter().collect(),
        group => vec![group],
    };
    let mut columns: Vec<Vec<Rank>> = tops
        .iter()
        .map(|t| {
            let mut out = Vec::new();
            leaves(t, &mut out);
            out
        })
        .collect();
    let mut listed = vec![false; places.len()];
    for &r in columns.iter().flatten() {
        if let Some(l) = listed.get_mut(r) {
            *l = true;
        }
    }
    columns.push((0..places.len()).filter(|&r| !listed[r]).collect());
    let order: Vec<Rank> = if spread {
        let longest = columns.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest)
            .flat_map(|k| columns.iter().filter_map(move |c| c.get(k).copied()))
            .collect()
    } else {
        columns.into_iter().flatten().collect()
    };
    let mut out = format!(
        "# Open MPI rankfile written by lgate-plogp {} ({}): slots are OS CPU numbers,\n\
         # mpirun --mca rmaps_rank_file_physical 1 -rf FILE -np {}\n",
        env!("CARGO_PKG_VERSION"),
        if spread { "spread" } else { "compact" },
        places.len()
    );
    for (new_rank, &old) in order.iter().enumerate() {
        let (host, cpu) = &places[old];
        let _ = writeln!(out, "rank {new_rank}={host} slot={cpu}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Level;

    /// Two hosts of four CPUs; the topology groups ranks by host as the run dealt them.
    fn job() -> (Topology, Vec<Place>) {
        let places: Vec<Place> = (0..8).map(|r| (format!("n{}", r % 2), r / 2)).collect();
        let topology = Topology::from_levels(
            8,
            vec![Level::new("node", vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]])],
        )
        .unwrap();
        (topology, places)
    }

    fn lines(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn compact_fills_a_host_before_the_next() {
        let (topology, places) = job();
        let text = rankfile(&topology, &places, false).unwrap();
        assert_eq!(
            lines(&text),
            [
                "rank 0=n0 slot=0",
                "rank 1=n0 slot=1",
                "rank 2=n0 slot=2",
                "rank 3=n0 slot=3",
                "rank 4=n1 slot=0",
                "rank 5=n1 slot=1",
                "rank 6=n1 slot=2",
                "rank 7=n1 slot=3",
            ]
        );
        assert!(text.contains("rmaps_rank_file_physical 1"));
    }

    #[test]
    fn spread_goes_round_the_top_groups() {
        let (topology, places) = job();
        let text = rankfile(&topology, &places, true).unwrap();
        assert_eq!(
            lines(&text)[..4],
            [
                "rank 0=n0 slot=0",
                "rank 1=n1 slot=0",
                "rank 2=n0 slot=1",
                "rank 3=n1 slot=1",
            ]
        );
    }

    #[test]
    fn shared_cpus_and_other_jobs_are_refused() {
        let (topology, mut places) = job();
        places[5] = places[1].clone();
        assert!(matches!(
            rankfile(&topology, &places, false),
            Err(RankfileError::SharedCpu {
                first: 1,
                second: 5,
                ..
            })
        ));
        assert!(matches!(
            rankfile(&topology, &places[..4], false),
            Err(RankfileError::PlaceCount {
                places: 4,
                ranks: 8
            })
        ));
    }
}
