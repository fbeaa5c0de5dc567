//! The pair test the harness runs for each pair, and the ping-pong test.

use std::time::Instant;

use crate::schedule::Pair;
use crate::HarnessError;
pub use lgate_rundir::{PairResult, PingPongResult, RoundTrips, TestInfo};
use lgate_stats::Summary;
use lgate_transport::{Tag, Transport, TransportError};

/// Which side of a pair a rank is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Rank `i`, the smaller: it times the test and reports the result.
    Sender,
    /// Rank `j`, the larger.
    Receiver,
}

/// A test between two ranks that the harness runs for every pair: its own parameters and
/// its own result.
pub trait PairTest {
    /// The test's parameters, as meta.json records them.
    type Parameters: Into<TestInfo>;
    /// One pair's result, as the journal records it.
    type Record: Into<PairResult>;
    /// The test's parameters, recorded in meta.json and compared when a run is resumed.
    fn parameters(&self) -> Self::Parameters;
    /// Runs the test of `pair` on one of its ranks; the sender returns the result, the
    /// receiver `None`. Both ranks are called at about the same time.
    fn test(
        &mut self,
        transport: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<Self::Record>, TransportError>;
}

/// Any [`PairTest`], as the harness runs it: its parameters and results in the run
/// directory's tagged forms, so that one run can hold a screening test and a full one.
pub trait AnyPairTest {
    /// The test and its parameters, recorded in meta.json and compared when a run is resumed.
    fn info(&self) -> TestInfo;
    /// [`PairTest::test`], the result as the journal records it.
    fn run(
        &mut self,
        transport: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<PairResult>, TransportError>;
}

impl<T: PairTest> AnyPairTest for T {
    fn info(&self) -> TestInfo {
        self.parameters().into()
    }

    fn run(
        &mut self,
        transport: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<PairResult>, TransportError> {
        Ok(self.test(transport, pair, role)?.map(Into::into))
    }
}

/// Round-trip times for a list of message sizes: the sender sends m bytes, the receiver
/// answers with m bytes, `reps` times per size.
///
/// The clock's overhead is taken off every sample, as in the PLogP procedures. Each side
/// sends from one buffer and receives into another, as `osu_latency` does. Echoing
/// the buffer just received sends data still dirty in the receiving core's cache, which the
/// other core must then fetch from it: measured here (two cores of an EPYC, shared memory),
/// that made RTT(m)/2 1.2x `osu_latency` at 4 KiB and 1.8x from 32 KiB to 4 MiB, while
/// PLogP's RTT(m) (an empty reply) agreed with it within 3 %.
///
/// Both buffers start on a page boundary, as OSU's do: a heap buffer's offset in its cache
/// lines and pages changes from run to run, and with it the time of a copy.
#[derive(Debug, Clone)]
pub struct PingPong {
    sizes: Vec<usize>,
    reps: usize,
    send_buf: PageAligned,
    recv_buf: PageAligned,
}

/// A byte buffer whose usable part starts on a page boundary.
#[derive(Debug, Clone)]
struct PageAligned {
    bytes: Vec<u8>,
    start: usize,
}

impl PageAligned {
    /// Bytes assumed per page (4 KiB; larger pages are multiples of it).
    const PAGE: usize = 4096;

    fn new(len: usize, fill: u8) -> Self {
        let bytes = vec![fill; len + Self::PAGE];
        let start = (Self::PAGE - bytes.as_ptr() as usize % Self::PAGE) % Self::PAGE;
        PageAligned { bytes, start }
    }

    fn get(&self, len: usize) -> &[u8] {
        &self.bytes[self.start..self.start + len]
    }

    fn get_mut(&mut self, len: usize) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + len]
    }
}

impl PingPong {
    /// Repetitions per size unless told otherwise.
    pub const DEFAULT_REPS: usize = 32;
    /// Sizes 0 and 1 B to 1 MiB in powers of two.
    pub fn default_sizes() -> Vec<usize> {
        std::iter::once(0).chain((0..=20).map(|k| 1 << k)).collect()
    }

    /// A ping-pong test; `reps` must be at least 1 and `sizes` not empty.
    pub fn new(mut sizes: Vec<usize>, reps: usize) -> Result<Self, HarnessError> {
        lgate_stats::check_repetitions(reps).map_err(|source| HarnessError::Count {
            field: "reps",
            source,
        })?;
        sizes.sort_unstable();
        sizes.dedup();
        let largest = *sizes
            .last()
            .ok_or_else(|| HarnessError::Setup("give at least one message size".into()))?;
        Ok(PingPong {
            sizes,
            reps,
            send_buf: PageAligned::new(largest, 0x5a),
            recv_buf: PageAligned::new(largest, 0),
        })
    }
}

impl PairTest for PingPong {
    type Parameters = lgate_rundir::PingPongParameters;
    type Record = PingPongResult;

    fn parameters(&self) -> lgate_rundir::PingPongParameters {
        lgate_rundir::PingPongParameters {
            sizes: self.sizes.clone(),
            reps: self.reps,
        }
    }

    fn test(
        &mut self,
        t: &dyn Transport,
        pair: Pair,
        role: Role,
    ) -> Result<Option<PingPongResult>, TransportError> {
        let mut out = Vec::with_capacity(self.sizes.len());
        for &size in &self.sizes {
            let clock = crate::clock::clock_overhead();
            let out_buf = self.send_buf.get(size);
            let in_buf = self.recv_buf.get_mut(size);
            let mut samples = Vec::with_capacity(self.reps);
            for _ in 0..self.reps {
                match role {
                    Role::Sender => {
                        let start = Instant::now();
                        t.send(pair.j, Tag::TEST, out_buf)?;
                        t.recv(pair.j, Tag::TEST, in_buf)?;
                        samples.push((start.elapsed().as_secs_f64() - clock).max(0.0));
                    }
                    Role::Receiver => {
                        t.recv(pair.i, Tag::TEST, in_buf)?;
                        t.send(pair.i, Tag::TEST, out_buf)?;
                    }
                }
            }
            if let Some(rtt) = Summary::of(&samples) {
                out.push(RoundTrips { size, rtt });
            }
        }
        Ok((role == Role::Sender).then_some(PingPongResult { sizes: out }))
    }
}
