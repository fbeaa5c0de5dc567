//! An in-process transport: ranks are threads, messages travel through shared mailboxes.
//!
//! It follows MPI's matching rules (messages from one sender with one tag arrive in order) and
//! can add the delays of a [`LinkModel`], so harness logic and pair tests can be tested without
//! MPI, against a network whose parameters are known.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lgate_topology::Rank;

use crate::transport::{Tag, Transport, TransportError};

/// The delays of a modelled network, in PLogP terms.
///
/// A message of `bytes` from `from` to `to` waits until the link is free, occupies it for the
/// gap `g`, and becomes receivable `L` after that; the sender is busy for `o_s` and the
/// receiver for `o_r`. A round trip of m and 0 bytes then takes `2 L + g(m) + g(0)`, as in
/// PLogP.
pub trait LinkModel: Send + Sync {
    /// The latency `L` from `from` to `to`.
    fn latency(&self, from: Rank, to: Rank) -> Duration;
    /// The gap `g(m)`: how long a message of `bytes` occupies the link.
    fn gap(&self, _from: Rank, _to: Rank, _bytes: usize) -> Duration {
        Duration::ZERO
    }
    /// The send overhead `o_s(m)`: how long the sender is busy.
    fn send_overhead(&self, _from: Rank, _to: Rank, _bytes: usize) -> Duration {
        Duration::ZERO
    }
    /// The receive overhead `o_r(m)`: how long the receiver is busy taking the message.
    fn recv_overhead(&self, _from: Rank, _to: Rank, _bytes: usize) -> Duration {
        Duration::ZERO
    }
}

/// A network without delays.
#[derive(Debug, Clone, Copy, Default)]
pub struct Instant0;

impl LinkModel for Instant0 {
    fn latency(&self, _: Rank, _: Rank) -> Duration {
        Duration::ZERO
    }
}

struct Envelope {
    from: Rank,
    tag: Tag,
    data: Vec<u8>,
    visible_at: Instant,
    handshake: Option<Arc<Handshake>>,
}

/// Tells a synchronous sender when its message was matched.
#[derive(Default)]
struct Handshake {
    matched_at: Mutex<Option<Instant>>,
    cond: Condvar,
}

#[derive(Default)]
struct Mailbox {
    queue: Mutex<VecDeque<Envelope>>,
    cond: Condvar,
}

struct World {
    mailboxes: Vec<Mailbox>,
    link_free: Mutex<HashMap<(Rank, Rank), Instant>>,
    model: Box<dyn LinkModel>,
    hosts: Vec<String>,
    timeout: Duration,
}

/// A set of in-process ranks that can message each other.
#[derive(Clone)]
pub struct InProcessWorld {
    world: Arc<World>,
}

impl InProcessWorld {
    /// A world of `size` ranks on host `localhost`, without delays, timing out after 60 s.
    pub fn new(size: usize) -> Self {
        InProcessWorld {
            world: Arc::new(World {
                mailboxes: (0..size).map(|_| Mailbox::default()).collect(),
                link_free: Mutex::new(HashMap::new()),
                model: Box::new(Instant0),
                hosts: vec!["localhost".into(); size],
                timeout: Duration::from_secs(60),
            }),
        }
    }

    fn rebuild(self, f: impl FnOnce(&mut World)) -> Self {
        let mut world = Arc::try_unwrap(self.world)
            .unwrap_or_else(|_| panic!("configure an InProcessWorld before taking endpoints"));
        f(&mut world);
        InProcessWorld {
            world: Arc::new(world),
        }
    }

    /// The same world with delays from `model`.
    pub fn with_link_model(self, model: impl LinkModel + 'static) -> Self {
        self.rebuild(|w| w.model = Box::new(model))
    }

    /// The same world with one host name per rank.
    pub fn with_hosts(self, hosts: Vec<String>) -> Self {
        assert_eq!(hosts.len(), self.world.mailboxes.len(), "one host per rank");
        self.rebuild(|w| w.hosts = hosts)
    }

    /// The same world, with blocking calls failing after `timeout` instead of hanging.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        self.rebuild(|w| w.timeout = timeout)
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.mailboxes.len()
    }

    /// The endpoint of one rank.
    pub fn endpoint(&self, rank: Rank) -> InProcessTransport {
        assert!(rank < self.size(), "rank {rank} of {}", self.size());
        InProcessTransport {
            rank,
            world: Arc::clone(&self.world),
        }
    }

    /// Runs `f` on every rank, each in its own thread, and returns the results in rank order.
    ///
    /// A panic on any rank is raised again here.
    pub fn run<R: Send>(&self, f: impl Fn(InProcessTransport) -> R + Sync) -> Vec<R> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.size())
                .map(|rank| {
                    let endpoint = self.endpoint(rank);
                    let f = &f;
                    std::thread::Builder::new()
                        .name(format!("rank-{rank}"))
                        .spawn_scoped(s, move || f(endpoint))
                        .expect("a thread per rank")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }
}

/// One rank's endpoint of an [`InProcessWorld`].
#[derive(Clone)]
pub struct InProcessTransport {
    rank: Rank,
    world: Arc<World>,
}

