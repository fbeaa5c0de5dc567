//! How long a real `measure` run on a modelled machine would take: the time of each PLogP pair
//! test from the link model, over the schedule's critical path (subtrees run side by side).
//!
//! A pair test at each size m costs, with R repetitions, k the o_r wait factor and the link's
//! noise-free parameters:
//! - four control messages (one-way, RTT(0) / 2 each);
//! - RTT: R x RTT(m);
//! - o_s: R x (a ready signal, RTT(0) / 2, then a synchronous send, max(o_s(m), RTT(m)));
//! - o_r: 3 calibration echoes of 2 L + 2 g(m), then R x (k x echo + o_r(m));
//! - g (m <= 64 KiB): batches of n = 10, 20, 40, ... messages, two per step, each
//!   n g(m) + RTT(0), until the estimate settles within epsilon (1 %): at the second step at
//!   least, and once n g(m) outweighs the batch's jitter, (J + sigma RTT(0)) / epsilon, with
//!   J the model's `batch_jitter_us` (operating-system noise) and sigma its per-sample noise;
//!   or at 37500 messages or a 50 ms batch. Then three more batches.
//!
//! Each pair also warms up (16 echoes and 16 synchronous sends of 0 bytes), and each pair of a
//! group is preceded by a dissemination barrier of the group: ceil(log2 n) rounds of one
//! 0-byte message over the slowest link, plus 2 us of software per round. Adaptive midpoints
//! are not counted: with them on, a noisy machine takes longer than estimated.

use lgate_harness::Schedule;
use lgate_plogp_bench::PLogPOptions;

use crate::layout::Layout;
use crate::model::{Link, MachineModel};

/// Software time per barrier round, microseconds.
const BARRIER_ROUND_SOFTWARE_US: f64 = 2.0;

/// The predicted time of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// The sum of all pair tests' times, seconds: the wall time one pair at a time.
    pub pair_tests_s: f64,
    /// Pair tests in the run (all sweeps).
    pub pairs: usize,
    /// How many pair tests run at once on average: the sum over the wall time.
    pub concurrency: f64,
}

/// The time of one pair test over `link`, microseconds, with `jitter_us` of noise per batch
/// (J + sigma RTT(0) in the module's terms).
pub fn pair_test_us(
    link: &Link,
    eager_limit: usize,
    options: &PLogPOptions,
    jitter_us: f64,
) -> f64 {
    let r = options.reps as f64;
    let zero = link.at(0, eager_limit);
    let half = zero.rtt / 2.0;
    let mut total = 16.0 * (zero.rtt + zero.rtt.max(zero.os)) + 2.0 * half;
    for &m in &options.sizes {
        let p = link.at(m, eager_limit);
        let echo = 2.0 * link.latency_us + 2.0 * p.g;
        total += 4.0 * half;
        total += r * p.rtt;
        total += r * (half + p.os.max(p.rtt));
        total += 3.0 * echo + r * (options.or_wait * echo + p.or);
        if m <= options.saturation_max_size {
            total += saturation_us(p.g, zero.rtt, jitter_us, options);
        }
    }
    total
}

/// The time link saturation takes at a gap of `g`, microseconds.
fn saturation_us(g: f64, rtt0: f64, jitter_us: f64, options: &PLogPOptions) -> f64 {
    let batch = |n: usize| n as f64 * g + rtt0;
    let cap = options.saturation_cap;
    let settles = jitter_us / options.epsilon;
    let mut n = 10;
    let mut total = 2.0 * batch(n);
    while n < cap && batch(n) <= 50_000.0 {
        n = (n * 2).min(cap);
        total += 2.0 * batch(n);
        if n as f64 * g >= settles {
            break;
        }
    }
    total + (options.saturation_reps.saturating_sub(1)) as f64 * batch(n)
}

/// The predicted time of a real run with `options` on `model`'s machine placed as `layout`,
/// under `schedule`.
pub fn estimate(
    model: &MachineModel,
    layout: &Layout,
    options: &PLogPOptions,
    schedule: &Schedule,
    sweeps: u32,
) -> Estimate {
    let per_level: Vec<f64> = model
        .levels
        .iter()
        .map(|l| {
            let link = &model.links[&l.name];
            let jitter = model.noise.batch_jitter_us
                + model.noise.sigma * link.at(0, model.eager_limit_bytes).rtt;
            pair_test_us(link, model.eager_limit_bytes, options, jitter) * 1e-6
        })
        .collect();
    let slowest_one_way = model
        .links
        .values()
        .map(|l| l.at(0, model.eager_limit_bytes).rtt / 2.0)
        .fold(0.0, f64::max);
    let barrier = |n: usize| {
        let rounds = (n.max(1) as f64).log2().ceil();
        rounds * (slowest_one_way + BARRIER_ROUND_SOFTWARE_US) * 1e-6
    };
    let pair_time = |p: lgate_harness::Pair| per_level[layout.parting_level(p.i, p.j)];
    let wall = schedule.critical_path(pair_time, barrier) * sweeps as f64;
    let ranks = schedule.tested_ranks();
    let mut sum = 0.0;
    for (a, &x) in ranks.iter().enumerate() {
        for &y in &ranks[a + 1..] {
            sum += per_level[layout.parting_level(x, y)];
        }
    }
    let pairs = schedule.pairs_per_sweep() * sweeps as usize;
    let pair_tests_s = sum * sweeps as f64;
    Estimate {
        wall_s: wall,
        pair_tests_s,
        pairs,
        concurrency: if wall > 0.0 { pair_tests_s / wall } else { 1.0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Link;

    #[test]
    fn a_pair_test_costs_at_least_its_round_trips() {
        let link = Link::linear(1.0, (0.5, 1000.0), (0.2, 1000.0), (0.2, 1000.0), 2.0);
        let options = PLogPOptions {
            reps: 10,
            ..PLogPOptions::new(1024)
        };
        let t = pair_test_us(&link, 4096, &options, 0.0);
        let rtts: f64 = options
            .sizes
            .iter()
            .map(|&m| 10.0 * link.at(m, 4096).rtt)
            .sum();
        assert!(t > 3.0 * rtts, "{t} against {rtts}");
        let more = PLogPOptions {
            reps: 20,
            ..options.clone()
        };
        assert!(pair_test_us(&link, 4096, &more, 0.0) > t);
        assert!(
            pair_test_us(&link, 4096, &options, 5.0) > t,
            "noise slows saturation"
        );
    }
}
