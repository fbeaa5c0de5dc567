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
//! With a time budget B (`--pair-budget`), each procedure of a size gets B / sizes / 4: it
//! runs min(R, max(3, what fits)) repetitions, and saturation stops doubling once the next
//! step would overrun it. Adaptive midpoints count as 16 more sizes of the average size's
//! time (the most the test adds), within what is left of the budget.
//!
//! Each pair also warms up at 0 bytes and at the largest size M (16 echoes of m bytes both ways
//! and 16 synchronous sends after a ready signal, each size announced by two control
//! messages), and each pair of a group is preceded by a dissemination barrier of the group:
//! ceil(log2 n) rounds of one 0-byte message over the slowest link, plus 2 us of software per
//! round.
//!
//! The staged plan's screening test (ping-pong) costs R' echoes of m bytes both ways,
//! 2 L + 2 g(m), at each screening size; its stages run as `StagedPlan::screening_time` lays
//! them out, then the alone re-tests and the sample's full tests one at a time.

use lgate_harness::{Schedule, StagedPlan};
use lgate_plogp_bench::PLogPOptions;

use crate::layout::Layout;
use crate::model::{Link, MachineModel};

/// Software time per barrier round, microseconds.
const BARRIER_ROUND_SOFTWARE_US: f64 = 2.0;

/// Warm-up exchanges of each kind at each warm-up size (as the pair test).
const PAIR_WARMUP: f64 = 16.0;

/// Repetitions a procedure runs however short its share of the budget (as the pair test).
const MIN_REPS: f64 = 3.0;

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
    /// A staged run's wall time per stage (hosts, between, refine, alone, sample), seconds;
    /// zeros for the full plan. Refinement depends on the values measured and is not counted.
    pub stage_wall_s: [f64; 5],
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
    let budget_us = options.budget_s.map(|b| b * 1e6);
    let share = budget_us.map(|b| b / options.sizes.len().max(1) as f64 / 4.0);
    // A procedure of R repetitions of `one`, cut to its share of the budget (at least 3).
    let cut = |one: f64| match share {
        Some(s) => (r * one).min((MIN_REPS * one).max(s)),
        None => r * one,
    };
    // An echo of m bytes both ways.
    let echo = |m: usize| 2.0 * link.latency_us + 2.0 * link.at(m, eager_limit).g;
    let largest = options.sizes.last().copied().unwrap_or(0);
    let warm_sizes: &[usize] = if largest == 0 { &[0] } else { &[0, largest] };
    let warmup: f64 = warm_sizes
        .iter()
        .map(|&m| {
            let p = link.at(m, eager_limit);
            let exchange = if m == 0 { zero.rtt } else { echo(m) };
            2.0 * half + PAIR_WARMUP * (exchange + half + p.os.max(p.rtt))
        })
        .sum();
    let mut sizes_total = 0.0;
    for &m in &options.sizes {
        let p = link.at(m, eager_limit);
        let echo = echo(m);
        sizes_total += 4.0 * half;
        sizes_total += cut(p.rtt);
        sizes_total += cut(half + p.os.max(p.rtt));
        sizes_total += 3.0 * echo + cut(options.or_wait * echo + p.or);
        if m <= options.saturation_max_size {
            sizes_total += saturation_us(p.g, zero.rtt, jitter_us, share, options);
        }
    }
    let total = warmup + sizes_total;
    if !options.adaptive {
        return total;
    }
    // Midpoints: up to `adaptive_budget` more sizes, each about as long as the average size,
    // while the time budget lasts.
    let midpoints =
        options.adaptive_budget as f64 * sizes_total / options.sizes.len().max(1) as f64;
    match budget_us {
        Some(b) => total + midpoints.min((b - total).max(0.0)),
        None => total + midpoints,
    }
}

