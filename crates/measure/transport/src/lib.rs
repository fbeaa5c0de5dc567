//! Point-to-point messaging between the ranks of a job, as lgate-plogp's harness, pair tests
//! and broadcasts use it: the [`Transport`] trait (MPI in `lgate-mpi`, threads in
//! [`InProcessWorld`]), the one list of message [`Tag`]s, waiting that leaves the cores to the
//! ranks being measured ([`PoliteWait`]), and the dissemination [`SubsetBarrier`] over any list
//! of ranks. Nothing here needs MPI.
//!
//! ```
//! use lgate_transport::{InProcessWorld, SubsetBarrier, Tag, Transport, TransportError};
//!
//! let sums = InProcessWorld::new(3).run(|t| {
//!     let all = [0, 1, 2];
//!     let barrier = SubsetBarrier::new(&all, t.rank()).unwrap();
//!     barrier.wait::<TransportError>(&t, 1, &mut || Ok(())).unwrap();
//!     if t.rank() == 0 {
//!         t.send(1, Tag::TEST, b"hello").unwrap();
//!     }
//!     if t.rank() == 1 {
//!         assert_eq!(t.recv_vec(0, Tag::TEST).unwrap(), b"hello");
//!     }
//!     t.rank()
//! });
//! assert_eq!(sums, [0, 1, 2]);
//! ```
#![deny(missing_docs)]

pub mod barrier;
pub mod in_process;
pub mod polite;
pub mod transport;
pub mod usage;

use std::time::Duration;

pub use barrier::{Handoff, SubsetBarrier};
pub use in_process::{InProcessTransport, InProcessWorld, LinkModel};
pub use polite::SleepingReceives;
pub use transport::{PoliteWait, Tag, Transport, TransportError};
pub use usage::{gather_time_splits, rank_times, Activity, RankClock, TimeSplit};

/// Whose CPU time a rank's clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuScope {
    /// The whole process, every thread: a rank that is a process (MPI), whose library's helper
    /// threads count too.
    Process,
    /// The calling thread alone: a rank that is a thread (the in-process world). Where the
    /// system has no per-thread figure this reads the process's.
    Thread,
}

/// The CPU time (user and system) used so far in `scope`.
pub fn cpu_time(scope: CpuScope) -> Duration {
    #[cfg(target_os = "linux")]
    let who = match scope {
        CpuScope::Process => libc::RUSAGE_SELF,
        CpuScope::Thread => libc::RUSAGE_THREAD,
    };
    #[cfg(not(target_os = "linux"))]
    let who = {
        let _ = scope;
        libc::RUSAGE_SELF
    };
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct it is given, which lives for the call.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}
