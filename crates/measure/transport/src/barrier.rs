//! The subset barrier: a dissemination barrier over point-to-point messages among any list of
//! ranks, so that subtrees synchronise without touching each other.

use lgate_topology::Rank;

use crate::transport::{PoliteWait, Tag, Transport, TransportError};

/// A dissemination barrier among `members` (Hensgen, Finkel and Manber): in round k each
/// member signals the member 2^k places after it and waits for the one 2^k places before it,
/// so after ceil(log2 n) rounds every member has heard, directly or not, from every other.
#[derive(Debug, Clone, Copy)]
pub struct SubsetBarrier<'a> {
    members: &'a [Rank],
    me: usize,
}

impl<'a> SubsetBarrier<'a> {
    /// The barrier as seen by `rank`; `None` if `rank` is not a member.
    pub fn new(members: &'a [Rank], rank: Rank) -> Option<Self> {
        let me = members.iter().position(|&r| r == rank)?;
        Some(SubsetBarrier { members, me })
    }

    /// The ranks taking part.
    pub fn members(&self) -> &[Rank] {
        self.members
    }

    /// Returns once every member has entered the barrier with the same `id`.
    ///
    /// Waits without spinning; `idle` runs between polls (rank 0 uses it to collect results).
    /// A message carrying another `id` means the ranks disagree about the schedule: an error.
    pub fn wait<E: From<TransportError>>(
        &self,
        transport: &dyn Transport,
        id: u64,
        idle: &mut dyn FnMut() -> Result<(), E>,
    ) -> Result<(), E> {
        let n = self.members.len();
        let mut distance = 1;
        while distance < n {
            let to = self.members[(self.me + distance) % n];
            let from = self.members[(self.me + n - distance) % n];
            // Polite: a first message to a rank may wait for a connection, which that rank
            // makes only when it next looks (MPI_Send would spin until then).
            transport.send_polite(to, Tag::BARRIER, &id.to_le_bytes())?;
            await_token(transport, from, id, idle)?;
            distance *= 2;
        }
        Ok(())
    }
}

/// The turn passed from the ranks that just finished a test to the ranks of the next test in
/// a unit of tests run one at a time: each rank of `from` sends a token to each rank of `to`
/// and goes on at once; each rank of `to` returns once it has the tokens of all of `from`.
///
/// Half a barrier: the finished pair does not wait, and the ranks of neither pair take no
/// part, so a rank wakes about once per test of its own instead of about log2(n) times per
/// test of its unit.
#[derive(Debug, Clone, Copy)]
pub struct Handoff<'a> {
    from: &'a [Rank],
    to: &'a [Rank],
}

impl<'a> Handoff<'a> {
    /// The turn passed from `from` to `to`.
    pub fn new(from: &'a [Rank], to: &'a [Rank]) -> Self {
        Handoff { from, to }
    }

    /// Whether `rank` takes part (is in `from` or `to`).
    pub fn involves(&self, rank: Rank) -> bool {
        self.from.contains(&rank) || self.to.contains(&rank)
    }

    /// `rank`'s part: its tokens sent if it is in `from`, then, if it is in `to`, a wait
    /// without spinning for the tokens of the others in `from` (`idle` runs between polls).
    /// A token carrying another `id` means the ranks disagree about the schedule: an error.
    pub fn pass<E: From<TransportError>>(
        &self,
        transport: &dyn Transport,
        id: u64,
        idle: &mut dyn FnMut() -> Result<(), E>,
    ) -> Result<(), E> {
        let rank = transport.rank();
        if self.from.contains(&rank) {
            for &to in self.to.iter().filter(|&&to| to != rank) {
                transport.send_polite(to, Tag::BARRIER, &id.to_le_bytes())?;
            }
        }
        if !self.to.contains(&rank) {
            return Ok(());
        }
        for &from in self.from.iter().filter(|&&from| from != rank) {
            await_token(transport, from, id, idle)?;
        }
        Ok(())
    }
}

/// Waits without spinning for the barrier or handoff message `id` from `from`, running
/// `idle` between polls.
fn await_token<E: From<TransportError>>(
    transport: &dyn Transport,
    from: Rank,
    id: u64,
    idle: &mut dyn FnMut() -> Result<(), E>,
) -> Result<(), E> {
    let mut wait = PoliteWait::new(transport.wait_limit());
    loop {
        if transport.probe(from, Tag::BARRIER)?.is_some() {
            return Ok(receive_token(transport, from, id)?);
        }
        idle()?;
        wait.pause(transport, Some(from), Tag::BARRIER)?;
    }
}

