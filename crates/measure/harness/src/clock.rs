//! The timer's overhead, measured with the busy() loop of Figure 3.7 (after Kielmann), and
//! removed from every timed sample of the pair tests.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// 300 increments that the compiler may not remove.
#[inline(never)]
fn busy() {
    let mut dummy = black_box(42u32);
    for _ in 0..300 {
        dummy = black_box(dummy.wrapping_add(1));
    }
    black_box(dummy);
}

/// The cost of reading the clock once around a timed region, in seconds: the least of five
/// averages of 1000 timed busy() calls, less the least of five averages of 1000 untimed ones.
pub fn measure_clock_overhead() -> f64 {
    const CALLS: u32 = 1000;
    const ROUNDS: usize = 5;
    let mut untimed = f64::INFINITY;
    let mut timed = f64::INFINITY;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..CALLS {
            busy();
        }
        untimed = untimed.min(start.elapsed().as_secs_f64() / CALLS as f64);

        let mut sum = Duration::ZERO;
        for _ in 0..CALLS {
            let s = Instant::now();
            busy();
            sum += s.elapsed();
        }
        timed = timed.min(sum.as_secs_f64() / CALLS as f64);
    }
    (timed - untimed).max(0.0)
}

/// This process's clock overhead, measured on first use.
pub fn clock_overhead() -> f64 {
    static OVERHEAD: OnceLock<f64> = OnceLock::new();
    *OVERHEAD.get_or_init(measure_clock_overhead)
}
