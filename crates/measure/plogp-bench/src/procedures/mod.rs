//! The PLogP pair test: RTT(m), o_s(m), o_r(m) and g(m) between a sender i and a receiver j,
//! following section 3.1.2 of the reference thesis (after Kielmann et al.).
//!
//! The sender drives: before each procedure it sends the receiver a control message (which
//! procedure, which size, how many messages), so both sides agree on every size, including the
//! ones the adaptive refinement adds. Control messages are outside timed code.
//!
//! RTT(m) is m bytes out and an empty reply back, as in Kielmann's PLogP: that is the round trip
//! for which RTT(m) = 2 L + g(m) + g(0), which equations 3.1 (g(m) above the saturation limit)
//! and 3.2 (L) rely on. (The thesis's figures echo m bytes, which would make the derived g(m)
//! nearly 2 g(m) - g(0).) o_r(m) times the receive of an m-byte reply, so its wait is k times
//! the round trip of that same exchange, calibrated with a few untimed exchanges first.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use lgate_harness::{Pair, PairTest, Role, Summary, Tag, Transport, TransportError};

pub use lgate_rundir::{PLogPOptions, PairMeasurement, RawSamples, Saturation, SizeResult};

use crate::clock::{clock_overhead, spin_until};

mod receiver;
mod saturation;

/// Procedure codes of control messages.
const PROC_END: u64 = 0;
const PROC_RTT: u64 = 1;
const PROC_OS: u64 = 2;
const PROC_OR: u64 = 3;
const PROC_SATURATE: u64 = 4;
const PROC_WARMUP: u64 = 5;

/// Untimed echoes and synchronous sends before a pair's first timed message, at 0 bytes and at
/// the largest size: connections, buffers and caches warm up here rather than in RTT(0) and
/// o_s(0).
const PAIR_WARMUP: usize = 16;

/// A saturation batch longer than this stops the doubling of n: the estimate is then averaged
/// over enough time, and a noisy link cannot run a batch of 37500 large messages.
const MAX_BATCH: Duration = Duration::from_millis(50);

/// Untimed m-byte echoes that set the wait of the o_r(m) procedure.
const OR_CALIBRATION: usize = 3;

/// Repetitions a procedure always runs, however short its time share: three samples for a
/// median (a series this short has no warm-up left out).
const MIN_REPS: usize = 3;

/// A series whose median is at least this many times its fastest sample...
const DISTURBED_FACTOR: f64 = 2.0;
/// ...and slower than it by more than this (seconds) is disturbed: most of its samples were
/// interrupted (a rank descheduled for a time slice on a busy machine), so its median is not the
/// operation's time. Scheduler time slices are milliseconds; the variation of a quiet operation,
/// even over a network, stays well below this.
const DISTURBANCE_FLOOR_S: f64 = 5e-6;
/// Two series of one link (RTT(m) and g(m)) measured by turns agree within this fraction of
/// their medians when nothing disturbed them.
const SERIES_AGREEMENT: f64 = 0.1;
/// A disturbed series takes more samples until most are undisturbed, at most this many times
/// its repetitions...
const DISTURBED_REPS_FACTOR: usize = 8;
/// ...and for at most this long beyond its time share.
const DISTURBED_EXTRA_TIME: Duration = Duration::from_millis(60);

/// Whether most samples of a series were disturbed (see [`DISTURBED_FACTOR`]), judged against
/// its fastest sample or a `fastest` time of the same operation seen before, whichever is less.
fn disturbed(s: &Summary, fastest: f64) -> bool {
    let fastest = s.min.min(fastest);
    s.median >= DISTURBED_FACTOR * fastest && s.median - fastest > DISTURBANCE_FLOOR_S
}

/// o_r(m), the receive of one m-byte message, takes less than this many echoes of m bytes
/// both ways (the fastest calibration echo): an eager message has arrived and is copied once; a
/// rendezvous receive moves the message then, and on shared memory (Open MPI 4.1, 24 KiB to
/// 2 MiB) took up to 1.5 echoes, 3.5 times RTT(m). A series above it was interrupted (a yield
/// that handed the core to another process made 1-5 us receives take 10-40 us).
const OR_CEILING_ECHOES: f64 = 3.0;

