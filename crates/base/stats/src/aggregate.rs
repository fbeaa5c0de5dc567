//! Aggregates judged as aggregates: the pairs of a host, of two hosts or of a rank together,
//! against the standard error of their median.
//!
//! Each pair holds a value in natural logs (`ln(B / A)` for a change between two runs,
//! `ln(value)` for one run) and the variance its repetitions explain. Its residual is its
//! value less its class's center (the median of its class: inside a host, between hosts, ...).
//! Pairs move by more than their repetitions spread (another run's state, another core's
//! load); how much more is read from the bulk of the pairs, most of which are as they should
//! be: a class's robust spread of residuals, less what the repetitions explain, is each of its
//! pairs' extra variance. A unit's change is the median residual of its pairs, with variance
//!
//! - its pairs' own: `pi/2 * median(variance) / n` (the median of n values);
//! - its ranks', which all the pairs of a rank share: `var(rank) * sum(c_r^2) / n^2`, with
//!   `c_r` the unit's pairs that rank `r` is in (all of it for a rank, `1/m` of it for a host
//!   of m ranks);
//! - its own kind's (a host's, a host pair's), when there are [`MIN_UNITS`] such units to read
//!   it from.
//!
//! The variance of ranks (and of each kind) is their robust spread of changes less what their
//! pairs explain. So 500 pairs that agree weigh more than one, and a rank that moves no more
//! than ranks of this machine move is not named.

use std::collections::HashMap;

use crate::{mad, median};

/// Units of a kind needed to read their spread from the machine.
pub const MIN_UNITS: usize = 6;

/// Pairs of a block needed to read the pairs' spread from it.
pub const MIN_BLOCK: usize = 3;

/// A pair whose repetitions' variance is below its class's median by this factor (a tenth of
/// the standard deviation) is of another kind than the pairs its class's spread is read from.
const PRECISE: f64 = 100.0;

/// The variance of the median of n normal values over that of their mean.
const MEDIAN_VARIANCE: f64 = std::f64::consts::FRAC_PI_2;

/// The standard deviation of a normal distribution over its median absolute deviation.
const MAD_SIGMAS: f64 = 1.4826;

/// One pair's evidence.
pub trait PairEvidence {
    /// The pair's two rows (ranks), in either order.
    fn rows(&self) -> (usize, usize);
    /// Its class, from 0.
    fn class(&self) -> usize;
    /// Its value in natural logs (NaN when it has none).
    fn log_value(&self) -> f64;
    /// The variance of that value its repetitions explain.
    fn repeat_variance(&self) -> f64;
}

/// How much pairs and ranks move beyond their repetitions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spread {
    /// Per class: the variance of a pair beyond its repetitions'.
    pub pair: Vec<f64>,
    /// The variance of a rank's own shift, shared by all its pairs.
    pub rank: f64,
    /// Per class: the median variance its pairs' repetitions explain (0 when unknown).
    pub repeat: Vec<f64>,
}

/// The change of some pairs together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aggregate {
    /// The median residual, in natural logs.
    pub change: f64,
    /// Its variance.
    pub variance: f64,
    /// The pairs it is of.
    pub pairs: usize,
}

impl Aggregate {
    /// The change over its standard error: infinite for a change where no noise was seen, 0
    /// for none.
    pub fn z(&self) -> f64 {
        let s = self.variance.sqrt();
        if s > 0.0 {
            self.change / s
        } else if self.change == 0.0 {
            0.0
        } else {
            self.change.signum() * f64::INFINITY
        }
    }

    /// The change as a factor: 1.1 for 10 % more.
    pub fn factor(&self) -> f64 {
        self.change.exp()
    }
}

impl Spread {
    /// The variance of pair `p`: its repetitions' and its class's extra.
    pub fn pair_variance<P: PairEvidence>(&self, p: &P) -> f64 {
        p.repeat_variance() + self.pair.get(p.class()).copied().unwrap_or(0.0)
    }

