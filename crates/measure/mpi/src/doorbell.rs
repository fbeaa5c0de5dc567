//! Wake-ups between ranks on the same host, so that a rank waiting for a message can sleep
//! until its peer has sent it instead of polling MPI.
//!
//! The ranks of a host share one small file in `/dev/shm` (named by a token world rank 0 draws
//! for the job), mapped into each: a counter per rank. After an untimed send to a rank on the
//! same host, the sender bumps that rank's counter and wakes it with a futex; the waiting rank
//! sleeps in a futex wait on its counter and wakes at once. MPI has no such wait: a blocking
//! MPI call spins (or yields in a loop), which is what a waiting rank must not do when ranks
//! outnumber cores. A futex wake-up, unlike a socket's or a pipe's, does not ask the kernel to
//! run the woken rank on the waker's core, where it would compete with the waker (the rank
//! that just finished a test and is about to start the next). Ranks on other hosts ring the
//! bell through this rank's socket ([`RemoteBells`]): every wake-up a waiting rank is spared
//! saves CPU, which a virtual machine charges tens of microseconds per sleep. Linux only;
//! elsewhere, or when the file cannot be made, waits fall back to sleeps that grow with the
//! time waited.

use std::sync::atomic::{AtomicU32, Ordering};
#[cfg(target_os = "linux")]
use std::sync::Arc;
use std::time::Duration;

use crate::remote_bells::RemoteBells;

use lgate_topology::Rank;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

/// This rank's bell and the bells of the ranks on its host.
#[derive(Debug)]
pub struct Doorbells {
    #[cfg(target_os = "linux")]
    bells: Arc<linux::SharedBells>,
    /// Wake-ups from ranks on other hosts, when this rank has a socket for them.
    remote: Option<RemoteBells>,
    /// Per world rank: its bell's index on this host, if it is on this host with a bell.
    local: Vec<Option<usize>>,
    /// This rank's bell.
    mine: usize,
    /// Whether every rank of the job is on this host.
    whole_job: bool,
    /// The value of this rank's counter when it last woke.
    seen: AtomicU32,
}

impl Doorbells {
    /// Sets up the bells of `world`; every rank must call this (it is collective). `None` on
    /// this rank when its host's bells could not be made; its waits then fall back to polling.
    pub fn open(world: &SimpleCommunicator) -> Option<Doorbells> {
        let rank = world.rank();
        let mut token = [0u64];
        if rank == 0 {
            token[0] = draw_token();
        }
        world.process_at_rank(0).broadcast_into(&mut token[..]);
        let host = world.split_shared(0);
        let mut ranks = vec![0i32; host.size() as usize];
        host.all_gather_into(&rank, &mut ranks[..]);
        let path = bell_path(token[0], ranks[0]);
        let bells = open_bells(&path, ranks.len());
        let ok = i32::from(bells.is_some());
        let mut all_ok = vec![0i32; ranks.len()];
        // Every rank of the host has the file open (or failed) once this returns.
        host.all_gather_into(&ok, &mut all_ok[..]);
        if host.rank() == 0 {
            let _ = std::fs::remove_file(&path);
        }
        let mine = host.rank() as usize;
        #[cfg(target_os = "linux")]
        let bells = bells.filter(|_| !all_ok.contains(&0)).map(Arc::new);
        // Collective: every rank takes part, with a socket only where its bell can ring.
        #[cfg(target_os = "linux")]
        let remote = {
            let ringer = bells.clone();
            RemoteBells::open(
                world,
                token[0],
                bells.is_some(),
                |r| ranks.contains(&(r as i32)),
                move || {
                    if let Some(b) = &ringer {
                        b.ring(mine);
                    }
                },
            )
        };
        #[cfg(not(target_os = "linux"))]
        let remote = RemoteBells::open(world, token[0], false, |_| true, || {});
        if all_ok.contains(&0) {
            return None;
        }
        let mut local = vec![None; world.size() as usize];
        for (k, &r) in ranks.iter().enumerate() {
            if r != rank {
                local[r as usize] = Some(k);
            }
        }
        #[cfg(target_os = "linux")]
        let bells = bells?;
        #[cfg(not(target_os = "linux"))]
        let _ = bells;
        Some(Doorbells {
            remote,
            #[cfg(target_os = "linux")]
            seen: AtomicU32::new(bells.word(mine).load(Ordering::SeqCst)),
            #[cfg(not(target_os = "linux"))]
            seen: AtomicU32::new(0),
            #[cfg(target_os = "linux")]
            bells,
            whole_job: ranks.len() == world.size() as usize,
            local,
            mine,
        })
    }