/// The time of one screening test (ping-pong at `sizes`, `reps` echoes each) over `link`,
/// microseconds.
pub fn screen_test_us(link: &Link, eager_limit: usize, sizes: &[usize], reps: usize) -> f64 {
    sizes
        .iter()
        .map(|&m| {
            let p = link.at(m, eager_limit);
            reps as f64 * (2.0 * link.latency_us + 2.0 * p.g)
        })
        .sum()
}

/// The time link saturation takes at a gap of `g`, microseconds.
fn saturation_us(
    g: f64,
    rtt0: f64,
    jitter_us: f64,
    share: Option<f64>,
    options: &PLogPOptions,
) -> f64 {
    let batch = |n: usize| n as f64 * g + rtt0;
    let cap = options.saturation_cap;
    let settles = jitter_us / options.epsilon;
    let mut n = 10;
    let mut total = 2.0 * batch(n);
    let affordable = |total: f64, n: usize| share.is_none_or(|s| total + 4.0 * batch(n) <= s);
    while n < cap && batch(n) <= 50_000.0 && affordable(total, n) {
        n = (n * 2).min(cap);
        total += 2.0 * batch(n);
        if n as f64 * g >= settles {
            break;
        }
    }
    let mut extra = 0;
    while extra + 1 < options.saturation_reps && share.is_none_or(|s| total + batch(n) <= s) {
        total += batch(n);
        extra += 1;
    }
    total
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
    let barrier = barrier_time(model);
    let pair_time = |p: lgate_harness::Pair| per_level[layout.parting_level(p.i, p.j)];
    let wall = schedule.critical_path(pair_time, &barrier) * sweeps as f64;
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
        stage_wall_s: [0.0; 5],
    }
}

/// The screening test of a staged plan: ping-pong sizes and repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenTest {
    /// Message sizes, bytes.
    pub sizes: Vec<usize>,
    /// Echoes per size.
    pub reps: usize,
}

/// The predicted time of a real staged run with `options` (the full test of the sample) and
/// `screen` on `model`'s machine placed as `layout`, under `plan`. The sample's pairs are
/// chosen from measured values, so the estimate takes the slowest level's pair test for the
/// pairs between groups and the fastest's for those inside.
pub fn estimate_staged(
    model: &MachineModel,
    layout: &Layout,
    options: &PLogPOptions,
    screen: &ScreenTest,
    plan: &StagedPlan,
    sweeps: u32,
) -> Estimate {
    let eager = model.eager_limit_bytes;
    let links: Vec<&Link> = model.levels.iter().map(|l| &model.links[&l.name]).collect();
    let screen_s: Vec<f64> = links
        .iter()
        .map(|l| screen_test_us(l, eager, &screen.sizes, screen.reps) * 1e-6)
        .collect();
    let full_s: Vec<f64> = links
        .iter()
        .map(|l| {
            let jitter = model.noise.batch_jitter_us + model.noise.sigma * l.at(0, eager).rtt;
            pair_test_us(l, eager, options, jitter) * 1e-6
        })
        .collect();
    let barrier = barrier_time(model);
    let level = |p: lgate_harness::Pair| layout.parting_level(p.i, p.j);
    let (inside, between) = plan.screening_time(|_, p| screen_s[level(p)], &barrier);
    let (tests_inside, tests_between) = plan.screening_tests_per_sweep();
    // The sum of the screening tests: stage 1 pairs by level, stage 2 as laid out.
    let mut screening_sum = 0.0;
    for g in plan.groups() {
        for (a, &x) in g.iter().enumerate() {
            for &y in &g[a + 1..] {
                screening_sum += screen_s[layout.parting_level(x, y)];
            }
        }
    }
    for a in 0..plan.groups().len() {
        for b in a + 1..plan.groups().len() {
            screening_sum += plan
                .meeting_pairs(a, b)
                .iter()
                .map(|&p| screen_s[level(p)])
                .sum::<f64>();
        }
    }
    let top = 0;
    let deepest = model.levels.len().saturating_sub(1);
    let c = plan.follow_up_counts();
    let (samples_between, alone_between) = (c.sample_between, c.alone_between + c.retest_between);
    let (alone_inside, samples_inside) = (c.alone_inside, c.sample_inside);
    let sample_wall = samples_inside as f64 * (full_s[deepest] + barrier(2))
        + samples_between as f64 * (full_s[top] + barrier(2));
    let alone_wall = alone_inside as f64 * (screen_s[deepest] + barrier(2))
        + alone_between as f64 * (screen_s[top] + barrier(2));
    let follow_up = sample_wall + alone_wall;
    let follow_up_sum = samples_inside as f64 * full_s[deepest]
        + samples_between as f64 * full_s[top]
        + alone_inside as f64 * screen_s[deepest]
        + alone_between as f64 * screen_s[top];
    let wall = (inside + between + follow_up) * sweeps as f64;
    let pair_tests_s = (screening_sum + follow_up_sum) * sweeps as f64;
    Estimate {
        wall_s: wall,
        pair_tests_s,
        pairs: (tests_inside
            + tests_between
            + alone_inside
            + alone_between
            + samples_inside
            + samples_between)
            * sweeps as usize,
        concurrency: if wall > 0.0 { pair_tests_s / wall } else { 1.0 },
        stage_wall_s: [inside, between, 0.0, alone_wall, sample_wall].map(|x| x * sweeps as f64),
    }
}

