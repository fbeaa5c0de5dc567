//! Where a rank's time goes: waiting for other ranks, busy, or (rank 0) collecting results,
//! in wall and CPU time.

use std::time::{Duration, Instant};

use crate::{cpu_time, CpuScope};

/// One rank's wall and CPU time while waiting for others and while busy (testing or
/// broadcasting), in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeSplit {
    /// Wall time spent waiting.
    pub waiting_s: f64,
    /// CPU time used while waiting.
    pub waiting_cpu_s: f64,
    /// Wall time spent busy.
    pub busy_s: f64,
    /// CPU time used while busy.
    pub busy_cpu_s: f64,
    /// Wall time spent collecting other ranks' results (rank 0's bookkeeping, a relay's).
    pub collecting_s: f64,
    /// CPU time used while collecting.
    pub collecting_cpu_s: f64,
}

/// What a rank is doing between two readings of its clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Waiting for other ranks: barriers, handoffs, results not yet sent.
    Waiting,
    /// Running a pair test, a timed broadcast or another timed step.
    Busy,
    /// Rank 0's bookkeeping (receiving results, writing them to the journal, choosing stages),
    /// and a host's first rank relaying its host's results.
    Collecting,
}

/// Adds up one rank's wall and CPU time per [`Activity`].
#[derive(Debug)]
pub struct RankClock {
    time: TimeSplit,
    scope: CpuScope,
    wall: Instant,
    cpu: Duration,
}

impl RankClock {
    /// A clock reading the CPU time of `scope`, started now.
    pub fn start(scope: CpuScope) -> Self {
        RankClock {
            time: TimeSplit::default(),
            scope,
            wall: Instant::now(),
            cpu: cpu_time(scope),
        }
    }

    /// Charges the time since the last call (or the start) to `activity`.
    pub fn charge(&mut self, activity: Activity) {
        let (wall, cpu) = (Instant::now(), cpu_time(self.scope));
        let dw = wall.duration_since(self.wall).as_secs_f64();
        let dc = cpu.saturating_sub(self.cpu).as_secs_f64();
        match activity {
            Activity::Waiting => {
                self.time.waiting_s += dw;
                self.time.waiting_cpu_s += dc;
            }
            Activity::Busy => {
                self.time.busy_s += dw;
                self.time.busy_cpu_s += dc;
            }
            Activity::Collecting => {
                self.time.collecting_s += dw;
                self.time.collecting_cpu_s += dc;
            }
        }
        self.wall = wall;
        self.cpu = cpu;
    }

    /// The totals so far.
    pub fn totals(&self) -> TimeSplit {
        self.time
    }
}

/// Sends every rank's time to rank 0, which returns them in rank order (the others an empty
/// list). Every rank calls it.
pub fn gather_time_splits(
    t: &dyn crate::Transport,
    mine: TimeSplit,
) -> Result<Vec<TimeSplit>, crate::TransportError> {
    let encode = |s: &TimeSplit| -> Vec<u8> {
        [
            s.waiting_s,
            s.waiting_cpu_s,
            s.busy_s,
            s.busy_cpu_s,
            s.collecting_s,
            s.collecting_cpu_s,
        ]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
    };
    if t.rank() != 0 {
        t.send_polite(0, crate::Tag::USAGE, &encode(&mine))?;
        return Ok(Vec::new());
    }
    let mut out = vec![mine];
    for r in 1..t.size() {
        let bytes = t.recv_vec(r, crate::Tag::USAGE)?;
        if bytes.len() != 48 {
            return Err(crate::TransportError::Protocol {
                rank: 0,
                message: format!(
                    "rank {r} sent a time record of {} bytes, not 48",
                    bytes.len()
                ),
            });
        }
        let x = |k: usize| f64::from_le_bytes(bytes[8 * k..8 * k + 8].try_into().expect("8 bytes"));
        out.push(TimeSplit {
            waiting_s: x(0),
            waiting_cpu_s: x(1),
            busy_s: x(2),
            busy_cpu_s: x(3),
            collecting_s: x(4),
            collecting_cpu_s: x(5),
        });
    }
    Ok(out)
}

/// Every rank's time (in rank order) as meta.json records it: busy is testing.
pub fn rank_times(splits: Vec<TimeSplit>) -> Vec<lgate_rundir::RankTime> {
    splits
        .into_iter()
        .enumerate()
        .map(|(rank, split)| lgate_rundir::RankTime {
            rank,
            waiting_s: split.waiting_s,
            waiting_cpu_s: split.waiting_cpu_s,
            testing_s: split.busy_s,
            testing_cpu_s: split.busy_cpu_s,
            collecting_s: split.collecting_s,
            collecting_cpu_s: split.collecting_cpu_s,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;

    #[test]
    fn rank_0_gathers_every_ranks_time_in_order() {
        let got = crate::InProcessWorld::new(3).run(|t| {
            let mine = TimeSplit {
                waiting_s: t.rank() as f64,
                busy_cpu_s: 0.5,
                ..TimeSplit::default()
            };
            gather_time_splits(&t, mine).unwrap()
        });
        assert_eq!(got[0].len(), 3);
        assert_eq!(got[0][2].waiting_s, 2.0);
        assert_eq!(got[0][1].busy_cpu_s, 0.5);
        assert!(got[1].is_empty() && got[2].is_empty());
    }

    #[test]
    fn busy_work_is_charged_and_sleep_is_not() {
        let mut clock = RankClock::start(CpuScope::Thread);
        let until = Instant::now() + Duration::from_millis(60);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        clock.charge(Activity::Busy);
        std::thread::sleep(Duration::from_millis(60));
        clock.charge(Activity::Waiting);
        let t = clock.totals();
        assert!(t.busy_s >= 0.06 && t.waiting_s >= 0.06, "{t:?}");
        // Spinning for 60 ms costs CPU time (at least a fifth of it even on a loaded machine,
        // where the spin is descheduled); sleeping 60 ms costs next to nothing (a tenth is a
        // margin that scheduler noise cannot reach: the thread is not runnable).
        assert!(t.busy_cpu_s > 0.012, "{t:?}");
        assert!(t.waiting_cpu_s < 0.006, "{t:?}");
        assert!(x > 0);
    }
}
