//! Levels above the host decided on hosts: all the pairs measured between two hosts together.
//!
//! `auto` on the host x host medians finds the levels whose gaps stand far above the noise (a
//! blocking tree's thin uplinks, a dragonfly's global links). Where the gap is small next to the
//! spread of single pairs (a non-blocking fat tree, where only a few hops tell leaves apart),
//! the medians of a few pairs per two hosts overlap between the classes, and `auto` rightly
//! keeps no level. The pairs themselves can still decide it: a grouping of the hosts is a level
//! here when
//!
//! - it is a cut of the average-linkage dendrogram of the host medians with at least two groups
//!   of two or more hosts and at most a third of the groups single hosts (as `auto` asks);
//! - every host of a group of two or more is nearer (median) to each host of its group than to
//!   any host outside it, once each host's own effect is taken out (a host whose ranks are all
//!   a little slower, whose pairs are all longer: in logs, each host's mean towards the others
//!   brought to the mean of all, its pairs divided by the same factors);
//! - the pairs between hosts of one group are shorter than the pairs between each group and its
//!   nearest group by a one-sided Mann-Whitney test at `z >=` [`Z_DECIDE`], on every measured
//!   pair (not the medians), and the medians of the two differ by [`LEAST_GAP`] at least;
//! - each group of four hosts or more stands apart on its own: the pairs across its widest
//!   split have their median [`LEAST_GAP`] below that of its pairs with its nearest group,
//!   and are shorter by a Mann-Whitney test at `z >=` [`Z_APART`] (pooled, one group far
//!   apart can carry a grouping that joins two groups as far apart as any).
//!
//! The host medians are not the only matrix cut: the least of the pairs between each two hosts
//! is another (noise that slows whole tests leaves some pair of two hosts at their own time),
//! as are the medians of the pairs' floors where a run kept them; every grouping is judged on
//! the pairs whatever matrix showed it. A host alone in a grouping stands farther from its
//! nearest host than that host from its own group, by [`LEAST_GAP`].
//!
//! The threshold is set against the selection: on matrices with no structure (4-16 hosts, 4
//! pairs between each two, log-normal noise), the best cut passing the first two tests reaches
//! z = 3.3-3.8 in 1 of 1000 draws; 4 keeps false levels rarer than that (at 4-12 hosts, 2000
//! draws each: 0-1 levels made of noise; sibling groups of 4 and 6 hosts: 1 and 3). A grouping that passes
//! the first two tests with `z >=` [`Z_DOUBT`] is reported undecided, with the pairs between
//! each two hosts that would decide it (z grows as the square root of the pairs).
//!
//! A level found is looked for again inside each of its groups; levels found inside fewer than
//! half of the groups of one size are dropped, as `auto` does.
//!
//! A group whose siblings decide a level alone is split by its own best grouping when that
//! makes groups of the same sizes at [`Z_LEND`] or more (a dragonfly group of two leaves
//! beside one of three, one rank a host: two pairs inside its leaves cap its own z).
//!
//! Sibling groups (the groups of one level) whose best groupings have the same shape are
//! judged together when none decides alone: a level runs through the whole tree, and few
//! hosts per group cap each group's z (two leaves of two hosts, two ranks a host: 8 pairs
//! inside against 16 between, z 3.9 at most). Their z's combine by Stouffer's rule (their sum
//! over the square root of their number); at [`Z_DECIDE`] or more, each of the groups that
//! reached [`Z_DOUBT`] is split by its grouping.
//!
//! A group whose best grouping makes groups of `s` hosts each, beside siblings of `s` hosts
//! with none of their own, is split when the pairs inside all those groups (the siblings are
//! groups of the level too: a dragonfly group of one leaf beside one of two) against the
//! pairs across its groups reach [`Z_DECIDE`]; the siblings stay whole at the level.

use std::collections::HashMap;

use ndarray::Array2;

use crate::auto::{outvoted, AutoParams, Tree};
use crate::linkage::{Dendrogram, Linkage};
use crate::separation::{cut_sizes, median};

