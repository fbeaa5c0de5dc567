//! The PLogP procedures measure back the parameters of a network whose delays are known: the
//! in-process transport with a link model (milliseconds, so that a loaded machine cannot blur
//! them).

use std::time::Duration;

use lgate_harness::{InProcessWorld, LinkModel, Pair, PairTest, Role, Transport};
use lgate_plogp_bench::{Estimator, PLogP, PLogPOptions, PairMeasurement, PairParams, Parameter};

const MS: f64 = 1e-3;
/// L.
const LATENCY: f64 = 2.0 * MS;
/// g(m) = 1 ms + 2 us per byte.
fn gap(m: usize) -> f64 {
    1.0 * MS + m as f64 * 2e-6
}
/// o_r(m).
const RECV: f64 = 0.3 * MS;
/// o_s(m).
const SEND: f64 = 0.2 * MS;

struct Known;

impl LinkModel for Known {
    fn latency(&self, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(LATENCY)
    }
    fn gap(&self, _: usize, _: usize, bytes: usize) -> Duration {
        Duration::from_secs_f64(gap(bytes))
    }
    fn send_overhead(&self, _: usize, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(SEND)
    }
    fn recv_overhead(&self, _: usize, _: usize, _: usize) -> Duration {
        Duration::from_secs_f64(RECV)
    }
}

fn within(name: &str, got: f64, expected: f64) {
    let err = (got - expected).abs() / expected;
    assert!(
        err <= 0.10,
        "{name}: measured {:.4} ms, expected {:.4} ms ({:.1} % off)",
        got / MS,
        expected / MS,
        err * 100.0
    );
}

/// One pair test over the known network.
fn measure(options: &PLogPOptions) -> (PairMeasurement, PairParams) {
    let world = InProcessWorld::new(2)
        .with_link_model(Known)
        .with_timeout(Duration::from_secs(60));
    let results = world.run(|t| {
        let mut test = PLogP::new(options.clone()).unwrap();
        let role = if t.rank() == 0 {
            Role::Sender
        } else {
            Role::Receiver
        };
        test.run(&t, Pair::new(0, 1), role).unwrap()
    });
    let m: PairMeasurement = serde_json::from_value(results[0].clone()).unwrap();
    let p = PairParams::from_measurement(0, Pair::new(0, 1), &m).unwrap();
    (m, p)
}

/// Every parameter within 10 % of the network's.
fn check_values(p: &PairParams) {
    let v = |param, size| p.value(param, size, Estimator::Median).unwrap();

    // What each procedure sees on this network (the model adds o_r to every receive):
    // RTT(m), m out and 0 back: g(m) + L + o_r + g(0) + L + o_r.
    for size in [0, 256, 1024] {
        within(
            &format!("RTT({size})"),
            v(Parameter::Rtt, size),
            2.0 * LATENCY + gap(size) + gap(0) + 2.0 * RECV,
        );
        // A synchronous send returns when the receiver's match is acknowledged: g(m) + 2 L.
        within(
            &format!("o_s({size})"),
            v(Parameter::Os, size),
            gap(size) + 2.0 * LATENCY,
        );
        within(&format!("o_r({size})"), v(Parameter::Or, size), RECV);
    }
    // Saturation finds g(m) itself.
    within("g(0)", v(Parameter::G, 0), gap(0));
    within("g(256)", v(Parameter::G, 256), gap(256));
    // Above the limit, g(m) = RTT(m) - RTT(0) + g(0): the model's o_r cancels out.
    within("g(1024), derived", v(Parameter::G, 1024), gap(1024));
    // L = (RTT(0) - 2 g(0)) / 2 = L + o_r on this network.
    within("L", v(Parameter::L, 0), LATENCY + RECV);
}

fn options() -> PLogPOptions {
    PLogPOptions {
        sizes: vec![0, 256, 1024],
        reps: 8,
        saturation_max_size: 256,
        adaptive: false,
        ..PLogPOptions::new(1024)
    }
}

#[test]
fn known_l_o_and_g_are_measured_back() {
    // The procedures as the thesis gives them: every repetition, saturation until it settles.
    let (m, p) = measure(&PLogPOptions {
        budget_s: None,
        ..options()
    });
    check_values(&p);
    assert!(m.sizes[0].g.as_ref().unwrap().converged);
    assert!(m
        .sizes
        .iter()
        .all(|s| s.rtt.count + s.rtt.warmup + s.rtt.outliers == 8));
}

#[test]
fn a_time_budget_cuts_repetitions_not_accuracy() {
    // 0.6 s for 3 sizes: 50 ms a procedure, where one round trip takes at least 6.6 ms here,
    // so at most about 10 of the 32 repetitions run; enough for a median that a loaded
    // machine's late wake-ups do not move (they hit single samples).
    let (m, p) = measure(&PLogPOptions {
        budget_s: Some(0.6),
        reps: 32,
        ..options()
    });
    check_values(&p);
    for s in &m.sizes {
        let reps = s.rtt.count + s.rtt.warmup + s.rtt.outliers;
        assert!(
            (3..32).contains(&reps),
            "{} repetitions at {} B",
            reps,
            s.size
        );
    }
}