    /// The variance of pair `p` judged alone: as [`Spread::pair_variance`], but a pair whose
    /// repetitions spread less than a tenth of its class's (in standard deviations) takes the
    /// extra in proportion to its repetitions' variance: two ranks taking turns on one CPU
    /// repeat their time slices to a thousandth (15.2 ms), beside pairs of the same host that
    /// move by a tenth between runs (12 us), and the extra read from those would hide a pair of
    /// them 50 % slower (a busy process on their CPU). Units (ranks, hosts) keep the class's
    /// extra: their many pairs' median is what is judged there.
    pub fn lone_pair_variance<P: PairEvidence>(&self, p: &P) -> f64 {
        let own = p.repeat_variance();
        let extra = self.pair.get(p.class()).copied().unwrap_or(0.0);
        let typical = self.repeat.get(p.class()).copied().unwrap_or(0.0);
        if own > 0.0 && own * PRECISE < typical {
            own + extra * own / typical
        } else {
            own + extra
        }
    }

    /// The change of `which` of `pairs` against `centers` (per class), with `own` added to
    /// its variance (its kind's; 0 for none).
    pub fn aggregate<P: PairEvidence>(
        &self,
        pairs: &[P],
        which: &[usize],
        centers: &[f64],
        own: f64,
    ) -> Aggregate {
        let mut residuals = Vec::with_capacity(which.len());
        let mut variances = Vec::with_capacity(which.len());
        let mut rows = Vec::with_capacity(2 * which.len());
        for &k in which {
            let p = &pairs[k];
            let r = p.log_value() - centers.get(p.class()).copied().unwrap_or(0.0);
            if !r.is_finite() {
                continue;
            }
            residuals.push(r);
            variances.push(self.pair_variance(p));
            let (i, j) = p.rows();
            rows.extend([i, j]);
        }
        let n = residuals.len();
        if n == 0 {
            return Aggregate {
                change: 0.0,
                variance: 0.0,
                pairs: 0,
            };
        }
        let nf = n as f64;
        // How many of the pairs each row is in: runs of the sorted rows.
        rows.sort_unstable();
        let shared: f64 = rows
            .chunk_by(|a, b| a == b)
            .map(|run| (run.len() * run.len()) as f64)
            .sum::<f64>()
            / (nf * nf);
        Aggregate {
            change: median(&mut residuals),
            variance: MEDIAN_VARIANCE * median(&mut variances) / nf + self.rank * shared + own,
            pairs: n,
        }
    }