/// What is known of a series' undisturbed samples before it is taken.
#[derive(Debug, Clone, Copy)]
struct Expected {
    /// The fastest exchange of the same kind seen before (a timed warm-up), if any.
    fastest: f64,
    /// A bound on the operation's time that only a disturbed sample passes (see
    /// [`OR_CEILING_ECHOES`]).
    ceiling: f64,
}

impl Expected {
    /// Nothing known.
    const NOTHING: Expected = Expected {
        fastest: f64::INFINITY,
        ceiling: f64::INFINITY,
    };

    /// Whether most samples of the series `s` were disturbed ([`disturbed`]), or its median
    /// passes the ceiling by more than [`DISTURBANCE_FLOOR_S`].
    fn disturbed(&self, s: &Summary) -> bool {
        disturbed(s, self.fastest) || s.median > self.ceiling + DISTURBANCE_FLOOR_S
    }
}

/// The procedures of one size that share its time: RTT, o_s, o_r and g.
const PROCEDURES_PER_SIZE: u32 = 4;

const CONTROL: Tag = Tag(Tag::TEST.0);
const DATA: Tag = Tag(Tag::TEST.0 + 1);

/// The PLogP pair test.
#[derive(Debug, Clone)]
pub struct PLogP {
    options: PLogPOptions,
    buf: Vec<u8>,
    /// The current pair's fastest warm-up exchanges by procedure and size: RTT(0) and o_s at
    /// 0 bytes and the largest size, the same operations as the timed ones.
    fastest: BTreeMap<(u64, usize), f64>,
}

/// Why PLogP options cannot make a measurement; each names the field of [`PLogPOptions`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// `reps` refused.
    #[error("reps {0}")]
    Reps(lgate_stats::CountError),
    /// `or_wait` below 1 or not finite.
    #[error("or_wait must be at least 1 (the sender waits k x RTT before the receive), not {0}")]
    OrWait(f64),
    /// `epsilon` outside (0, 1).
    #[error("epsilon must be between 0 and 1, not {0}")]
    Epsilon(f64),
    /// `sizes` without 0.
    #[error("the sizes must include 0: L and g(m) above the saturation limit need RTT(0)")]
    NoZeroSize,
    /// `budget_s` not above 0 seconds.
    #[error("budget_s must be above 0 seconds, not {0}")]
    Budget(f64),
    /// `saturation_cap` under 10 or `saturation_reps` 0.
    #[error(
        "saturation needs a cap of at least 10 messages and at least 1 sample (cap {cap}, \
         samples {reps})"
    )]
    Saturation {
        /// `saturation_cap`.
        cap: usize,
        /// `saturation_reps`.
        reps: usize,
    },
}

impl PLogP {
    /// A PLogP test; checks the options.
    pub fn new(mut options: PLogPOptions) -> Result<Self, OptionsError> {
        lgate_stats::check_repetitions(options.reps).map_err(OptionsError::Reps)?;
        if !(options.or_wait >= 1.0 && options.or_wait.is_finite()) {
            return Err(OptionsError::OrWait(options.or_wait));
        }
        if !(options.epsilon > 0.0 && options.epsilon < 1.0) {
            return Err(OptionsError::Epsilon(options.epsilon));
        }
        options.sizes.sort_unstable();
        options.sizes.dedup();
        if options.sizes.first() != Some(&0) {
            return Err(OptionsError::NoZeroSize);
        }
        if let Some(b) = options.budget_s.filter(|b| !(*b > 0.0 && b.is_finite())) {
            return Err(OptionsError::Budget(b));
        }
        if options.saturation_cap < 10 || options.saturation_reps == 0 {
            return Err(OptionsError::Saturation {
                cap: options.saturation_cap,
                reps: options.saturation_reps,
            });
        }
        let largest = *options.sizes.last().expect("0 is a size");
        Ok(PLogP {
            buf: vec![0xa5; largest.max(1)],
            fastest: BTreeMap::new(),
            options,
        })
    }

    /// The options.
    pub fn options(&self) -> &PLogPOptions {
        &self.options
    }