    /// Whether every other rank of the job is on this host and can ring this rank's bell.
    pub fn whole_job(&self) -> bool {
        self.whole_job
    }

    /// Whether `rank` is on this host and can ring this rank's bell (and this rank its).
    pub fn is_local(&self, rank: Rank) -> bool {
        self.local.get(rank).copied().flatten().is_some()
    }

    /// Whether `rank` wakes this rank when it sends: it is on this host, or on another whose
    /// wake-ups have reached this one.
    pub fn wakes_me(&self, rank: Rank) -> bool {
        self.is_local(rank) || self.remote.as_ref().is_some_and(|r| r.heard(rank))
    }

    /// Whether a message from `rank` may still be on its way after a wake-up: not from a rank
    /// on this host (its message is in shared memory before it rings), and from another only
    /// when it rang since this was last asked (its datagram may overtake the message).
    pub fn may_trail_its_ring(&self, rank: Rank) -> bool {
        if self.is_local(rank) {
            return false;
        }
        self.remote.as_ref().is_none_or(|r| r.rang(rank))
    }

    /// A sleep for `rank`'s wake-up ran out without it (see [`RemoteBells::missed`]).
    pub fn missed(&self, rank: Rank) {
        if let Some(r) = self.remote.as_ref().filter(|_| !self.is_local(rank)) {
            r.missed(rank);
        }
    }

    /// Rings `to`'s bell: a futex on this host, a datagram to another; never blocks, never
    /// fails.
    pub fn ring(&self, to: Rank) {
        let Some(Some(_k)) = self.local.get(to).copied() else {
            if let Some(remote) = &self.remote {
                remote.ring(to);
            }
            return;
        };
        #[cfg(target_os = "linux")]
        self.bells.ring(_k);
    }

    /// Sleeps for `duration` or until this rank's bell rings; true when it rang (also before
    /// the call, since the last wake-up).
    pub fn sleep(&self, duration: Duration) -> bool {
        #[cfg(target_os = "linux")]
        {
            let now = self
                .bells
                .wait(self.mine, self.seen.load(Ordering::SeqCst), duration);
            self.seen.swap(now, Ordering::SeqCst) != now
        }
        #[cfg(not(target_os = "linux"))]
        {
            std::thread::sleep(duration);
            false
        }
    }
}

/// A job-unique number: the clock and the process id of world rank 0.
fn draw_token() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// The file of a host's bells: the job's token and the host's first rank.
fn bell_path(token: u64, first_rank: i32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/shm/lgate-plogp-{token:016x}-{first_rank}"))
}

#[cfg(target_os = "linux")]
fn open_bells(path: &std::path::Path, count: usize) -> Option<linux::SharedBells> {
    linux::SharedBells::open(path, count)
}

