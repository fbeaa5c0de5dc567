//! The time estimate against real pair tests: the PLogP procedures over the in-process
//! transport with a link model of known delays (milliseconds, so that the machine's own noise
//! does not matter) take the time `pair_test_us` predicts for the parameters they measure,
//! within a factor of 1.5 (the estimate leaves out per-message software costs and the
//! overlap of the two ranks' steps; on this transport it comes out 5-11 % high when the machine
//! is quiet, and up to 1.3 times low beside two CPU-bound processes on two cores: sleeps
//! overrun on a busy machine). The bound caught a stale model: the pair test warms up at the
//! largest size too, which the estimate had left out (it was 1.46-1.55 times low).

use std::time::{Duration, Instant};

use lgate_harness::{AnyPairTest, InProcessWorld, LinkModel, Pair, PingPong, Role, Transport};
use lgate_plogp_bench::{PLogP, PLogPOptions};
use lgate_simulate::estimate::{pair_test_us, screen_test_us};
use lgate_simulate::model::{Link, Piecewise};

const MS: f64 = 1e-3;
const LATENCY: f64 = 1.0 * MS;
const RECV: f64 = 0.2 * MS;
fn gap(m: usize) -> f64 {
    0.5 * MS + m as f64 * 1e-6
}

struct Known;

impl LinkModel for Known {
    fn latency(&self, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(LATENCY)
    }
    fn gap(&self, _: usize, _: usize, bytes: usize) -> Duration {
        Duration::from_secs_f64(gap(bytes))
    }
    fn send_overhead(&self, _: usize, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(0.1 * MS)
    }
    fn recv_overhead(&self, _: usize, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(RECV)
    }
}

/// The least wall time of runs of `test` between two ranks over the known network: at least
/// three, and more (ten, then on for up to a minute) while the least is still above 1.5 times
/// `predicted`. A busy
/// machine only ever adds time (descheduled threads, late wake-ups from the link model's
/// sleeps), and those sleeps are delays that nothing shortens, so the least run is the one
/// closest to what the model says, and running again can only bring it closer. A wrong
/// estimate stays wrong however often it runs. (Three runs were not enough once in CI: 1.71x
/// right after the emulated-cluster test, 0.90-0.95x alone.)
fn least_time(make: impl Fn() -> Box<dyn AnyPairTest + Send> + Sync, predicted: f64) -> f64 {
    let run = || {
        let world = InProcessWorld::new(2)
            .with_link_model(Known)
            .with_timeout(Duration::from_secs(60));
        world.run(|t| {
            let mut test = make();
            let role = if t.rank() == 0 {
                Role::Sender
            } else {
                Role::Receiver
            };
            let start = Instant::now();
            test.run(&t, Pair::new(0, 1), role).unwrap();
            start.elapsed().as_secs_f64()
        })[0]
    };
    // While the machine is slowed for a while (a clean-clone CI run on a KVM guest: ten runs
    // in a row at 1.58x, 2.4 s for the whole test just after), runs go on for up to a minute.
    let start = Instant::now();
    let mut least = f64::INFINITY;
    for k in 0..60 {
        least = least.min(run());
        let settled = k >= 2 && least <= 1.5 * predicted;
        if settled || (k >= 9 && start.elapsed() > Duration::from_secs(60)) {
            break;
        }
    }
    least
}

/// The link PLogP measures on this network (see the PLogP crate's known-network test): L plus
/// the receive overhead, o_s(m) = g(m) + 2 L, o_r = the receive overhead.
fn measured_link() -> Link {
    let us = |s: f64| s * 1e6;
    let line = |f: &dyn Fn(usize) -> f64| Piecewise(vec![(0.0, us(f(0))), (1024.0, us(f(1024)))]);
    Link {
        latency_us: us(LATENCY + RECV),
        g_us: line(&gap),
        os_us: line(&|m| gap(m) + 2.0 * LATENCY),
        or_us: line(&|_| RECV),
        rendezvous_us: 0.0,
        spread: 0.0,
    }
}

/// Asserts that `took` is within a factor 1.5 of `predicted`, either way.
fn within_one_and_a_half(what: &str, took: f64, predicted: f64) {
    let ratio = took / predicted;
    assert!(
        (0.67..=1.5).contains(&ratio),
        "{what} took {took:.3} s, the estimate says {predicted:.3} s (ratio {ratio:.2})"
    );
}

#[test]
fn the_screening_test_and_a_budgeted_pair_test_take_the_estimated_time() {
    // The staged plan's screening test: echoes at 0 and 1 KiB.
    let predicted = screen_test_us(&measured_link(), usize::MAX, &[0, 1024], 8) * 1e-6;
    let took = least_time(
        || Box::new(PingPong::new(vec![0, 1024], 8).unwrap()),
        predicted,
    );
    within_one_and_a_half("the screening test", took, predicted);
    // A PLogP test whose budget (0.15 s) is far below its 32 repetitions' time (about 1 s).
    let options = PLogPOptions {
        sizes: vec![0, 256, 1024],
        reps: 32,
        saturation_max_size: 256,
        adaptive: false,
        budget_s: Some(0.15),
        ..PLogPOptions::new(1024)
    };
    let predicted = pair_test_us(&measured_link(), usize::MAX, &options, 0.0) * 1e-6;
    let took = least_time(|| Box::new(PLogP::new(options.clone()).unwrap()), predicted);
    within_one_and_a_half("the budgeted pair test", took, predicted);
}

#[test]
fn a_pair_test_takes_the_estimated_time() {
    let options = PLogPOptions {
        sizes: vec![0, 256, 1024],
        reps: 6,
        saturation_max_size: 256,
        adaptive: false,
        budget_s: None,
        ..PLogPOptions::new(1024)
    };
    let predicted = pair_test_us(&measured_link(), usize::MAX, &options, 0.0) * 1e-6;
    let took = least_time(|| Box::new(PLogP::new(options.clone()).unwrap()), predicted);
    within_one_and_a_half("the pair test", took, predicted);
}
