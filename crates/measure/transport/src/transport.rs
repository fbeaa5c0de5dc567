//! The few message-passing operations the harness and pair tests need.

use std::time::{Duration, Instant};

use lgate_topology::Rank;

use crate::CpuScope;

/// A message tag. Every tag lgate-plogp uses is one of the constants here: the harness's below
/// [`Tag::TEST`], pair tests' from [`Tag::TEST`], broadcasts' from [`Tag::BCAST`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag(pub i32);

impl Tag {
    /// Subset barrier messages.
    pub const BARRIER: Tag = Tag(1);
    /// Pair results travelling to rank 0.
    pub const RESULT: Tag = Tag(2);
    /// Rank placements travelling to rank 0 at the start.
    pub const GATHER: Tag = Tag(3);
    /// The run plan travelling from rank 0 to every rank.
    pub const PLAN: Tag = Tag(4);
    /// Each rank's waiting and testing time travelling to rank 0 at the end.
    pub const USAGE: Tag = Tag(5);
    /// Host facts travelling from one rank per host to rank 0 at the start.
    pub const FACTS: Tag = Tag(6);
    /// The first tag free for pair tests (PLogP uses it and the next for control and data).
    pub const TEST: Tag = Tag(16);
    /// Broadcast payloads and their segments.
    pub const BCAST: Tag = Tag(32);
    /// Broadcast timings travelling to the root of a benchmark.
    pub const BCAST_TIMINGS: Tag = Tag(33);
    /// Host names travelling to rank 0 (broadcast commands).
    pub const HOSTS: Tag = Tag(34);
    /// Broadcast checks' verdicts travelling to rank 0.
    pub const VERDICTS: Tag = Tag(35);
}

/// An error of the message layer.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A receive or send did not complete in time (a peer died or the schedule diverged).
    #[error("rank {rank}: no message from rank {peer} with tag {tag} after {waited:?}")]
    Timeout {
        /// This rank.
        rank: Rank,
        /// The peer it waited for.
        peer: Rank,
        /// The tag it waited for.
        tag: i32,
        /// How long it waited.
        waited: Duration,
    },
    /// A message longer than the buffer given for it.
    #[error(
        "rank {rank}: a message of {len} bytes from rank {peer} does not fit in {capacity} bytes"
    )]
    Truncated {
        /// This rank.
        rank: Rank,
        /// The sender.
        peer: Rank,
        /// The message's length.
        len: usize,
        /// The buffer's length.
        capacity: usize,
    },
    /// A peer that does not exist.
    #[error("rank {peer} does not exist: the job has {size} ranks")]
    NoSuchRank {
        /// The rank asked for.
        peer: Rank,
        /// The job's size.
        size: usize,
    },
    /// Ranks disagreeing about what comes next: a bug, or mixed binaries.
    #[error("rank {rank}: {message}")]
    Protocol {
        /// This rank.
        rank: Rank,
        /// What was expected and what came.
        message: String,
    },
}