#[cfg(not(target_os = "linux"))]
fn open_bells(_path: &std::path::Path, _count: usize) -> Option<()> {
    None
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    /// Bytes between two counters: one cache line each, so that ringing one rank does not
    /// disturb another's.
    const STRIDE: usize = 64;

    /// A host's counters, mapped from one shared file.
    #[derive(Debug)]
    pub(super) struct SharedBells {
        base: *mut u8,
        len: usize,
    }

    // SAFETY: the mapping is only accessed through atomics.
    unsafe impl Send for SharedBells {}
    // SAFETY: as above.
    unsafe impl Sync for SharedBells {}

    impl SharedBells {
        /// Opens (creating if needed) and maps the file of `count` counters.
        pub(super) fn open(path: &std::path::Path, count: usize) -> Option<Self> {
            let len = count.max(1) * STRIDE;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .ok()?;
            if file.metadata().ok()?.len() < len as u64 {
                file.set_len(len as u64).ok()?;
            }
            use std::os::fd::AsRawFd;
            // SAFETY: a shared mapping of a file of at least `len` bytes; checked for failure.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return None;
            }
            Some(SharedBells {
                base: base.cast(),
                len,
            })
        }

        /// Counter `k`.
        pub(super) fn word(&self, k: usize) -> &AtomicU32 {
            assert!((k + 1) * STRIDE <= self.len, "bell {k} outside the mapping");
            // SAFETY: inside the mapping, aligned to 64 bytes, and only used atomically.
            unsafe { &*self.base.add(k * STRIDE).cast::<AtomicU32>() }
        }

        /// Bumps counter `k` and wakes whoever waits on it.
        pub(super) fn ring(&self, k: usize) {
            let word = self.word(k);
            word.fetch_add(1, Ordering::SeqCst);
            // SAFETY: FUTEX_WAKE on a valid, shared, aligned 32-bit word.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAKE,
                    1,
                    std::ptr::null::<libc::timespec>(),
                );
            }
        }

        /// Waits up to `duration` while counter `k` still holds `seen`; returns its value then.
        pub(super) fn wait(&self, k: usize, seen: u32, duration: Duration) -> u32 {
            let word = self.word(k);
            let now = word.load(Ordering::SeqCst);
            if now != seen {
                return now;
            }
            let timeout = libc::timespec {
                tv_sec: duration.as_secs() as libc::time_t,
                tv_nsec: duration.subsec_nanos() as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT on a valid, shared, aligned 32-bit word with a relative
            // timeout; it returns at once if the word no longer holds `seen`.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    word.as_ptr(),
                    libc::FUTEX_WAIT,
                    seen,
                    &timeout as *const libc::timespec,
                );
            }
            word.load(Ordering::SeqCst)
        }
    }

    impl Drop for SharedBells {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly what `open` mapped.
            unsafe {
                libc::munmap(self.base.cast(), self.len);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::{Duration, Instant};

    use super::linux::SharedBells;
    use super::*;

    #[test]
    fn a_ring_wakes_a_sleeper_across_two_mappings() {
        let path = bell_path(draw_token(), 0);
        let a = SharedBells::open(&path, 2).unwrap();
        let b = SharedBells::open(&path, 2).unwrap();
        std::fs::remove_file(&path).unwrap();
        let seen = b.word(1).load(Ordering::SeqCst);
        let waiter = std::thread::spawn(move || {
            let start = Instant::now();
            let now = b.wait(1, seen, Duration::from_secs(20));
            (now, start.elapsed(), b)
        });
        std::thread::sleep(Duration::from_millis(50));
        a.ring(1);
        let (now, waited, b) = waiter.join().unwrap();
        assert_ne!(now, seen, "the counter moved");
        // Woken by the ring, not by the 20 s timeout (a margin no scheduler reaches).
        assert!(waited < Duration::from_secs(10), "{waited:?}");
        // Nothing rang since: the next wait lasts its whole (short) duration.
        let start = Instant::now();
        assert_eq!(b.wait(1, now, Duration::from_millis(30)), now);
        assert!(start.elapsed() >= Duration::from_millis(30));
        // A ring before the wait is not lost: the wait returns at once.
        a.ring(1);
        let start = Instant::now();
        assert_ne!(b.wait(1, now, Duration::from_secs(20)), now);
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