/// The time of a dissemination barrier among `n` ranks on `model`'s machine, seconds.
fn barrier_time(model: &MachineModel) -> impl Fn(usize) -> f64 {
    let slowest_one_way = model
        .links
        .values()
        .map(|l| l.at(0, model.eager_limit_bytes).rtt / 2.0)
        .fold(0.0, f64::max);
    move |n: usize| {
        let rounds = (n.max(1) as f64).log2().ceil();
        rounds * (slowest_one_way + BARRIER_ROUND_SOFTWARE_US) * 1e-6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Link;

    #[test]
    fn a_pair_test_costs_at_least_its_round_trips() {
        let link = Link::linear(1.0, (0.5, 1000.0), (0.2, 1000.0), (0.2, 1000.0), 2.0);
        // Every repetition, as without a budget.
        let options = PLogPOptions {
            reps: 10,
            budget_s: None,
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

    #[test]
    fn a_budget_cuts_repetitions_but_never_below_three() {
        // Round trips of about 2 ms: 32 repetitions of each procedure take far longer than a
        // 50 ms budget.
        let link = Link::linear(1000.0, (0.5, 1000.0), (0.2, 1000.0), (0.2, 1000.0), 2.0);
        let full = PLogPOptions {
            reps: 32,
            adaptive: false,
            budget_s: None,
            ..PLogPOptions::new(1024)
        };
        let budget = PLogPOptions {
            budget_s: Some(0.05),
            ..full.clone()
        };
        let unbounded = pair_test_us(&link, 4096, &full, 0.0);
        let bounded = pair_test_us(&link, 4096, &budget, 0.0);
        assert!(bounded < unbounded / 4.0, "{bounded} against {unbounded}");
        let floor: f64 = full.sizes.iter().map(|&m| 3.0 * link.at(m, 4096).rtt).sum();
        assert!(
            bounded > floor,
            "{bounded} against three round trips a size, {floor}"
        );
        // Midpoints add up to 16 sizes' time, and never run past the budget.
        let quick = Link::linear(0.5, (0.1, 10_000.0), (0.1, 10_000.0), (0.1, 10_000.0), 0.01);
        let adaptive = PLogPOptions {
            adaptive: true,
            ..budget.clone()
        };
        let plain = pair_test_us(&quick, 4096, &budget, 0.0);
        let with_midpoints = pair_test_us(&quick, 4096, &adaptive, 0.0);
        assert!(
            with_midpoints > plain && with_midpoints < 50_000.0,
            "{plain} us without midpoints, {with_midpoints} us with"
        );
        assert!(pair_test_us(&link, 4096, &adaptive, 0.0) <= bounded.max(50_000.0));
    }
}