    fn control(
        t: &dyn Transport,
        to: usize,
        procedure: u64,
        size: usize,
        count: usize,
    ) -> Result<(), TransportError> {
        let mut msg = [0u8; 24];
        msg[..8].copy_from_slice(&procedure.to_le_bytes());
        msg[8..16].copy_from_slice(&(size as u64).to_le_bytes());
        msg[16..].copy_from_slice(&(count as u64).to_le_bytes());
        t.send(to, CONTROL, &msg)
    }

    fn sender(&mut self, t: &dyn Transport, j: usize) -> Result<PairMeasurement, TransportError> {
        let c = clock_overhead();
        let largest = *self.options.sizes.last().expect("0 is a size");
        // Warm-up, timed only to know how fast an undisturbed exchange can be: a 0-byte echo
        // is RTT(0), and the synchronous sends are o_s at their sizes.
        self.fastest.clear();
        for m in [0, largest] {
            let mut fastest = |procedure: u64, took: f64| {
                let e = self.fastest.entry((procedure, m)).or_insert(f64::INFINITY);
                *e = e.min((took - c).max(0.0));
            };
            Self::control(t, j, PROC_WARMUP, m, PAIR_WARMUP)?;
            for _ in 0..PAIR_WARMUP {
                let s = Instant::now();
                t.send(j, DATA, &self.buf[..m])?;
                t.recv(j, DATA, &mut self.buf[..m])?;
                if m == 0 {
                    fastest(PROC_RTT, s.elapsed().as_secs_f64());
                }
            }
            // The synchronous path (o_s) has its own protocol to warm up.
            Self::control(t, j, PROC_OS, m, PAIR_WARMUP)?;
            for _ in 0..PAIR_WARMUP {
                t.recv(j, DATA, &mut [])?;
                let s = Instant::now();
                t.ssend(j, DATA, &self.buf[..m])?;
                fastest(PROC_OS, s.elapsed().as_secs_f64());
            }
        }
        let mut measured: BTreeMap<usize, SizeResult> = BTreeMap::new();
        // Each base size's procedures share the budget evenly; midpoints take the same share
        // while the budget lasts.
        let start = Instant::now();
        let budget = self.options.budget_s.map(Duration::from_secs_f64);
        let share =
            budget.map(|b| b / (self.options.sizes.len() as u32).max(1) / PROCEDURES_PER_SIZE);
        for &m in &self.options.sizes.clone() {
            let r = self.measure_size(t, j, m, c, share, &measured)?;
            measured.insert(m, r);
        }
        if self.options.adaptive {
            let deadline = budget.map(|b| start + b);
            self.refine(t, j, c, share, deadline, &mut measured)?;
        }
        Self::control(t, j, PROC_END, 0, 0)?;
        Ok(PairMeasurement {
            clock_overhead_s: c,
            sizes: measured.into_values().collect(),
        })
    }

