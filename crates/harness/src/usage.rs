//! Where a rank's time goes: waiting for its next step or testing, in wall and CPU time.

use std::time::{Duration, Instant};

use lgate_rundir::RankTime;
pub use lgate_transport::{cpu_time, CpuScope};

/// What a rank is doing between two readings of its clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Waiting for other ranks: barriers, collecting results.
    Waiting,
    /// Running a pair test or a timed step.
    Testing,
}

/// Adds up one rank's wall and CPU time per [`Activity`].
#[derive(Debug)]
pub struct RankClock {
    time: RankTime,
    scope: CpuScope,
    wall: Instant,
    cpu: Duration,
}

impl RankClock {
    /// A clock for `rank` reading the CPU time of `scope`, started now.
    pub fn start(rank: usize, scope: CpuScope) -> Self {
        RankClock {
            time: RankTime {
                rank,
                ..RankTime::default()
            },
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
            Activity::Testing => {
                self.time.testing_s += dw;
                self.time.testing_cpu_s += dc;
            }
        }
        self.wall = wall;
        self.cpu = cpu;
    }

    /// The totals so far.
    pub fn totals(&self) -> RankTime {
        self.time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_is_charged_and_sleep_is_not() {
        let mut clock = RankClock::start(3, CpuScope::Thread);
        let until = Instant::now() + Duration::from_millis(60);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        clock.charge(Activity::Testing);
        std::thread::sleep(Duration::from_millis(60));
        clock.charge(Activity::Waiting);
        let t = clock.totals();
        assert_eq!(t.rank, 3);
        assert!(t.testing_s >= 0.06 && t.waiting_s >= 0.06, "{t:?}");
        // Spinning for 60 ms costs CPU time (at least a fifth of it even on a loaded machine,
        // where the spin is descheduled); sleeping 60 ms costs next to nothing (a tenth is a
        // margin that scheduler noise cannot reach: the thread is not runnable).
        assert!(t.testing_cpu_s > 0.012, "{t:?}");
        assert!(t.waiting_cpu_s < 0.006, "{t:?}");
        assert!(x > 0);
    }
}
