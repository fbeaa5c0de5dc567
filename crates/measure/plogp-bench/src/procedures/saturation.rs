//! g(m) by saturation: batches of messages sent back to back, doubled until two agree.

use super::*;

impl PLogP {
    /// Sends batches of n messages, doubling n until the time per message changes by less than
    /// epsilon, n reaches the cap, a batch lasts longer than 50 ms, or the next step would
    /// overrun `share`; then samples the time per message at that n again while `share` lasts
    /// (up to `saturation_reps` samples), and more while most batches were [`disturbed`] or
    /// slower per message than RTT(m); the samples' spread is recorded with the estimate.
    ///
    /// A batch is timed from the control message that announces it, which goes first on the
    /// same link: it takes g(24) + n g(m) + RTT(0) - g(0) (the announcement, the messages, the
    /// last one's latency and the reply). The estimate (T - RTT(0)) / n is then off by
    /// (g(24) - g(0)) / n, about nothing, where a clock started after the announcement would
    /// be off by whatever of its g(24) was left (as much as -g(0) / n), and T / n by
    /// RTT(0) / n. Each step takes the faster of two batches, since interruptions only ever add
    /// time.
    pub(super) fn saturate(
        &mut self,
        t: &dyn Transport,
        j: usize,
        m: usize,
        (c, rtt0, rtt): (f64, f64, f64),
        share: Option<Duration>,
        samples: &mut Vec<f64>,
    ) -> Result<Saturation, TransportError> {
        // c: the clock overhead; rtt0: RTT(0), the reply that ends each batch; rtt: RTT(m).
        let started = Instant::now();
        let cap = self.options.saturation_cap;
        let batch = |t: &dyn Transport,
                     n: usize,
                     buf: &mut [u8]|
         -> Result<(f64, Duration), TransportError> {
            let s = Instant::now();
            Self::control(t, j, PROC_SATURATE, m, n)?;
            for _ in 0..n {
                t.send(j, DATA, buf)?;
            }
            t.recv(j, DATA, &mut [])?;
            let took = s.elapsed();
            Ok((((took.as_secs_f64() - c - rtt0) / n as f64).max(0.0), took))
        };
        let step = |t: &dyn Transport,
                    n: usize,
                    buf: &mut [u8]|
         -> Result<(f64, Duration), TransportError> {
            let (a, ta) = batch(t, n, buf)?;
            let (b, tb) = batch(t, n, buf)?;
            Ok((a.min(b), ta.min(tb)))
        };
        let mut n = 10;
        let (mut previous, mut took) = step(t, n, &mut self.buf[..m])?;
        let mut converged = false;
        // A step of 2n messages takes about two batches of twice the last one's length.
        let affordable = |took: Duration| share.is_none_or(|s| started.elapsed() + 4 * took <= s);
        while n < cap && took <= MAX_BATCH && affordable(took) {
            n = (n * 2).min(cap);
            let (per, t_n) = step(t, n, &mut self.buf[..m])?;
            // Two estimates clamped to zero have not settled: the batch was too short to show
            // g above the noise of RTT(0), so n keeps growing.
            let settled =
                previous > 0.0 && (per - previous).abs() <= self.options.epsilon * previous;
            previous = per;
            took = t_n;
            if settled {
                converged = true;
                break;
            }
        }
        // The samples at the final n, and the time each batch took: a batch interrupted by the
        // scheduler takes milliseconds longer, which its time shows plainly and its time per
        // message only divided by n.
        samples.push(previous);
        let mut batch_times = vec![took.as_secs_f64()];
        let buf = &mut self.buf[..m];
        let mut sample = |samples: &mut Vec<f64>, batch_times: &mut Vec<f64>| {
            let (per, took) = batch(t, n, buf)?;
            samples.push(per);
            batch_times.push(took.as_secs_f64());
            Ok::<_, TransportError>(())
        };
        for _ in 1..self.options.saturation_reps {
            if share.is_some_and(|s| started.elapsed() + took > s) {
                break;
            }
            sample(samples, &mut batch_times)?;
        }
        // While most batches were interrupted, more, until most are not (within bounds).
        // Interrupted are also batches slower per message than a round trip of the same size
        // (RTT(m) = 2 L + g(m) + g(0) bounds g(m)) by more than two series of one link differ:
        // on shared memory g(m) is RTT(m) within noise from 32 KiB up, a copy either way.
        let regular = started.elapsed();
        let most = DISTURBED_REPS_FACTOR * self.options.saturation_reps.max(MIN_REPS);
        let implausible = |samples: &[f64]| {
            Summary::of_steady(samples).is_some_and(|s| {
                s.median > rtt * (1.0 + SERIES_AGREEMENT) + DISTURBANCE_FLOOR_S / n as f64
            })
        };
        while samples.len() < most
            && started.elapsed() < regular + DISTURBED_EXTRA_TIME
            && (implausible(samples)
                || disturbed(
                    &Summary::of_steady(&batch_times).expect("a batch"),
                    f64::INFINITY,
                ))
        {
            sample(samples, &mut batch_times)?;
        }
        let gap = Summary::of_steady(samples).expect("at least one sample");
        Ok(Saturation {
            gap,
            messages: n,
            converged,
        })
    }
}
