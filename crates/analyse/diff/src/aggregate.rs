//! How much unchanged pairs and units move between two runs, read from the runs: the bulk of
//! the machine did not change ([`lgate_stats::aggregate`] on each compared pair's `ln(B / A)`).
//!
//! Its pairs' spread of log ratios around their block's median (the pairs between two hosts,
//! or inside one), less what the repetitions explain, is how much an unchanged pair moves
//! between the runs; the ranks' spread around their host's, how much a rank moves; and with
//! [`MIN_UNITS`] hosts or host pairs or more, theirs.

use lgate_stats::aggregate::Spread;

pub use lgate_stats::aggregate::MIN_UNITS;

use crate::compare::{inside_host, MatrixDiff, RunToRun, UnitKind, Units, CLASSES};

/// Reads how much pairs and units move from `m`'s pairs and `units`.
pub fn run_to_run(m: &MatrixDiff, units: &Units) -> RunToRun {
    let centers = lgate_stats::aggregate::class_centers(&m.pairs, 0..m.pairs.len(), CLASSES);
    let of = |kind: UnitKind| {
        (units.units.iter().zip(&units.pairs))
            .filter(move |(u, _)| u.0 == kind)
            .map(|(_, p)| p.as_slice())
    };
    // Each rank in the group of its host (all in one when hosts are unknown).
    let hosts: Vec<&str> = (units.units.iter())
        .filter(|u| u.0 == UnitKind::Host)
        .map(|u| u.1.as_str())
        .collect();
    let ranks: Vec<(usize, Vec<usize>)> = (units.units.iter().zip(&units.pairs))
        .filter(|(u, _)| u.0 == UnitKind::Rank)
        .map(|(u, p)| {
            let host = u.2.first().and_then(|h| hosts.iter().position(|x| x == h));
            (host.unwrap_or(usize::MAX), p.clone())
        })
        .collect();
    // Pairs alike: those between two hosts, and those of each class inside each host.
    let inside: Vec<Vec<usize>> = (of(UnitKind::Host))
        .flat_map(|u| {
            (0..CLASSES as u8)
                .filter(|&c| inside_host(c))
                .map(move |c| {
                    (u.iter().copied())
                        .filter(|&p| m.pairs[p].class == c)
                        .collect::<Vec<usize>>()
                })
        })
        .filter(|v| !v.is_empty())
        .collect();
    let blocks = of(UnitKind::HostPair).chain(inside.iter().map(Vec::as_slice));
    let spread = Spread::estimate(&m.pairs, CLASSES, &centers, blocks, &ranks);
    RunToRun {
        host: spread.beyond(&m.pairs, of(UnitKind::Host), &centers),
        host_pair: spread.beyond(&m.pairs, of(UnitKind::HostPair), &centers),
        spread,
    }
}