/// Point-to-point messaging between the ranks of a job.
///
/// Blocking calls may spin (as MPI does); anything that waits for a long time uses
/// [`PoliteWait`] with [`Transport::probe`] instead, so idle ranks leave the cores to the pair
/// being measured.
pub trait Transport {
    /// This process's rank.
    fn rank(&self) -> Rank;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// Standard-mode send: may return before the receiver has the message.
    fn send(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError>;
    /// Synchronous send (MPI_Ssend): returns once the receiver has started to receive it.
    fn ssend(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError>;
    /// Sends without spinning: waits for completion with short sleeps. For large messages to a
    /// rank that may be busy.
    fn send_polite(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError>;
    /// Blocking receive of the next message from `from` with `tag`; returns its length.
    fn recv(&self, from: Rank, tag: Tag, buf: &mut [u8]) -> Result<usize, TransportError>;
    /// The length of the next message from `from` with `tag`, if one has arrived.
    fn probe(&self, from: Rank, tag: Tag) -> Result<Option<usize>, TransportError>;
    /// The sender and length of a message with `tag` from any rank, if one has arrived.
    fn probe_any(&self, tag: Tag) -> Result<Option<(Rank, usize)>, TransportError>;
    /// The name of the host this rank runs on.
    fn processor_name(&self) -> String;
    /// The message library and its version.
    fn library_version(&self) -> String;
    /// Settings of the message library worth recording (MPI_T control variables), if any.
    fn library_settings(&self) -> Option<lgate_rundir::MpiSettings> {
        None
    }
    /// Sends every message, all started at once, and returns when all are done (MPI_Isend
    /// each, then MPI_Waitall). The default sends one after the other, which is the same only
    /// for a transport whose sends never wait for the receiver.
    fn send_all(&self, tag: Tag, messages: &[(Rank, &[u8])]) -> Result<(), TransportError> {
        for &(to, data) in messages {
            self.send(to, tag, data)?;
        }
        Ok(())
    }
    /// Sends `data` to `to` while receiving the next message from `from` into `buf`
    /// (MPI_Sendrecv); returns the length received. The default sends first, which is the
    /// same only for a transport whose sends never wait for the receiver.
    fn send_recv(
        &self,
        tag: Tag,
        to: Rank,
        data: &[u8],
        from: Rank,
        buf: &mut [u8],
    ) -> Result<usize, TransportError> {
        self.send(to, tag, data)?;
        self.recv(from, tag, buf)
    }
    /// The message library's own broadcast (MPI_Bcast) of `buf` from `root`; false when the
    /// transport has none.
    fn library_broadcast(&self, _buf: &mut [u8], _root: Rank) -> Result<bool, TransportError> {
        Ok(false)
    }
    /// The message library's own barrier over all ranks (MPI_Barrier); false when the
    /// transport has none.
    fn library_barrier(&self) -> Result<bool, TransportError> {
        Ok(false)
    }
    /// How long a polite wait may last before the peer is reported lost; `None` waits for ever.
    fn wait_limit(&self) -> Option<Duration> {
        None
    }
    /// Whose CPU time counts as this rank's: the process (a rank per process, as under MPI)
    /// or the calling thread (a rank per thread).
    fn cpu_scope(&self) -> CpuScope {
        CpuScope::Process
    }
    /// Whether `from` wakes this rank ([`Transport::notify`]) after each untimed send to it,
    /// so that a wait for it can sleep until then.
    fn notifies(&self, _from: Rank) -> bool {
        false
    }
    /// Whether every other rank wakes this one after each untimed send to it (the whole job
    /// shares this rank's host), so that a wait for a message from anyone can sleep until then.
    fn notified_by_all(&self) -> bool {
        false
    }
    /// Wakes `to` if it sleeps in [`Transport::sleep`] and can be woken from here; call it
    /// after an untimed send, never in timed code.
    fn notify(&self, _to: Rank) {}
    /// Whether, after a wake-up, a message from `from` may still be on its way (its wake-up
    /// can overtake it): true unless the transport knows `from` did not ring since this was
    /// last asked, or that its messages are there before it rings.
    fn may_trail_its_ring(&self, _from: Rank) -> bool {
        true
    }
    /// Says that a sleep until `from`'s wake-up ([`Transport::notifies`]) ran its full length
    /// without one: where its wake-ups were only expected, not yet seen, they are expected no
    /// longer until one comes.
    fn not_woken_by(&self, _from: Rank) {}
    /// Whether the message library's own blocking waits hand the core to other processes
    /// (Open MPI's `mpi_yield_when_idle`): on for a pair of ranks that can only run by turns
    /// (bound to one CPU), off otherwise, where yielding only adds noise. A no-op where the
    /// library has no such switch or the user set it.
    fn yield_when_idle(&self, _on: bool) {}
    /// Whether a wait in a pair test should offer the core to other processes: true when this
    /// rank may share its CPU with its peer (the library's waits yield then, see
    /// [`Transport::yield_when_idle`]), false when each has a CPU and a pure spin is exact.
    fn yields_while_waiting(&self) -> bool {
        true
    }
    /// Sleeps for `duration` or until another rank's [`Transport::notify`]; true when woken.
    fn sleep(&self, duration: Duration) -> bool {
        std::thread::sleep(duration);
        false
    }

    /// Starts sending `data` to `to` and returns without waiting for the receiver to take it
    /// (MPI_Isend, the buffer kept until done); [`Transport::detached_sent`] says when every
    /// such send has completed. The default sends politely, which is the same only for a
    /// transport whose sends never wait for the receiver.
    fn send_detached(&self, to: Rank, tag: Tag, data: Vec<u8>) -> Result<(), TransportError> {
        self.send_polite(to, tag, &data)
    }
    /// Whether every send started by [`Transport::send_detached`] has completed; asking moves
    /// them on.
    fn detached_sent(&self) -> Result<bool, TransportError> {
        Ok(true)
    }

    /// Receives the next message from `from` with `tag` whatever its length.
    fn recv_vec(&self, from: Rank, tag: Tag) -> Result<Vec<u8>, TransportError> {
        let mut wait = PoliteWait::new(self.wait_limit());
        loop {
            if let Some(len) = self.probe(from, tag)? {
                let mut buf = vec![0; len];
                let n = self.recv(from, tag, &mut buf)?;
                buf.truncate(n);
                return Ok(buf);
            }
            wait.pause(self, Some(from), tag)?;
        }
    }
}

/// Waiting without spinning: a few quick polls, then sleeps.
///
/// When ranks outnumber cores, every wake-up of an idle rank lands on a core of the pair being
/// measured: it preempts a timed operation and adds scheduler noise to its times, even though
/// the idle rank uses little CPU (six processes waking every 100 us made 2-rank pair tests here
/// 10-40x slower; every millisecond, no slower). So a waiting rank sleeps:
/// - until woken, when the peer it waits for wakes it after sending ([`Transport::notify`]:
///   ranks on the same host through a futex, on other hosts through a datagram once one from
///   any host has come through and none from the peer's host has been missed), with
///   [`PoliteWait::NOTIFIED_SLEEP`] as a safety net; once woken by the awaited peer, its
///   message may still be on its way (a datagram can overtake it), so a few short sleeps
///   that double ([`PoliteWait::AFTER_WAKE`]) look for it before the long sleep again; once
///   woken by another rank, the next sleep is long;
/// - otherwise for a share of the time it has already waited ([`PoliteWait::SLACK`]): a wait
///   of T wakes about ln(T) / SLACK times, not T / constant times, and notices the awaited
///   message at most SLACK x T late.
///
/// Every wake-up counts: on a virtual machine a sleep and its wake-up cost some tens of
/// microseconds of CPU, whatever their length.
#[derive(Debug)]
pub struct PoliteWait {
    started: Instant,
    polls: u32,
    limit: Option<Duration>,
    /// Sleeps since a peer last woke this wait, if one did.
    since_woken: Option<u32>,
}

impl PoliteWait {
    /// Quick polls before the first sleep, and again after a wake-up.
    const QUICK_POLLS: u32 = 2;
    /// The shortest sleep.
    const MIN_SLEEP: Duration = Duration::from_micros(50);
    /// The longest sleep while waiting for a peer that cannot wake this rank.
    const MAX_SLEEP: Duration = Duration::from_millis(10);
    /// Each sleep lasts this share of the time waited so far.
    pub const SLACK: f64 = 1.0 / 32.0;
    /// The longest sleep while waiting for a peer that wakes this rank when it sends: the
    /// safety net for a wake-up lost on its way.
    pub const NOTIFIED_SLEEP: Duration = Duration::from_millis(100);
    /// The first of the short sleeps after a wake-up, each twice the one before.
    pub const AFTER_WAKE: Duration = Duration::from_micros(200);
    /// How many short sleeps follow a wake-up.
    const AFTER_WAKE_SLEEPS: u32 = 3;

    /// A wait that gives up after `limit`, or never.
    pub fn new(limit: Option<Duration>) -> Self {
        PoliteWait {
            started: Instant::now(),
            polls: 0,
            limit,
            since_woken: None,
        }
    }

    /// Pauses before the next poll for a message from `peer` (or from anyone, `None`) with
    /// `tag`; errors once the wait has lasted longer than its limit.
    pub fn pause<T: Transport + ?Sized>(
        &mut self,
        t: &T,
        peer: Option<Rank>,
        tag: Tag,
    ) -> Result<(), TransportError> {
        let notified = || match peer {
            Some(p) => t.notifies(p),
            None => t.notified_by_all(),
        };
        self.pause_notified(t, notified, peer, tag)
    }

    /// Pauses before the next poll for a message with `tag` from any of `senders` (the only
    /// ranks that send one): a sleep until woken when every one of them wakes this rank.
    pub fn pause_for_any<T: Transport + ?Sized>(
        &mut self,
        t: &T,
        senders: &[Rank],
        tag: Tag,
    ) -> Result<(), TransportError> {
        let notified = || {
            t.notified_by_all() || (!senders.is_empty() && senders.iter().all(|&p| t.notifies(p)))
        };
        self.pause_notified(t, notified, None, tag)
    }

    /// Pauses before the next look at something no peer wakes this rank for, such as its own
    /// sends to `peer` completing: sleeps that grow with the time waited.
    pub fn pause_unannounced<T: Transport + ?Sized>(
        &mut self,
        t: &T,
        peer: Rank,
        tag: Tag,
    ) -> Result<(), TransportError> {
        self.pause_notified(t, || false, Some(peer), tag)
    }

    fn pause_notified<T: Transport + ?Sized>(
        &mut self,
        t: &T,
        notified: impl FnOnce() -> bool,
        peer: Option<Rank>,
        tag: Tag,
    ) -> Result<(), TransportError> {
        let waited = self.started.elapsed();
        if self.limit.is_some_and(|limit| waited > limit) {
            return Err(TransportError::Timeout {
                rank: t.rank(),
                peer: peer.unwrap_or(t.rank()),
                tag: tag.0,
                waited,
            });
        }
        if self.quick_poll() {
            return Ok(());
        }
        let notified = notified();
        let sleep = match (notified, self.since_woken) {
            (true, Some(k)) if k < Self::AFTER_WAKE_SLEEPS => {
                self.since_woken = Some(k + 1);
                Self::AFTER_WAKE * (1 << k)
            }
            (true, _) => Self::NOTIFIED_SLEEP,
            (false, _) => self.proportional_sleep(),
        };
        let woke = t.sleep(sleep);
        if let (false, true, Some(p)) = (woke, sleep == Self::NOTIFIED_SLEEP, peer) {
            t.not_woken_by(p);
        }
        if woke {
            // Woken: the message may be on its way. A poll may need a second look before it
            // sees it (MPI_Iprobe can pull a message in without reporting it), so poll quickly
            // again; and when the awaited peer's own wake-up may have overtaken its message,
            // sleep shortly a few times. A wake-up by another rank (in a barrier, a later
            // round's token; at a relay, a result) tells nothing of the awaited message, whose
            // own wake-up is still to come: the next sleep is long.
            self.polls = 0;
            self.since_woken = match peer {
                Some(p) if notified && !t.may_trail_its_ring(p) => None,
                _ => Some(0),
            };
        }
        Ok(())
    }

    /// Pauses before the next poll of something no peer wakes this rank for.
    pub fn nap(&mut self) {
        if !self.quick_poll() {
            std::thread::sleep(self.proportional_sleep());
        }
    }

    fn quick_poll(&mut self) -> bool {
        if self.polls < Self::QUICK_POLLS {
            self.polls += 1;
            std::hint::spin_loop();
            return true;
        }
        false
    }

    fn proportional_sleep(&self) -> Duration {
        self.started
            .elapsed()
            .mul_f64(Self::SLACK)
            .clamp(Self::MIN_SLEEP, Self::MAX_SLEEP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_grow_with_the_time_waited_up_to_a_cap() {
        let mut wait = PoliteWait::new(None);
        assert_eq!(wait.proportional_sleep(), PoliteWait::MIN_SLEEP);
        for _ in 0..PoliteWait::QUICK_POLLS {
            assert!(wait.quick_poll());
        }
        assert!(!wait.quick_poll());
        wait.started -= Duration::from_millis(64);
        // 64 ms waited (and the microseconds this test took): a 32nd of it.
        let sleep = wait.proportional_sleep();
        assert!(
            sleep >= Duration::from_millis(2) && sleep < Duration::from_micros(2200),
            "{sleep:?}"
        );
        wait.started -= Duration::from_secs(10);
        assert_eq!(wait.proportional_sleep(), PoliteWait::MAX_SLEEP);
    }

    /// A transport that only records the sleeps asked of it.
    struct Sleeper {
        all_notify: bool,
        asked: std::cell::RefCell<Vec<Duration>>,
        /// Whether the first sleep is ended by a wake-up.
        woken_once: bool,
        /// What `may_trail_its_ring` answers.
        trails: bool,
        /// The peers whose wake-up a sleep waited for in vain.
        missed: std::cell::RefCell<Vec<Rank>>,
    }

    impl Sleeper {
        fn new(all_notify: bool, woken_once: bool, trails: bool) -> Self {
            Sleeper {
                all_notify,
                asked: Default::default(),
                woken_once,
                trails,
                missed: Default::default(),
            }
        }
    }

    impl Transport for Sleeper {
        fn rank(&self) -> Rank {
            0
        }
        fn size(&self) -> usize {
            4
        }
        fn send(&self, _: Rank, _: Tag, _: &[u8]) -> Result<(), TransportError> {
            Ok(())
        }
        fn ssend(&self, _: Rank, _: Tag, _: &[u8]) -> Result<(), TransportError> {
            Ok(())
        }
        fn send_polite(&self, _: Rank, _: Tag, _: &[u8]) -> Result<(), TransportError> {
            Ok(())
        }
        fn recv(&self, _: Rank, _: Tag, _: &mut [u8]) -> Result<usize, TransportError> {
            Ok(0)
        }
        fn probe(&self, _: Rank, _: Tag) -> Result<Option<usize>, TransportError> {
            Ok(None)
        }
        fn probe_any(&self, _: Tag) -> Result<Option<(Rank, usize)>, TransportError> {
            Ok(None)
        }
        fn processor_name(&self) -> String {
            "here".into()
        }
        fn library_version(&self) -> String {
            "none".into()
        }
        fn notified_by_all(&self) -> bool {
            self.all_notify
        }
        fn notifies(&self, _: Rank) -> bool {
            self.all_notify
        }
        fn may_trail_its_ring(&self, _: Rank) -> bool {
            self.trails
        }
        fn not_woken_by(&self, from: Rank) {
            self.missed.borrow_mut().push(from);
        }
        fn sleep(&self, duration: Duration) -> bool {
            let mut asked = self.asked.borrow_mut();
            asked.push(duration);
            self.woken_once && asked.len() == 1
        }
    }

    #[test]
    fn a_wait_for_anyone_sleeps_until_woken_only_when_everyone_wakes_this_rank() {
        for all_notify in [false, true] {
            let t = Sleeper::new(all_notify, false, true);
            let mut wait = PoliteWait::new(None);
            for _ in 0..=PoliteWait::QUICK_POLLS {
                wait.pause(&t, None, Tag::RESULT).unwrap();
            }
            // A rank some of whose peers cannot wake it (another host) must poll, with sleeps
            // that grow with the wait; one that every peer wakes sleeps until then (with the
            // safety net), instead of waking again and again for nothing.
            // (A 32nd of the time waited stays far below the safety net unless this test was
            // held up for 0.8 s between its first lines.)
            let asked = t.asked.borrow();
            assert_eq!(asked.len(), 1, "{asked:?}");
            if all_notify {
                assert_eq!(asked[0], PoliteWait::NOTIFIED_SLEEP);
            } else {
                assert!(asked[0] < PoliteWait::NOTIFIED_SLEEP, "{asked:?}");
            }
        }
    }

    #[test]
    fn after_a_wake_up_the_sleeps_start_short_again() {
        let a = PoliteWait::AFTER_WAKE;
        let n = PoliteWait::NOTIFIED_SLEEP;
        // Quick polls, the long sleep a wake-up ends, quick polls again, then short sleeps
        // that double (the message the wake-up announced may not show at once), then the
        // long sleep again (it may have been another message's): for a message from anyone,
        // and from a peer whose wake-up may have overtaken its message.
        for peer in [None, Some(1)] {
            let t = Sleeper::new(true, true, true);
            let mut wait = PoliteWait::new(None);
            for _ in 0..(2 * PoliteWait::QUICK_POLLS + 5) {
                wait.pause(&t, peer, Tag::RESULT).unwrap();
            }
            assert_eq!(*t.asked.borrow(), [n, a, 2 * a, 4 * a, n]);
        }
        // Woken by another rank than the awaited peer (or by one whose message is there before
        // its wake-up): nothing to look for soon, the next sleep is long again.
        let t = Sleeper::new(true, true, false);
        let mut wait = PoliteWait::new(None);
        for _ in 0..(2 * PoliteWait::QUICK_POLLS + 2) {
            wait.pause(&t, Some(1), Tag::RESULT).unwrap();
        }
        assert_eq!(*t.asked.borrow(), [n, n]);
        // The second long sleep ran out without the peer's wake-up: the transport is told,
        // for the peer; the first, ended by one, told nothing.
        assert_eq!(*t.missed.borrow(), [1]);
    }

    #[test]
    fn a_wait_for_any_of_some_senders_sleeps_until_woken_when_each_of_them_wakes_this_rank() {
        for all_notify in [false, true] {
            let t = Sleeper::new(all_notify, false, true);
            let mut wait = PoliteWait::new(None);
            for _ in 0..=PoliteWait::QUICK_POLLS {
                wait.pause_for_any(&t, &[1, 2], Tag::RESULT).unwrap();
            }
            let asked = t.asked.borrow();
            assert_eq!(asked.len(), 1, "{asked:?}");
            assert_eq!(
                asked[0] == PoliteWait::NOTIFIED_SLEEP,
                all_notify,
                "{asked:?}"
            );
            // Waits for anyone tell the transport of no missed peer.
            assert!(t.missed.borrow().is_empty());
        }
    }
}