    /// Reads the pairs' extra variance per class (of `classes`) and the ranks' (from `ranks`,
    /// each rank's group and pairs, around `centers`; with fewer than [`MIN_UNITS`] ranks,
    /// half the largest pair extra: all of it may be the ranks'). A pair's is read around the median of its block
    /// (pairs alike: those between the same two hosts, or inside one), so that a host or link
    /// that differs as a whole does not widen it; blocks of fewer than [`MIN_BLOCK`] pairs
    /// tell nothing, and a class without any larger is read around `centers`.
    pub fn estimate<'a, P: PairEvidence>(
        pairs: &[P],
        classes: usize,
        centers: &[f64],
        blocks: impl Iterator<Item = &'a [usize]>,
        ranks: &[(usize, Vec<usize>)],
    ) -> Spread {
        let mut spread = Spread {
            pair: vec![0.0; classes],
            rank: 0.0,
            repeat: vec![0.0; classes],
        };
        let mut residuals: Vec<Vec<f64>> = vec![Vec::new(); classes];
        let mut noise: Vec<Vec<f64>> = vec![Vec::new(); classes];
        for block in blocks.filter(|b| b.len() >= MIN_BLOCK) {
            let mut values: Vec<f64> = (block.iter())
                .map(|&k| pairs[k].log_value())
                .filter(|x| x.is_finite())
                .collect();
            if values.len() < MIN_BLOCK {
                continue;
            }
            let center = median(&mut values);
            for &k in block {
                let p = &pairs[k];
                let r = p.log_value() - center;
                if r.is_finite() && p.class() < classes {
                    residuals[p.class()].push(r);
                    noise[p.class()].push(p.repeat_variance());
                }
            }
        }
        for c in 0..classes {
            if residuals[c].len() < 2 {
                // No blocks: around the class's center.
                (residuals[c], noise[c]) = (pairs.iter())
                    .filter(|p| p.class() == c)
                    .map(|p| (p.log_value() - centers[c], p.repeat_variance()))
                    .filter(|(r, _)| r.is_finite())
                    .unzip();
            }
            if residuals[c].len() >= 2 {
                let s = MAD_SIGMAS * mad(&mut residuals[c]);
                spread.repeat[c] = median(&mut noise[c]);
                spread.pair[c] = (s * s - spread.repeat[c]).max(0.0);
            }
        }
        spread.rank = spread.rank_variance(pairs, centers, ranks);
        if ranks.iter().filter(|r| !r.1.is_empty()).count() < MIN_UNITS {
            // Too few ranks to tell their movement from their pairs': all of a pair's extra
            // movement may be its two ranks' (a rank time-sliced with another moves all its
            // pairs), half each.
            spread.rank = spread.pair.iter().copied().fold(0.0, f64::max) / 2.0;
        }
        spread
    }

    /// The variance of ranks' own shifts: the spread of their changes around the median of
    /// their group's (their host's, so that a host that differs as a whole does not widen
    /// it; a group of fewer than [`MIN_BLOCK`] ranks around all ranks'), less what their
    /// pairs explain; 0 below [`MIN_UNITS`] ranks (where [`Spread::estimate`] takes half the
    /// pairs' extra instead).
    fn rank_variance<P: PairEvidence>(
        &self,
        pairs: &[P],
        centers: &[f64],
        ranks: &[(usize, Vec<usize>)],
    ) -> f64 {
        let mut by_group: HashMap<usize, Vec<f64>> = HashMap::new();
        let mut judged = Vec::new();
        for (group, which) in ranks.iter().filter(|r| !r.1.is_empty()) {
            let a = self.aggregate(pairs, which, centers, 0.0);
            if a.pairs > 0 && a.change.is_finite() && a.variance.is_finite() {
                by_group.entry(*group).or_default().push(a.change);
                // A rank's own shift enters its aggregate as (1 + 1/n) of its variance.
                judged.push((*group, a, 1.0 + 1.0 / a.pairs as f64));
            }
        }
        if judged.len() < MIN_UNITS {
            return 0.0;
        }
        let mut all: Vec<f64> = judged.iter().map(|j| j.1.change).collect();
        let overall = median(&mut all);
        let center: HashMap<usize, f64> = (by_group.into_iter())
            .map(|(g, mut v)| {
                (
                    g,
                    if v.len() >= MIN_BLOCK {
                        median(&mut v)
                    } else {
                        overall
                    },
                )
            })
            .collect();
        let mut residuals: Vec<f64> = judged.iter().map(|j| j.1.change - center[&j.0]).collect();
        let mut variances: Vec<f64> = judged.iter().map(|j| j.1.variance).collect();
        let mut own: Vec<f64> = judged.iter().map(|j| j.2).collect();
        let s = MAD_SIGMAS * mad(&mut residuals);
        (s * s - median(&mut variances)).max(0.0) / median(&mut own)
    }

    /// How much more `units` (each its pairs) spread than this spread explains: the variance
    /// of a kind's own shift; 0 below [`MIN_UNITS`] units.
    pub fn beyond<'a, P: PairEvidence>(
        &self,
        pairs: &[P],
        units: impl Iterator<Item = &'a [usize]>,
        centers: &[f64],
    ) -> f64 {
        let (mut changes, mut variances): (Vec<f64>, Vec<f64>) = units
            .filter(|u| !u.is_empty())
            .map(|u| self.aggregate(pairs, u, centers, 0.0))
            .filter(|a| a.pairs > 0 && a.change.is_finite() && a.variance.is_finite())
            .map(|a| (a.change, a.variance))
            .unzip();
        if changes.len() < MIN_UNITS {
            return 0.0;
        }
        let s = MAD_SIGMAS * mad(&mut changes);
        (s * s - median(&mut variances)).max(0.0)
    }
}

/// The median value of each class (of `classes`) among `which` of `pairs` (0 for a class
/// without any).
pub fn class_centers<P: PairEvidence>(
    pairs: &[P],
    which: impl Iterator<Item = usize>,
    classes: usize,
) -> Vec<f64> {
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); classes];
    for k in which {
        let p = &pairs[k];
        let r = p.log_value();
        if r.is_finite() && p.class() < classes {
            by_class[p.class()].push(r);
        }
    }
    by_class
        .iter_mut()
        .map(|v| if v.is_empty() { 0.0 } else { median(v) })
        .collect()
}

