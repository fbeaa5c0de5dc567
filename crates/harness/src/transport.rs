//! The few message-passing operations the harness and pair tests need.

use std::time::{Duration, Instant};

use lgate_topology::Rank;

/// A message tag. The harness reserves the tags below [`Tag::TEST`]; pair tests use tags from
/// [`Tag::TEST`] up.
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
    /// The first tag free for pair tests.
    pub const TEST: Tag = Tag(16);
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
    fn library_settings(&self) -> Option<serde_json::Value> {
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
            wait.pause(self.rank(), from, tag)?;
        }
    }
}

/// Waiting without spinning: a few quick polls, then sleeps that grow to a cap.
///
/// When ranks outnumber cores, a spinning idle rank lands on the core of the pair being measured
/// and adds scheduler steps of 100 µs to its times; sleeping ranks do not.
#[derive(Debug)]
pub struct PoliteWait {
    started: Instant,
    polls: u32,
    sleep: Duration,
    limit: Option<Duration>,
}

impl PoliteWait {
    /// Quick polls before the first sleep.
    const QUICK_POLLS: u32 = 16;
    /// The first sleep.
    const FIRST_SLEEP: Duration = Duration::from_micros(20);
    /// The longest sleep.
    const MAX_SLEEP: Duration = Duration::from_micros(500);

    /// A wait that gives up after `limit`, or never.
    pub fn new(limit: Option<Duration>) -> Self {
        PoliteWait {
            started: Instant::now(),
            polls: 0,
            sleep: Self::FIRST_SLEEP,
            limit,
        }
    }

    /// Pauses before the next poll; errors once the wait has lasted longer than its limit.
    pub fn pause(&mut self, rank: Rank, peer: Rank, tag: Tag) -> Result<(), TransportError> {
        let waited = self.started.elapsed();
        if self.limit.is_some_and(|limit| waited > limit) {
            return Err(TransportError::Timeout {
                rank,
                peer,
                tag: tag.0,
                waited,
            });
        }
        self.nap();
        Ok(())
    }

    /// Pauses before the next poll, whatever the limit.
    pub fn nap(&mut self) {
        if self.polls < Self::QUICK_POLLS {
            self.polls += 1;
            std::hint::spin_loop();
            return;
        }
        std::thread::sleep(self.sleep);
        self.sleep = (self.sleep * 2).min(Self::MAX_SLEEP);
    }
}