mod coarsen;
mod judge;
mod refine;

pub use coarsen::coarsened;
pub use refine::{judged_by_pairs, refine, refine_sizes, Evidence, MOST_TESTS};

use judge::best_grouping;
use refine::Candidate;

/// The most hosts whose pairs between them are read to decide levels (2048 hosts, 4 pairs
/// between two: 8.4 million pairs, about 0.9 GB); above, the host x host medians alone decide.
pub const MAX_HOSTS: usize = 2048;

/// The least Mann-Whitney z that decides a level on hosts.
pub const Z_DECIDE: f64 = crate::separation::PAIRS_DECIDE;

/// The least z of a level decided on hosts that `measure` leaves as it is: a level the pairs
/// screened decide below it is confirmed with the confidence budget (more pairs between its
/// hosts), as a level in doubt is. A z a little above [`Z_DECIDE`] comes back under it in
/// many resamples of the same noise, and `cluster` then keeps the level undecided.
pub const Z_FIRM: f64 = 6.0;

/// The least z of a grouping reported undecided.
pub const Z_DOUBT: f64 = 2.0;

/// The least z of a grouping that splits a group whose siblings decide a level of groups of
/// the same sizes alone: the level is then known to run through the tree, only where its
/// groups fall in this one is asked. As [`Z_DOUBT`]: two leaves of two one-rank hosts give
/// z 2-3 at most, and a grouping of such a group lent at 3 split its real leaves in 7 of 20
/// draws (16 at 2), leaving a level of the other group's leaves only; one with no leaves is
/// split in 1 of 100 draws at 2.
pub const Z_LEND: f64 = 2.0;

/// The least Mann-Whitney z by which a group of four hosts or more stands apart from its
/// nearest group on its own (the pairs across its own widest split against its pairs with
/// that group), with [`LEAST_GAP`] between their medians.
pub const Z_APART: f64 = 2.0;

/// The least gap between the medians of the pairs inside groups and between them, as a share
/// of the first: differences below a few percent are timer and placement artifacts.
pub const LEAST_GAP: f64 = 0.03;

/// How many times the wider spread (largest less least) of the floors inside groups and of
/// those between them the gap between the two (least between less largest inside) must be to
/// decide a grouping on the floors whatever the rank test's z: few pairs cap that z (five
/// leaves of two one-rank hosts, one pair inside each: z 3.6 at most), and no noise of the
/// least of many tests puts every pair inside a grouping of a few hosts that far below every
/// pair between ([`MIN_CLEAR_INSIDE`] of them at least).
pub const CLEAR_GAP: f64 = 2.0;

/// The fewest floors inside groups that [`CLEAR_GAP`] decides on.
pub const MIN_CLEAR_INSIDE: usize = 4;

/// The pairs measured between each two hosts (`a < b`), at one size, in microseconds.
#[derive(Debug, Clone, Default)]
pub struct BetweenValues {
    /// Per pair of hosts, its pairs' values.
    pub values: HashMap<(usize, usize), Vec<f64>>,
    /// Per host, its ranks (empty when not known): two hosts have the product as pairs.
    pub ranks: Vec<usize>,
    /// Per pair of hosts, each of its pairs' tests (in the order of `values`), where a run
    /// kept them apart: with repeated tests, a pair's tests count as far as they vary
    /// independently ([`lgate_stats::mann_whitney_z_clustered`]).
    pub tests: HashMap<(usize, usize), Vec<Vec<f64>>>,
    /// Per pair of hosts, its pairs' floors (each the least repetition of any of its tests),
    /// where a run tested its pairs again.
    pub floors: HashMap<(usize, usize), Vec<f64>>,
    /// Whether the tests of all the pairs between two hosts are one unit of the test (the two
    /// hosts' load moves them together), not each pair's tests.
    pub units_are_host_pairs: bool,
    /// Whether the values are the pairs' floors (each the least repetition of any of its
    /// tests), for which a gap far wider than either side's spread decides ([`CLEAR_GAP`]).
    pub are_floors: bool,
}