/// The values of some pairs, sorted per class: each class's median, with or without some of
/// them (a unit's own pairs, so that a unit holding much of a class does not move the center
/// it is judged against).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassValues {
    sorted: Vec<Vec<f64>>,
}

impl ClassValues {
    /// The values of `which` of `pairs`, over `classes` classes.
    pub fn of<P: PairEvidence>(
        pairs: &[P],
        which: impl Iterator<Item = usize>,
        classes: usize,
    ) -> ClassValues {
        let mut sorted: Vec<Vec<f64>> = vec![Vec::new(); classes];
        for k in which {
            let p = &pairs[k];
            let r = p.log_value();
            if r.is_finite() && p.class() < classes {
                sorted[p.class()].push(r);
            }
        }
        for v in &mut sorted {
            v.sort_unstable_by(f64::total_cmp);
        }
        ClassValues { sorted }
    }

    /// Each class's median (0 for a class without values).
    pub fn centers(&self) -> Vec<f64> {
        self.sorted
            .iter()
            .map(|v| median_without(v, &[]).unwrap_or(0.0))
            .collect()
    }

    /// Each class's median without the values of `out` (pairs that are among them), each
    /// class with no value left taking its median with them.
    pub fn centers_without<P: PairEvidence>(&self, pairs: &[P], out: &[usize]) -> Vec<f64> {
        let classes = self.sorted.len();
        let mut removed: Vec<Vec<f64>> = vec![Vec::new(); classes];
        for &k in out {
            let p = &pairs[k];
            let r = p.log_value();
            if r.is_finite() && p.class() < classes {
                removed[p.class()].push(r);
            }
        }
        (self.sorted.iter().zip(&mut removed))
            .map(|(all, gone)| {
                gone.sort_unstable_by(f64::total_cmp);
                median_without(all, gone)
                    .or_else(|| median_without(all, &[]))
                    .unwrap_or(0.0)
            })
            .collect()
    }
}