/// Receives the barrier or handoff message from `from` that has arrived and checks its id.
fn receive_token(transport: &dyn Transport, from: Rank, id: u64) -> Result<(), TransportError> {
    let mut buf = [0u8; 8];
    let len = transport.recv(from, Tag::BARRIER, &mut buf)?;
    let got = u64::from_le_bytes(buf);
    if len != 8 || got != id {
        return Err(TransportError::Protocol {
            rank: transport.rank(),
            message: format!(
                "barrier {id:#x} received barrier {got:#x} from rank {from}: the ranks disagree \
                 about the schedule (are they running the same binary with the same arguments?)"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::in_process::{InProcessWorld, LinkModel};

    /// Random delivery delays of up to 3 ms on every message.
    struct Jittery(Mutex<rand_chacha::ChaCha8Rng>);

    impl LinkModel for Jittery {
        fn latency(&self, _: Rank, _: Rank) -> Duration {
            Duration::from_micros(self.0.lock().unwrap().random_range(0..3000))
        }
    }

    #[test]
    fn no_rank_leaves_before_the_last_one_arrives() {
        for (size, seed) in [(2, 1), (3, 2), (5, 3), (8, 4), (13, 5)] {
            let world = InProcessWorld::new(size)
                .with_link_model(Jittery(Mutex::new(rand_chacha::ChaCha8Rng::seed_from_u64(
                    seed,
                ))))
                .with_timeout(Duration::from_secs(20));
            let members: Vec<Rank> = (0..size).rev().collect();
            let origin = Instant::now();
            let times = world.run(|t| {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed * 100 + t.rank() as u64);
                let barrier = SubsetBarrier::new(&members, t.rank()).unwrap();
                let mut out = Vec::new();
                for round in 0..5u64 {
                    // Adversarial arrival: each rank comes late by a random amount.
                    std::thread::sleep(Duration::from_micros(rng.random_range(0..4000)));
                    let entered = origin.elapsed();
                    barrier
                        .wait::<TransportError>(&t, round, &mut || Ok(()))
                        .unwrap();
                    out.push((entered, origin.elapsed()));
                }
                out
            });
            for round in 0..5 {
                let last_entry = times.iter().map(|t| t[round].0).max().unwrap();
                for (rank, t) in times.iter().enumerate() {
                    assert!(
                        t[round].1 >= last_entry,
                        "size {size} round {round}: rank {rank} left at {:?} before the last \
                         entry at {last_entry:?}",
                        t[round].1
                    );
                }
            }
        }
    }

    #[test]
    fn a_handoff_holds_the_next_pair_until_the_last_one_has_passed() {
        // Rank 1 of the finished pair comes 300 ms late; 1 and 2 take the turn; 3 takes no
        // part. The bounds leave 250 ms for a busy machine's scheduling.
        let world = InProcessWorld::new(4).with_timeout(Duration::from_secs(20));
        let origin = Instant::now();
        let times = world.run(|t| {
            let (from, to) = ([0, 1], [1, 2]);
            let handoff = Handoff::new(&from, &to);
            let late = [0, 300, 0, 0][t.rank()];
            std::thread::sleep(Duration::from_millis(late));
            assert_eq!(handoff.involves(t.rank()), t.rank() < 3);
            if handoff.involves(t.rank()) {
                handoff
                    .pass::<TransportError>(&t, 7, &mut || Ok(()))
                    .unwrap();
            }
            origin.elapsed()
        });
        let ms = |d: Duration| d.as_millis();
        // Rank 0 hands over and goes on at once; rank 2 waits for both.
        assert!(ms(times[0]) < 250, "{times:?}");
        assert!(ms(times[1]) >= 300 && ms(times[2]) >= 300, "{times:?}");
        assert!(ms(times[3]) < 250, "{times:?}");
        // A token with another id is a disagreement, said as such.
        let world = InProcessWorld::new(2).with_timeout(Duration::from_secs(20));
        let errors = world.run(|t| {
            let (from, to) = ([0, 0], [1, 1]);
            let id = 7 + t.rank() as u64;
            Handoff::new(&from, &to)
                .pass::<TransportError>(&t, id, &mut || Ok(()))
                .err()
                .map(|e| e.to_string())
        });
        assert!(
            errors[1].as_deref().is_some_and(|e| e.contains("disagree")),
            "{errors:?}"
        );
    }

    #[test]
    fn disjoint_subsets_do_not_wait_for_each_other() {
        let world = InProcessWorld::new(4);
        let times = world.run(|t| {
            let left = [0, 1];
            let right = [2, 3];
            let members: &[Rank] = if t.rank() < 2 { &left } else { &right };
            let barrier = SubsetBarrier::new(members, t.rank()).unwrap();
            if t.rank() >= 2 {
                std::thread::sleep(Duration::from_millis(200));
            }
            let start = Instant::now();
            barrier
                .wait::<TransportError>(&t, 0, &mut || Ok(()))
                .unwrap();
            start.elapsed()
        });
        assert!(times[0] < Duration::from_millis(100), "{times:?}");
        assert!(times[1] < Duration::from_millis(100), "{times:?}");
    }

    #[test]
    fn a_diverged_schedule_is_reported() {
        let world = InProcessWorld::new(2).with_timeout(Duration::from_secs(5));
        let results = world.run(|t| {
            let members = [0, 1];
            let barrier = SubsetBarrier::new(&members, t.rank()).unwrap();
            barrier.wait::<TransportError>(&t, t.rank() as u64, &mut || Ok(()))
        });
        let err = results[0].as_ref().unwrap_err().to_string();
        assert!(err.contains("disagree about the schedule"), "{err}");
    }

    #[test]
    fn a_single_member_passes_at_once() {
        let world = InProcessWorld::new(1);
        world.run(|t| {
            SubsetBarrier::new(&[0], 0)
                .unwrap()
                .wait::<TransportError>(&t, 9, &mut || Ok(()))
                .unwrap()
        });
        assert!(SubsetBarrier::new(&[1, 2], 0).is_none());
    }
}
