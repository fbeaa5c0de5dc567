//! The timer and its overhead, measured with the busy() loop of Figure 3.7 (after Kielmann).

use std::time::Instant;

pub use lgate_harness::clock::{clock_overhead, measure_clock_overhead};

/// Waits until `deadline` by polling the clock; with `offer_core`, offering the core to other
/// runnable processes on each turn, so that a peer sharing the core gets to run (and reply)
/// instead of waiting for the next scheduler tick. Without it the wait is a pure spin: beside
/// a CPU-bound process, each offer hands it a whole time slice, and the timed receive that
/// follows then costs 10-40 us instead of 1-5 (measured here with a spinner per core).
pub fn spin_until(deadline: Instant, offer_core: bool) {
    while Instant::now() < deadline {
        if offer_core {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_small_and_not_negative() {
        let c = measure_clock_overhead();
        assert!((0.0..5e-6).contains(&c), "clock overhead {c} s");
    }
}