    /// Adds midpoints where a size misses the linear interpolation of its neighbours by more
    /// than epsilon and by more than its own spread, until neighbours are `adaptive_min_gap`
    /// bytes apart, the midpoint budget is spent, or the time budget's `deadline` has passed.
    fn refine(
        &mut self,
        t: &dyn Transport,
        j: usize,
        c: f64,
        share: Option<Duration>,
        deadline: Option<Instant>,
        measured: &mut BTreeMap<usize, SizeResult>,
    ) -> Result<(), TransportError> {
        let mut budget = self.options.adaptive_budget;
        let mut checked: BTreeSet<usize> = BTreeSet::new();
        loop {
            let keys: Vec<usize> = measured.keys().copied().collect();
            let mut wanted = Vec::new();
            for w in keys.windows(3) {
                let (a, b, cc) = (w[0], w[1], w[2]);
                if !checked.insert(b)
                    || !self.deviates(&measured[&a], &measured[&b], &measured[&cc])
                {
                    continue;
                }
                for (x, y) in [(a, b), (b, cc)] {
                    if y - x > self.options.adaptive_min_gap {
                        wanted.push(x + (y - x) / 2);
                    }
                }
            }
            wanted.sort_unstable();
            wanted.dedup();
            wanted.retain(|m| !measured.contains_key(m));
            if wanted.is_empty() || budget == 0 {
                return Ok(());
            }
            for m in wanted.into_iter().take(budget) {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(());
                }
                budget -= 1;
                let mut r = self.measure_size(t, j, m, c, share, measured)?;
                r.adaptive = true;
                measured.insert(m, r);
            }
        }
    }

    fn deviates(&self, a: &SizeResult, b: &SizeResult, c: &SizeResult) -> bool {
        let frac = (b.size - a.size) as f64 / (c.size - a.size) as f64;
        let pick: [fn(&SizeResult) -> &Summary; 3] = [|r| &r.rtt, |r| &r.os, |r| &r.or];
        pick.iter().any(|p| {
            let (va, vb, vc) = (p(a), p(b), p(c));
            let expected = va.median + (vc.median - va.median) * frac;
            let miss = (vb.median - expected).abs();
            let noise = (vb.p90 - vb.p10) / 2.0;
            miss > self.options.epsilon * expected.abs() && miss > noise
        })
    }

    /// RTT, o_s, o_r and (up to the saturation limit) g at `m` bytes with peer `j`, each timed
    /// exchange less the clock's overhead `c`, in `share` of time each if given.
    fn measure_size(
        &mut self,
        t: &dyn Transport,
        j: usize,
        m: usize,
        c: f64,
        share: Option<Duration>,
        measured: &BTreeMap<usize, SizeResult>,
    ) -> Result<SizeResult, TransportError> {
        let fastest = |procedure| {
            self.fastest
                .get(&(procedure, m))
                .copied()
                .unwrap_or(f64::INFINITY)
        };
        let (fastest_rtt, fastest_os) = (fastest(PROC_RTT), fastest(PROC_OS));
        let series = Series {
            t,
            j,
            m,
            c,
            reps: self.options.reps,
            share,
        };
        let buf = &mut self.buf[..m];
        let rtt = series.rtt(buf, fastest_rtt)?;
        let rtt_summary = summary(&rtt);
        let os = series.os(buf, fastest_os)?;
        let or = series.or(buf, self.options.or_wait)?;

        // g(m): link saturation, up to the limit.
        let mut g_samples = Vec::new();
        let g = if m <= self.options.saturation_max_size {
            let rtt0 = if m == 0 {
                rtt_summary.median
            } else {
                measured
                    .get(&0)
                    .map_or(rtt_summary.median, |r| r.rtt.median)
            };
            Some(self.saturate(
                t,
                j,
                m,
                (c, rtt0, rtt_summary.median),
                share,
                &mut g_samples,
            )?)
        } else {
            None
        };
        let raw = self.options.raw.then(|| RawSamples {
            rtt: rtt.clone(),
            os: os.clone(),
            or: or.clone(),
            g: g_samples,
        });
        Ok(SizeResult {
            size: m,
            rtt: rtt_summary,
            os: summary(&os),
            or: summary(&or),
            g,
            adaptive: false,
            raw,
        })
    }
}

/// One size's timed series with one peer: what every procedure's repetitions share.
struct Series<'t> {
    t: &'t dyn Transport,
    /// The peer.
    j: usize,
    /// The message size in bytes.
    m: usize,
    /// The clock's overhead, taken off every sample.
    c: f64,
    reps: usize,
    /// The time each procedure may take, if limited.
    share: Option<Duration>,
}