/// The median of sorted `all` without sorted `gone` (a part of it), `None` when nothing is
/// left: the k-th value of the difference found by bisection on `all`, so O(log^2 n).
fn median_without(all: &[f64], gone: &[f64]) -> Option<f64> {
    let left = all.len().checked_sub(gone.len()).filter(|&n| n > 0)?;
    // The k-th smallest (from 0) of all minus gone.
    let kth = |k: usize| -> f64 {
        let (mut lo, mut hi) = (0, all.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let x = all[mid];
            let below = all.partition_point(|&v| v <= x) - gone.partition_point(|&v| v <= x);
            if below > k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        all[lo]
    };
    Some(if left % 2 == 1 {
        kth(left / 2)
    } else {
        (kth(left / 2 - 1) + kth(left / 2)) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair of ranks with a log value and its repetitions' variance.
    #[derive(Debug, Clone)]
    struct P {
        rows: (usize, usize),
        value: f64,
        noise: f64,
    }

    impl PairEvidence for P {
        fn rows(&self) -> (usize, usize) {
            self.rows
        }
        fn class(&self) -> usize {
            0
        }
        fn log_value(&self) -> f64 {
            self.value
        }
        fn repeat_variance(&self) -> f64 {
            self.noise
        }
    }

    /// A deterministic stand-in for normal noise: the `k`-th of `n` spaced quantiles of a
    /// logistic distribution of standard deviation 1, shuffled.
    fn normal(k: usize, n: usize) -> f64 {
        let u = ((k * 7919) % n) as f64 / n as f64 + 0.5 / n as f64;
        (u / (1.0 - u)).ln() * 3f64.sqrt() / std::f64::consts::PI
    }

    /// `ranks` ranks, every pair: its value its noise (`pair_sd`) plus both ranks' shifts
    /// (`rank_sd`), and `extra` added to one rank's; the repetitions explain a tenth of a
    /// pair's spread. Also each rank's pairs.
    fn machine(
        ranks: usize,
        pair_sd: f64,
        rank_sd: f64,
        extra: (usize, f64),
    ) -> (Vec<P>, Vec<Vec<usize>>) {
        let shift: Vec<f64> = (0..ranks)
            .map(|r| rank_sd * normal(r, ranks) + if r == extra.0 { extra.1 } else { 0.0 })
            .collect();
        let n = ranks * (ranks - 1) / 2;
        let (mut pairs, mut of_rank) = (Vec::new(), vec![Vec::new(); ranks]);
        for i in 0..ranks {
            for j in i + 1..ranks {
                of_rank[i].push(pairs.len());
                of_rank[j].push(pairs.len());
                pairs.push(P {
                    rows: (i, j),
                    value: pair_sd * normal(pairs.len(), n) + shift[i] + shift[j],
                    noise: (pair_sd / 10.0).powi(2),
                });
            }
        }
        (pairs, of_rank)
    }

    /// Every rank in one group.
    fn grouped(ranks: &[Vec<usize>]) -> Vec<(usize, Vec<usize>)> {
        ranks.iter().map(|r| (0, r.clone())).collect()
    }

    #[test]
    fn a_median_without_some_values_is_that_of_the_rest() {
        let all = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 13.0];
        assert_eq!(median_without(&all, &[]), Some(3.0));
        assert_eq!(median_without(&all, &[13.0]), Some(2.5));
        assert_eq!(median_without(&all, &[1.0, 2.0]), Some(5.0));
        assert_eq!(median_without(&all, &[2.0, 3.0, 5.0]), Some(5.0));
        assert_eq!(median_without(&all, &all), None);
        let pairs: Vec<P> = [1.0, 2.0, 3.0, 10.0, 11.0]
            .iter()
            .enumerate()
            .map(|(k, &v)| P {
                rows: (0, k + 1),
                value: v,
                noise: 0.0,
            })
            .collect();
        let values = ClassValues::of(&pairs, 0..5, 1);
        assert_eq!(values.centers(), vec![3.0]);
        assert_eq!(values.centers_without(&pairs, &[3, 4]), vec![2.0]);
    }

    #[test]
    fn the_spread_is_read_from_the_bulk() {
        // Pairs move 5 %, ranks 3 %: a pair's extra variance is its spread with both ranks'
        // shifts; the ranks' is theirs.
        let (pairs, ranks) = machine(48, 0.05, 0.03, (0, 0.0));
        let centers = class_centers(&pairs, 0..pairs.len(), 1);
        let s = Spread::estimate(&pairs, 1, &centers, std::iter::empty(), &grouped(&ranks));
        let pair = (0.05f64.powi(2) + 2.0 * 0.03f64.powi(2) - 0.005f64.powi(2)).sqrt();
        assert!((s.pair[0].sqrt() / pair - 1.0).abs() < 0.15, "{s:?}");
        assert!((s.rank.sqrt() / 0.03 - 1.0).abs() < 0.3, "{s:?}");
    }

    /// A pair's z against its class's extra.
    fn p_z_class(s: &Spread, p: &P) -> f64 {
        p.value / s.pair_variance(p).sqrt()
    }

    #[test]
    fn a_pair_far_more_precise_than_its_class_takes_the_extra_in_proportion() {
        // Four ranks on two CPUs: four pairs across (12 us, 10 % repetitions, moving 10 %
        // between runs) and two taking turns (15 ms, 0.1 %); a busy process makes one of those
        // 50 % slower and the other 5 % faster. Read around the class, the extra is the noisy
        // pairs' and would hide it; in proportion, it stands out, and a noisy pair keeps its.
        let noisy = 0.1f64.powi(2);
        let precise = 0.001f64.powi(2);
        let values = [0.1, -0.12, 0.05, -0.02, -0.05, 1.5f64.ln()];
        let pairs: Vec<P> = values
            .iter()
            .enumerate()
            .map(|(k, &v)| P {
                rows: (k / 2, 2 + k % 2),
                value: v,
                noise: if k < 4 { noisy } else { precise },
            })
            .collect();
        let centers = class_centers(&pairs, 0..pairs.len(), 1);
        let block: Vec<usize> = (0..pairs.len()).collect();
        let s = Spread::estimate(&pairs, 1, &centers, std::iter::once(&block[..]), &[]);
        assert!(
            s.pair[0] > noisy / 10.0,
            "the class moves beyond its repetitions: {s:?}"
        );
        let z = |p: &P| p.value / s.lone_pair_variance(p).sqrt();
        assert!(z(&pairs[5]) > 100.0, "z {} ({s:?})", z(&pairs[5]));
        assert!(
            p_z_class(&s, &pairs[5]) < 30.0,
            "the class's extra hides it"
        );
        assert_eq!(s.lone_pair_variance(&pairs[0]), noisy + s.pair[0]);
        // A pair without repetitions of its own keeps the class's extra.
        let bare = P {
            noise: 0.0,
            ..pairs[5].clone()
        };
        assert_eq!(s.lone_pair_variance(&bare), s.pair[0]);
    }

    #[test]
    fn blocks_keep_a_whole_block_apart_out_of_the_pairs_spread() {
        // Two blocks of 2 %-noisy pairs, the second 40 % slower as a whole: read in blocks the
        // pairs spread 2 %; read around the class's median, far more.
        let (mut pairs, _) = machine(24, 0.02, 0.0, (0, 0.0));
        let half = pairs.len() / 2;
        for p in &mut pairs[half..] {
            p.value += 1.4f64.ln();
        }
        let blocks: Vec<Vec<usize>> = vec![(0..half).collect(), (half..pairs.len()).collect()];
        let centers = class_centers(&pairs, 0..pairs.len(), 1);
        let by_blocks =
            Spread::estimate(&pairs, 1, &centers, blocks.iter().map(Vec::as_slice), &[]);
        let sd = (by_blocks.pair[0] + 0.002f64.powi(2)).sqrt();
        assert!((sd / 0.02 - 1.0).abs() < 0.15, "{by_blocks:?}");
        let around = Spread::estimate(&pairs, 1, &centers, std::iter::empty(), &[]);
        assert!(around.pair[0].sqrt() > 0.1, "{around:?}");
    }

    #[test]
    fn many_pairs_that_agree_weigh_more_than_one() {
        // Every pair 5 % more, each moving 5 % on its own: one pair is no evidence, the 47
        // pairs of one rank together are.
        let (pairs, ranks) = machine(48, 0.05, 0.0, (0, 0.0));
        let spread = Spread {
            pair: vec![0.05f64.powi(2)],
            rank: 0.0,
            repeat: vec![0.0],
        };
        let centers = [0.0];
        let more: Vec<P> = (pairs.iter())
            .map(|p| P {
                value: p.value + 1.05f64.ln(),
                ..p.clone()
            })
            .collect();
        let one = |v: &[P]| spread.aggregate(v, &[0], &centers, 0.0).z();
        assert!((one(&more) - one(&pairs)).abs() < 1.2);
        let rank = |v: &[P]| spread.aggregate(v, &ranks[0], &centers, 0.0).z();
        assert!(
            rank(&more) - rank(&pairs) > 4.0,
            "{} {}",
            rank(&pairs),
            rank(&more)
        );
        assert_eq!(spread.aggregate(&more, &ranks[0], &centers, 0.0).pairs, 47);
    }

    #[test]
    fn a_rank_is_named_only_beyond_what_ranks_move() {
        // Ranks move 3 %: rank 24 (whose own draw is about 0) moving 6 % more is within their
        // spread, 20 % more is beyond it; without the ranks' spread, 6 % would stand out.
        for (extra, named) in [(0.06, false), (0.2, true)] {
            let (pairs, ranks) = machine(48, 0.02, 0.03, (24, extra));
            let centers = class_centers(&pairs, 0..pairs.len(), 1);
            let s = Spread::estimate(&pairs, 1, &centers, std::iter::empty(), &grouped(&ranks));
            let a = s.aggregate(&pairs, &ranks[24], &centers, 0.0);
            assert_eq!(a.z() >= 3.0, named, "{extra}: {a:?} {s:?}");
            let naive = Spread {
                rank: 0.0,
                ..s.clone()
            };
            let b = naive.aggregate(&pairs, &ranks[24], &centers, 0.0);
            assert!(b.z() > 3.0, "{extra}: {b:?}");
        }
    }

    #[test]
    fn a_kind_spreads_beyond_its_pairs_only_with_enough_units() {
        let (pairs, ranks) = machine(12, 0.02, 0.05, (0, 0.0));
        let s = Spread {
            pair: vec![0.0004],
            rank: 0.0,
            repeat: vec![0.0],
        };
        let centers = [0.0];
        assert!(s.beyond(&pairs, ranks.iter().map(Vec::as_slice), &centers) > 0.0);
        assert_eq!(
            s.beyond(
                &pairs,
                ranks.iter().take(MIN_UNITS - 1).map(Vec::as_slice),
                &centers
            ),
            0.0
        );
    }
}