/// Waits `d`: sleeps most of it and spins the rest, which is precise to a few microseconds.
fn pause(d: Duration) {
    if d.is_zero() {
        return;
    }
    let until = Instant::now() + d;
    const SPIN: Duration = Duration::from_micros(200);
    if d > SPIN {
        std::thread::sleep(d - SPIN);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

impl InProcessTransport {
    fn mailbox(&self, rank: Rank) -> Result<&Mailbox, TransportError> {
        self.world
            .mailboxes
            .get(rank)
            .ok_or(TransportError::NoSuchRank {
                peer: rank,
                size: self.world.mailboxes.len(),
            })
    }

    fn timeout(&self, peer: Rank, tag: Tag, waited: Duration) -> TransportError {
        TransportError::Timeout {
            rank: self.rank,
            peer,
            tag: tag.0,
            waited,
        }
    }

    fn post(
        &self,
        to: Rank,
        tag: Tag,
        data: &[u8],
        handshake: Option<Arc<Handshake>>,
    ) -> Result<(), TransportError> {
        let mailbox = self.mailbox(to)?;
        let model = &self.world.model;
        let (from, bytes) = (self.rank, data.len());
        let gap = model.gap(from, to, bytes);
        let start = {
            let mut free = self.world.link_free.lock().expect("link table");
            let now = Instant::now();
            let slot = free.entry((from, to)).or_insert(now);
            let start = (*slot).max(now);
            *slot = start + gap;
            start
        };
        let visible_at = start + gap + model.latency(from, to);
        {
            let mut queue = mailbox.queue.lock().expect("mailbox");
            queue.push_back(Envelope {
                from,
                tag,
                data: data.to_vec(),
                visible_at,
                handshake,
            });
        }
        mailbox.cond.notify_all();
        // The sender waits for the link and is then busy for o_s.
        let busy_until = start + model.send_overhead(from, to, bytes);
        pause(busy_until.saturating_duration_since(Instant::now()));
        Ok(())
    }

    /// The index of the next message from `from` (any rank if `None`) with `tag`, and whether it
    /// can be received yet. Only the first message of each sender counts, as in MPI.
    fn find(
        queue: &MutexGuard<'_, VecDeque<Envelope>>,
        from: Option<Rank>,
        tag: Tag,
        now: Instant,
    ) -> Option<(usize, bool)> {
        let mut blocked: Vec<Rank> = Vec::new();
        for (k, e) in queue.iter().enumerate() {
            if e.tag != tag || from.is_some_and(|f| f != e.from) || blocked.contains(&e.from) {
                continue;
            }
            if e.visible_at <= now {
                return Some((k, true));
            }
            if from.is_some() {
                return Some((k, false));
            }
            // A later message from the same sender must not overtake this one.
            blocked.push(e.from);
        }
        None
    }
}

impl Transport for InProcessTransport {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> usize {
        self.world.mailboxes.len()
    }

    fn send(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.post(to, tag, data, None)
    }

    fn ssend(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        let handshake = Arc::new(Handshake::default());
        self.post(to, tag, data, Some(Arc::clone(&handshake)))?;
        let started = Instant::now();
        let mut matched = handshake.matched_at.lock().expect("handshake");
        while matched.is_none() {
            let waited = started.elapsed();
            if waited > self.world.timeout {
                return Err(self.timeout(to, tag, waited));
            }
            matched = handshake
                .cond
                .wait_timeout(matched, self.world.timeout - waited)
                .expect("handshake")
                .0;
        }
        // The receiver's acknowledgement travels back.
        let back = matched.expect("matched") + self.world.model.latency(to, self.rank);
        drop(matched);
        pause(back.saturating_duration_since(Instant::now()));
        Ok(())
    }

    fn send_polite(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        // Mailboxes never fill up, so a send never waits for the receiver.
        self.post(to, tag, data, None)
    }

    fn recv(&self, from: Rank, tag: Tag, buf: &mut [u8]) -> Result<usize, TransportError> {
        self.mailbox(from)?;
        let mailbox = self.mailbox(self.rank)?;
        let started = Instant::now();
        let mut queue = mailbox.queue.lock().expect("mailbox");
        let envelope = loop {
            let now = Instant::now();
            let waited = now - started;
            if waited > self.world.timeout {
                return Err(self.timeout(from, tag, waited));
            }
            let wait = match Self::find(&queue, Some(from), tag, now) {
                Some((k, true)) => break queue.remove(k).expect("found"),
                Some((k, false)) => queue[k].visible_at - now,
                None => self.world.timeout - waited,
            };
            queue = mailbox
                .cond
                .wait_timeout(queue, wait.min(self.world.timeout))
                .expect("mailbox")
                .0;
        };
        drop(queue);
        let len = envelope.data.len();
        if len > buf.len() {
            return Err(TransportError::Truncated {
                rank: self.rank,
                peer: from,
                len,
                capacity: buf.len(),
            });
        }
        buf[..len].copy_from_slice(&envelope.data);
        if let Some(h) = envelope.handshake {
            *h.matched_at.lock().expect("handshake") = Some(Instant::now());
            h.cond.notify_all();
        }
        pause(self.world.model.recv_overhead(from, self.rank, len));
        Ok(len)
    }

    fn probe(&self, from: Rank, tag: Tag) -> Result<Option<usize>, TransportError> {
        self.mailbox(from)?;
        let queue = self.mailbox(self.rank)?.queue.lock().expect("mailbox");
        Ok(match Self::find(&queue, Some(from), tag, Instant::now()) {
            Some((k, true)) => Some(queue[k].data.len()),
            _ => None,
        })
    }

    fn probe_any(&self, tag: Tag) -> Result<Option<(Rank, usize)>, TransportError> {
        let queue = self.mailbox(self.rank)?.queue.lock().expect("mailbox");
        Ok(match Self::find(&queue, None, tag, Instant::now()) {
            Some((k, true)) => Some((queue[k].from, queue[k].data.len())),
            _ => None,
        })
    }

    fn processor_name(&self) -> String {
        self.world.hosts[self.rank].clone()
    }

    fn library_version(&self) -> String {
        format!(
            "lgate-harness in-process transport {}",
            env!("CARGO_PKG_VERSION")
        )
    }

    fn wait_limit(&self) -> Option<Duration> {
        Some(self.world.timeout)
    }

    fn cpu_scope(&self) -> crate::CpuScope {
        crate::CpuScope::Thread
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_from_one_sender_keep_their_order() {
        let world = InProcessWorld::new(2);
        world.run(|t| {
            if t.rank() == 0 {
                for k in 0..100u8 {
                    t.send(1, Tag::TEST, &[k]).unwrap();
                }
            } else {
                for k in 0..100u8 {
                    let mut b = [0u8; 1];
                    t.recv(0, Tag::TEST, &mut b).unwrap();
                    assert_eq!(b[0], k);
                }
            }
        });
    }

    #[test]
    fn tags_are_matched_separately_and_truncation_is_an_error() {
        let world = InProcessWorld::new(2);
        world.run(|t| {
            if t.rank() == 0 {
                t.send(1, Tag(20), b"second").unwrap();
                t.send(1, Tag(21), b"first").unwrap();
            } else {
                assert_eq!(t.recv_vec(0, Tag(21)).unwrap(), b"first");
                let mut small = [0u8; 2];
                assert!(matches!(
                    t.recv(0, Tag(20), &mut small),
                    Err(TransportError::Truncated { len: 6, .. })
                ));
            }
        });
    }

    struct Fixed {
        latency: Duration,
        gap: Duration,
    }

    impl LinkModel for Fixed {
        fn latency(&self, _: Rank, _: Rank) -> Duration {
            self.latency
        }
        fn gap(&self, _: Rank, _: Rank, _: usize) -> Duration {
            self.gap
        }
    }

    #[test]
    fn link_model_delays_delivery_and_spaces_messages() {
        let latency = Duration::from_millis(20);
        let gap = Duration::from_millis(5);
        let world = InProcessWorld::new(2).with_link_model(Fixed { latency, gap });
        let times = world.run(|t| {
            if t.rank() == 0 {
                let start = Instant::now();
                for _ in 0..4 {
                    t.send(1, Tag::TEST, &[]).unwrap();
                }
                t.recv(1, Tag::TEST, &mut []).unwrap();
                start.elapsed()
            } else {
                for _ in 0..4 {
                    t.recv(0, Tag::TEST, &mut []).unwrap();
                }
                t.send(0, Tag::TEST, &[]).unwrap();
                Duration::ZERO
            }
        });
        // Four messages back to back: 4 g + L there, g + L back.
        let expected = 5 * gap + 2 * latency;
        let got = times[0];
        assert!(got >= expected, "{got:?} < {expected:?}");
        assert!(got < expected + Duration::from_millis(15), "{got:?}");
    }

    #[test]
    fn ssend_waits_for_the_receiver() {
        // The receiver posts its receive no sooner than 30 ms after `start`, so a synchronous
        // send cannot end before then, however late either thread starts on a busy machine
        // (timed from each thread's own start, it came out at 27 ms under load).
        let world = InProcessWorld::new(2);
        let start = Instant::now();
        let posted = start + Duration::from_millis(30);
        let times = world.run(|t| {
            if t.rank() == 0 {
                t.ssend(1, Tag::TEST, b"x").unwrap();
                start.elapsed()
            } else {
                std::thread::sleep(posted.saturating_duration_since(Instant::now()));
                t.recv_vec(0, Tag::TEST).unwrap();
                Duration::ZERO
            }
        });
        assert!(times[0] >= Duration::from_millis(30), "{:?}", times[0]);
    }

    #[test]
    fn a_missing_message_times_out() {
        let world = InProcessWorld::new(2).with_timeout(Duration::from_millis(50));
        let err = world.endpoint(0).recv(1, Tag::TEST, &mut []).unwrap_err();
        assert!(
            matches!(err, TransportError::Timeout { peer: 1, .. }),
            "{err}"
        );
    }
}
