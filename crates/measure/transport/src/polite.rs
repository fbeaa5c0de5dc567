//! A transport whose receives sleep while they wait, for untimed traffic among more ranks
//! than cores.

use std::time::Duration;

use lgate_topology::Rank;

use crate::transport::{PoliteWait, Tag, Transport, TransportError};
use crate::CpuScope;

/// Another transport whose receives poll for the message and sleep in between (a share of
/// the time waited, [`PoliteWait`]) instead of spinning in the message library: for untimed
/// traffic such as checking broadcasts, where ranks that wait for their turn would otherwise
/// keep the cores from the ranks that send. Never for timed code (a receive notices its
/// message up to 1/32 of its wait late). Sends and `send_recv` are the inner transport's.
#[derive(Debug, Clone, Copy)]
pub struct SleepingReceives<'a, T: Transport + ?Sized> {
    inner: &'a T,
}

impl<'a, T: Transport + ?Sized> SleepingReceives<'a, T> {
    /// `inner`, receiving with sleeps.
    pub fn new(inner: &'a T) -> Self {
        SleepingReceives { inner }
    }
}

impl<T: Transport + ?Sized> Transport for SleepingReceives<'_, T> {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn send(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.inner.send(to, tag, data)
    }
    fn ssend(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.inner.ssend(to, tag, data)
    }
    fn send_polite(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.inner.send_polite(to, tag, data)
    }
    fn send_detached(&self, to: Rank, tag: Tag, data: Vec<u8>) -> Result<(), TransportError> {
        self.inner.send_detached(to, tag, data)
    }
    fn detached_sent(&self) -> Result<bool, TransportError> {
        self.inner.detached_sent()
    }
    fn recv(&self, from: Rank, tag: Tag, buf: &mut [u8]) -> Result<usize, TransportError> {
        let mut wait = PoliteWait::new(self.inner.wait_limit());
        while self.inner.probe(from, tag)?.is_none() {
            // `self`, not the inner transport: no peer wakes this wait (`notifies` is false),
            // so its sleeps follow the time waited.
            wait.pause(self, Some(from), tag)?;
        }
        self.inner.recv(from, tag, buf)
    }
    fn probe(&self, from: Rank, tag: Tag) -> Result<Option<usize>, TransportError> {
        self.inner.probe(from, tag)
    }
    fn probe_any(&self, tag: Tag) -> Result<Option<(Rank, usize)>, TransportError> {
        self.inner.probe_any(tag)
    }
    fn processor_name(&self) -> String {
        self.inner.processor_name()
    }
    fn library_version(&self) -> String {
        self.inner.library_version()
    }
    fn library_settings(&self) -> Option<lgate_rundir::MpiSettings> {
        self.inner.library_settings()
    }
    fn send_all(&self, tag: Tag, messages: &[(Rank, &[u8])]) -> Result<(), TransportError> {
        self.inner.send_all(tag, messages)
    }
    fn send_recv(
        &self,
        tag: Tag,
        to: Rank,
        data: &[u8],
        from: Rank,
        buf: &mut [u8],
    ) -> Result<usize, TransportError> {
        // Both sides may be in it at once: waiting for the message before sending would
        // deadlock a ring, so this one waits in the library.
        self.inner.send_recv(tag, to, data, from, buf)
    }
    fn library_broadcast(&self, buf: &mut [u8], root: Rank) -> Result<bool, TransportError> {
        self.inner.library_broadcast(buf, root)
    }
    fn library_barrier(&self) -> Result<bool, TransportError> {
        self.inner.library_barrier()
    }
    fn wait_limit(&self) -> Option<Duration> {
        self.inner.wait_limit()
    }
    fn cpu_scope(&self) -> CpuScope {
        self.inner.cpu_scope()
    }
    fn yields_while_waiting(&self) -> bool {
        self.inner.yields_while_waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InProcessWorld;

    #[test]
    fn a_receive_sleeps_until_its_message_comes() {
        let got = InProcessWorld::new(2).run(|t| {
            let polite = SleepingReceives::new(&t);
            if t.rank() == 0 {
                std::thread::sleep(Duration::from_millis(100));
                polite.send(1, Tag::TEST, b"late").unwrap();
                (Vec::new(), Duration::ZERO)
            } else {
                let started = crate::cpu_time(crate::CpuScope::Thread);
                let mut buf = [0u8; 8];
                let n = polite.recv(0, Tag::TEST, &mut buf).unwrap();
                (
                    buf[..n].to_vec(),
                    crate::cpu_time(crate::CpuScope::Thread) - started,
                )
            }
        });
        assert_eq!(got[1].0, b"late");
        // A spinning receive would burn the whole 100 ms; sleeping ones wake about 40 times
        // (sleeps of 1/32 of the time waited, from 50 us). The bound leaves 10x for a busy
        // machine's slower wake-ups and still fails a spin.
        assert!(
            got[1].1 < Duration::from_millis(50),
            "{:?} of CPU",
            got[1].1
        );
    }
}