impl Series<'_> {
    /// RTT(m): m bytes out, an empty reply back.
    fn rtt(&self, buf: &mut [u8], fastest: f64) -> Result<Vec<f64>, TransportError> {
        let (t, j, c) = (self.t, self.j, self.c);
        let expected = Expected {
            fastest,
            ..Expected::NOTHING
        };
        self.repeat(PROC_RTT, expected, || {
            let s = Instant::now();
            t.send(j, DATA, buf)?;
            t.recv(j, DATA, &mut [])?;
            Ok((s.elapsed().as_secs_f64() - c).max(0.0))
        })
    }

    /// o_s(m): a synchronous send to a receiver that is waiting for it.
    fn os(&self, buf: &mut [u8], fastest: f64) -> Result<Vec<f64>, TransportError> {
        let (t, j, c) = (self.t, self.j, self.c);
        let expected = Expected {
            fastest,
            ..Expected::NOTHING
        };
        self.repeat(PROC_OS, expected, || {
            t.recv(j, DATA, &mut [])?;
            let s = Instant::now();
            t.ssend(j, DATA, buf)?;
            Ok((s.elapsed().as_secs_f64() - c).max(0.0))
        })
    }

    /// o_r(m): the receiver echoes m bytes at once; the sender waits `or_wait` times the round
    /// trip of that exchange, then times the receive of a message that has arrived.
    fn or(&self, buf: &mut [u8], or_wait: f64) -> Result<Vec<f64>, TransportError> {
        let (t, j, c) = (self.t, self.j, self.c);
        PLogP::control(t, j, PROC_OR, self.m, OR_CALIBRATION)?;
        let mut echo = Vec::with_capacity(OR_CALIBRATION);
        for _ in 0..OR_CALIBRATION {
            let s = Instant::now();
            t.send(j, DATA, buf)?;
            t.recv(j, DATA, buf)?;
            echo.push(s.elapsed().as_secs_f64());
        }
        echo.sort_by(f64::total_cmp);
        let wait = Duration::from_secs_f64(or_wait * echo[OR_CALIBRATION / 2]);
        let offer_core = t.yields_while_waiting();
        let expected = Expected {
            ceiling: OR_CEILING_ECHOES * echo[0],
            ..Expected::NOTHING
        };
        self.repeat(PROC_OR, expected, || {
            let s = Instant::now();
            t.send(j, DATA, buf)?;
            spin_until(s + wait, offer_core);
            // No probe first: between the eager and rendezvous limits a message arrives in
            // fragments, and a probe that sees the first would start the clock too early.
            let r = Instant::now();
            t.recv(j, DATA, buf)?;
            Ok((r.elapsed().as_secs_f64() - c).max(0.0))
        })
    }

    /// Runs `rep` (one timed repetition of `procedure`, returning its sample) `reps` times,
    /// announced to the receiver in chunks, or fewer once `share` is spent (never fewer than
    /// 3); then, while the series is disturbed (against what is `expected` of it), more in
    /// chunks of 3, up to [`DISTURBED_REPS_FACTOR`] times `reps` and [`DISTURBED_EXTRA_TIME`].
    fn repeat(
        &self,
        procedure: u64,
        expected: Expected,
        mut rep: impl FnMut() -> Result<f64, TransportError>,
    ) -> Result<Vec<f64>, TransportError> {
        let (t, j, m, reps) = (self.t, self.j, self.m, self.reps);
        let mut samples = Vec::with_capacity(reps);
        let start = Instant::now();
        let mut run = |chunk: usize, samples: &mut Vec<f64>| -> Result<(), TransportError> {
            PLogP::control(t, j, procedure, m, chunk)?;
            for _ in 0..chunk {
                samples.push(rep()?);
            }
            Ok(())
        };
        let mut chunk = match self.share {
            Some(_) => reps.min(MIN_REPS),
            None => reps,
        };
        while chunk > 0 {
            run(chunk, &mut samples)?;
            let done = samples.len();
            let Some(share) = self.share else { break };
            let spent = start.elapsed();
            let per_rep = spent / done as u32;
            let fit = share
                .saturating_sub(spent)
                .as_nanos()
                .checked_div(per_rep.as_nanos().max(1))
                .unwrap_or(0);
            chunk = (reps - done).min(fit as usize);
        }
        let regular = start.elapsed();
        let most = DISTURBED_REPS_FACTOR * reps.max(MIN_REPS);
        while samples.len() < most
            && start.elapsed() < regular + DISTURBED_EXTRA_TIME
            && expected.disturbed(&summary(&samples))
        {
            run(MIN_REPS.min(most - samples.len()), &mut samples)?;
        }
        Ok(samples)
    }
}

fn summary(samples: &[f64]) -> Summary {
    Summary::of(samples).expect("at least one repetition")
}

impl PairTest for PLogP {
    type Parameters = PLogPOptions;
    type Record = PairMeasurement;

    fn parameters(&self) -> PLogPOptions {
        self.options.clone()
    }

    fn test(
        &mut self,
        t: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<PairMeasurement>, TransportError> {
        match role {
            Role::Sender => Ok(Some(self.sender(t, pair.j)?)),
            Role::Receiver => {
                self.receiver(t, pair.i)?;
                Ok(None)
            }
        }
    }
}