impl BetweenValues {
    /// The values between hosts `a` and `b`.
    fn of(&self, a: usize, b: usize) -> &[f64] {
        self.values
            .get(&(a.min(b), a.max(b)))
            .map_or(&[], Vec::as_slice)
    }

    /// The host x host medians of the pairs' floors (`h` hosts), when every two hosts have
    /// pairs with a floor: noise only ever slows a repetition, so where each pair's tests
    /// vary more than the levels differ (ranks on shared cores), the floors show the levels
    /// the medians of slowed tests hide.
    pub fn floor_medians(&self, h: usize) -> Option<Array2<f64>> {
        if h < 2 {
            return None;
        }
        let mut m = Array2::zeros((h, h));
        for a in 0..h {
            for b in a + 1..h {
                let mut v = self.floors.get(&(a, b))?.clone();
                let x = median(&mut v);
                if x.is_nan() || x <= 0.0 {
                    return None;
                }
                m[[a, b]] = x;
                m[[b, a]] = x;
            }
        }
        Some(m)
    }

    /// The host x host matrix of the least of the pairs between each two hosts (`h` hosts),
    /// when every two hosts have pairs and some two have several: noise that slows whole tests
    /// (ranks descheduled on a busy machine, a late wake-up) leaves some pair of two hosts at
    /// their own time, where the medians of a few pairs, some slowed, fall among another
    /// level's (one leaf's hosts 15 us apart, a pair in three slowed by 6 us, against 21 us
    /// between leaves). Its groupings are judged on all the pairs, as every grouping is.
    pub fn least_matrix(&self, h: usize) -> Option<Array2<f64>> {
        if h < 2 || !self.values.values().any(|v| v.len() >= 2) {
            return None;
        }
        let mut m = Array2::zeros((h, h));
        for a in 0..h {
            for b in a + 1..h {
                let x = (self.of(a, b).iter().copied())
                    .filter(|x| x.is_finite())
                    .fold(f64::INFINITY, f64::min);
                if !(x.is_finite() && x > 0.0) {
                    return None;
                }
                m[[a, b]] = x;
                m[[b, a]] = x;
            }
        }
        Some(m)
    }

    /// The floors as the pairs' values, one each, the pairs between two hosts one unit of the
    /// test (their floors move together with the two hosts' load, and count as far as they
    /// vary independently): the evidence of [`BetweenValues::floor_medians`].
    pub fn of_floors(&self) -> BetweenValues {
        BetweenValues {
            values: self.floors.clone(),
            ranks: self.ranks.clone(),
            tests: HashMap::new(),
            floors: HashMap::new(),
            units_are_host_pairs: true,
            are_floors: true,
        }
    }

    /// The same values with every test of the pairs between two hosts one unit of the test
    /// (they move together with the two hosts' load, and count as far as they vary
    /// independently): to judge the groupings the floors show, which that load moves too.
    pub fn by_host_pairs(&self) -> BetweenValues {
        BetweenValues {
            values: self.values.clone(),
            ranks: self.ranks.clone(),
            tests: self.tests.clone(),
            floors: HashMap::new(),
            units_are_host_pairs: true,
            are_floors: false,
        }
    }

    /// The tests of each pair between hosts `a` and `b` (one value each where not kept).
    fn tests_of(&self, a: usize, b: usize) -> Vec<&[f64]> {
        match self.tests.get(&(a.min(b), a.max(b))) {
            Some(t) => t.iter().map(Vec::as_slice).collect(),
            None => self.of(a, b).chunks(1).collect(),
        }
    }
}

/// A grouping of hosts the pairs nearly decide (`pairs_needed` and `tests_needed` for
/// [`AutoParams::pairs_decide`], the latter [`MOST_TESTS`] at most).
pub use lgate_topology::judge::Doubt;

#[cfg(test)]
mod tests;
