//! Results on their way to rank 0: each one a record (what rank 0 keeps of it, and its journal
//! record, made by the sender), and each host's first rank relaying its host's records to rank
//! 0 in batches, so that rank 0 neither parses every result nor takes a message for each.

use super::*;

/// The fixed part of a record: i, j (u64), sweep (u32), stage (u8), start, end, screening
/// value, the smallest size's, the floors at the largest and smallest size (f64, NaN for
/// none), the journal record's length (u32); little-endian.
const HEADER: usize = 8 + 8 + 4 + 1 + 8 + 8 + 8 + 8 + 8 + 8 + 4;

/// A relay forwards its batch once it holds this many bytes (about 2000 results)...
const BATCH_BYTES: usize = 1 << 20;
/// ...or once its oldest result has waited this long: rank 0 takes a message per relay at most
/// twice a second (at 100 ms, one a result on a 32-host run, each a wake-up: 8-13 us of rank
/// 0's CPU a result on a 2-CPU AMD guest, 2-3 us on an Intel one).
const BATCH_AGE: Duration = Duration::from_millis(500);

/// One result as rank 0 takes it in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Record<'a> {
    pub(super) sweep: u32,
    pub(super) pair: Pair,
    pub(super) stage: Option<Stage>,
    pub(super) start_s: f64,
    pub(super) end_s: f64,
    /// The screening stages' value the follow-up is chosen from.
    pub(super) screened: Option<f64>,
    /// The round trip at the smallest screening size, NaN for none.
    pub(super) smallest: f64,
    /// The least repetition at the largest screening size, NaN for none.
    pub(super) floor: f64,
    /// The least repetition at the smallest screening size, NaN for none.
    pub(super) smallest_floor: f64,
    /// The journal record, as the run's journal format writes it.
    pub(super) journal: &'a [u8],
}

fn stage_code(stage: Option<Stage>) -> u8 {
    match stage {
        None => 0,
        Some(Stage::Hosts) => 1,
        Some(Stage::Between) => 2,
        Some(Stage::Refine) => 3,
        Some(Stage::Alone) => 4,
        Some(Stage::Sample) => 5,
    }
}

fn stage_of(code: u8) -> Result<Option<Stage>, String> {
    Ok(match code {
        0 => None,
        1 => Some(Stage::Hosts),
        2 => Some(Stage::Between),
        3 => Some(Stage::Refine),
        4 => Some(Stage::Alone),
        5 => Some(Stage::Sample),
        _ => return Err(format!("stage {code} is none of the stages")),
    })
}

/// Appends `entry` to `out` as a record, its journal record made here in `format`.
pub(super) fn encode(entry: &JournalEntry, format: JournalFormat, out: &mut Vec<u8>) {
    let mut line = Vec::new();
    format.encode(entry, &mut line);
    let (screened, smallest, floor, smallest_floor) = screened_pair(entry)
        .map_or((f64::NAN, f64::NAN, f64::NAN, f64::NAN), |s| {
            (s.value, s.smallest, s.floor, s.smallest_floor)
        });
    out.reserve(HEADER + line.len());
    out.extend_from_slice(&(entry.i as u64).to_le_bytes());
    out.extend_from_slice(&(entry.j as u64).to_le_bytes());
    out.extend_from_slice(&entry.sweep.to_le_bytes());
    out.push(stage_code(entry.stage));
    for x in [
        entry.start_s,
        entry.end_s,
        screened,
        smallest,
        floor,
        smallest_floor,
    ] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.extend_from_slice(&(line.len() as u32).to_le_bytes());
    out.extend_from_slice(&line);
}

/// The records of a message, in order; an error names what does not parse.
pub(super) fn records(mut bytes: &[u8]) -> impl Iterator<Item = Result<Record<'_>, String>> {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let record = take_record(bytes);
        match record {
            Ok((r, rest)) => {
                bytes = rest;
                Some(Ok(r))
            }
            Err(e) => {
                bytes = &[];
                Some(Err(e))
            }
        }
    })
}

fn take_record(bytes: &[u8]) -> Result<(Record<'_>, &[u8]), String> {
    let (head, rest) = bytes
        .split_at_checked(HEADER)
        .ok_or_else(|| format!("a record of {} bytes, shorter than {HEADER}", bytes.len()))?;
    let u64_at = |k: usize| u64::from_le_bytes(head[k..k + 8].try_into().expect("8 bytes"));
    let f64_at = |k: usize| f64::from_bits(u64_at(k));
    let (i, j) = (u64_at(0) as usize, u64_at(8) as usize);
    let sweep = u32::from_le_bytes(head[16..20].try_into().expect("4 bytes"));
    let stage = stage_of(head[20])?;
    let len = u32::from_le_bytes(head[69..73].try_into().expect("4 bytes")) as usize;
    let (line, rest) = rest
        .split_at_checked(len)
        .ok_or_else(|| format!("a journal record of {len} bytes with {} left", rest.len()))?;
    if i >= j || line.is_empty() {
        return Err(format!("pair {i}-{j} with an empty journal record"));
    }
    let screened = Some(f64_at(37)).filter(|v| !v.is_nan());
    let record = Record {
        sweep,
        pair: Pair::new(i, j),
        stage,
        start_s: f64_at(21),
        end_s: f64_at(29),
        screened,
        smallest: f64_at(45),
        floor: f64_at(53),
        smallest_floor: f64_at(61),
        journal: line,
    };
    Ok((record, rest))
}

/// Per rank, the rank its results go to: its host's first rank (rank 0 for rank 0's host).
pub(super) fn relays(ranks: &[lgate_rundir::RankInfo]) -> Vec<Rank> {
    let mut first: HashMap<&str, Rank> = HashMap::new();
    ranks
        .iter()
        .enumerate()
        .map(|(r, info)| *first.entry(info.host.as_str()).or_insert(r))
        .collect()
}

/// The ranks that send results to `rank` (`relays` as [`relays`] makes them): the members of
/// its host when it relays, and every relay when it is rank 0.
pub(super) fn result_senders(rank: Rank, relays: &[Rank]) -> Vec<Rank> {
    relays
        .iter()
        .enumerate()
        .filter(|&(r, &to)| r != rank && (to == rank || (rank == 0 && to == r)))
        .map(|(r, _)| r)
        .collect()
}

/// A host's first rank (other than rank 0): its host's results in, batches out to rank 0.
#[derive(Debug)]
pub(super) struct Relay {
    /// Ranks whose results come here, this one not among them.
    members: Vec<Rank>,
    /// How the journal records are written.
    format: JournalFormat,
    /// Ends of parts of the program the members have said, not yet waited for.
    ended: usize,
    batch: Vec<u8>,
    /// When the oldest result of the batch came.
    since: Option<Instant>,
}

impl Relay {
    /// The relay of `rank`, whose results `relays` say where to go.
    pub(super) fn new(rank: Rank, relays: &[Rank], format: JournalFormat) -> Self {
        Relay {
            members: result_senders(rank, relays),
            format,
            ended: 0,
            batch: Vec::new(),
            since: None,
        }
    }

    /// Keeps this rank's own result.
    pub(super) fn keep(
        &mut self,
        t: &dyn Transport,
        entry: &JournalEntry,
    ) -> Result<(), HarnessError> {
        encode(entry, self.format, &mut self.batch);
        self.since.get_or_insert_with(Instant::now);
        self.forward_if_due(t)
    }

    /// Whether a member's result or end has arrived.
    pub(super) fn has_mail(&self, t: &dyn Transport) -> Result<bool, HarnessError> {
        Ok(t.probe_any(Tag::RESULT)?.is_some())
    }

    /// Takes in what the members have sent, and forwards the batch when it is due.
    pub(super) fn drain(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        while let Some((from, len)) = t.probe_any(Tag::RESULT)? {
            let start = self.batch.len();
            self.batch.resize(start + len, 0);
            let n = t.recv(from, Tag::RESULT, &mut self.batch[start..])?;
            self.batch.truncate(start + n);
            if n == 0 {
                self.ended += 1;
            } else {
                self.since.get_or_insert_with(Instant::now);
            }
        }
        self.forward_if_due(t)
    }

    /// Forwards the batch when it is large or old enough.
    pub(super) fn forward_if_due(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        let due =
            self.batch.len() >= BATCH_BYTES || self.since.is_some_and(|s| s.elapsed() >= BATCH_AGE);
        if due {
            self.forward(t)?;
        }
        t.detached_sent()?;
        Ok(())
    }

    fn forward(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        self.since = None;
        if !self.batch.is_empty() {
            t.send_detached(0, Tag::RESULT, std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    /// Waits until every member is done with this part of the program, then forwards all.
    pub(super) fn end_part(
        &mut self,
        t: &dyn Transport,
        clock: &mut RankClock,
    ) -> Result<(), HarnessError> {
        let mut wait = PoliteWait::new(t.wait_limit());
        loop {
            if self.has_mail(t)? {
                clock.charge(Activity::Waiting);
                self.drain(t)?;
                clock.charge(Activity::Collecting);
            }
            if self.ended >= self.members.len() {
                break;
            }
            wait.pause_for_any(t, &self.members, Tag::RESULT)?;
        }
        // A member may be a part ahead already (the follow-up needs only that rank 0 has
        // every result, which batches sent on time give it): its next end stays counted.
        self.ended -= self.members.len();
        self.forward(t)?;
        t.detached_sent()?;
        clock.charge(Activity::Collecting);
        Ok(())
    }

    /// Waits until rank 0 has taken every batch.
    pub(super) fn finish(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        let mut wait = PoliteWait::new(t.wait_limit());
        while !t.detached_sent()? {
            // Rank 0 does not wake this rank when it takes a batch.
            wait.pause_unannounced(t, 0, Tag::RESULT)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_transport::InProcessWorld;

    /// A ping-pong result of one time at each size.
    fn pingpong(sizes: &[(usize, f64)]) -> PairResult {
        let rtt = |t: f64| lgate_stats::Summary {
            min: t,
            p10: t,
            median: t,
            mean: t,
            p90: t,
            max: t,
            count: 8,
            warmup: 5,
            outliers: 0,
        };
        let sizes = (sizes.iter())
            .map(|&(size, t)| lgate_rundir::RoundTrips { size, rtt: rtt(t) })
            .collect();
        lgate_rundir::PingPongResult { sizes }.into()
    }

    fn entry(i: usize, j: usize, stage: Option<Stage>, result: PairResult) -> JournalEntry {
        JournalEntry {
            sweep: 2,
            i,
            j,
            start_s: 0.25,
            end_s: 0.5,
            result,
            stage,
        }
    }

    #[test]
    fn records_carry_what_rank_0_keeps_and_the_journal_record() {
        // Times a float holds exactly, so the binary record gives them back as they were.
        let screening = pingpong(&[(0, 0.5), (65536, 0.75)]);
        let a = entry(3, 7, Some(Stage::Hosts), screening);
        let full = lgate_rundir::PairMeasurement {
            clock_overhead_s: 0.125,
            sizes: Vec::new(),
        };
        let b = entry(0, 1, None, full.into());
        for format in JournalFormat::ALL {
            let mut bytes = Vec::new();
            encode(&a, format, &mut bytes);
            encode(&b, format, &mut bytes);
            let got: Vec<Record> = records(&bytes).collect::<Result<_, _>>().unwrap();
            assert_eq!(got.len(), 2);
            assert_eq!(
                (got[0].pair, got[0].sweep, got[0].stage),
                (Pair::new(3, 7), 2, Some(Stage::Hosts))
            );
            assert_eq!((got[0].start_s, got[0].end_s), (0.25, 0.5));
            assert_eq!(got[0].screened, screened_pair(&a).map(|s| s.value));
            assert!(got[0].screened.is_some());
            assert_eq!(got[1].screened, None);
            let mut file = Vec::new();
            if format == JournalFormat::Binary {
                file.extend_from_slice(lgate_rundir::journal_binary::MAGIC);
            }
            for r in &got {
                file.extend_from_slice(r.journal);
            }
            let back = lgate_rundir::parse_journal(&file[..], std::path::Path::new("j")).unwrap();
            assert_eq!(back.entries, vec![a.clone(), b.clone()], "{format:?}");
        }
    }

    #[test]
    fn cut_or_foreign_bytes_are_errors_not_records() {
        let mut bytes = Vec::new();
        encode(
            &entry(1, 2, Some(Stage::Sample), pingpong(&[(0, 1.0)])),
            JournalFormat::Binary,
            &mut bytes,
        );
        for cut in [1, HEADER - 1, HEADER + 1, bytes.len() - 1] {
            let got: Vec<_> = records(&bytes[..cut]).collect();
            assert_eq!(got.len(), 1, "cut at {cut}");
            assert!(got[0].is_err(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        bad[20] = 9;
        assert!(records(&bad).next().unwrap().is_err());
        assert_eq!(records(&[]).count(), 0);
    }

    #[test]
    fn a_relay_waits_for_each_part_even_when_members_are_a_part_ahead() {
        let world = InProcessWorld::new(3);
        let relays = [0, 1, 1];
        let got = world.run(|t| -> Result<usize, HarnessError> {
            let record = |i, j| {
                let mut bytes = Vec::new();
                encode(
                    &entry(i, j, Some(Stage::Hosts), pingpong(&[(0, 1.0)])),
                    JournalFormat::Binary,
                    &mut bytes,
                );
                bytes
            };
            match t.rank() {
                2 => {
                    // Both parts' results and ends before the relay looks.
                    for part in 0..2 {
                        t.send_polite(1, Tag::RESULT, &record(part, 2))?;
                        t.send_polite(1, Tag::RESULT, &[])?;
                    }
                    Ok(0)
                }
                1 => {
                    std::thread::sleep(Duration::from_millis(50));
                    let mut relay = Relay::new(1, &relays, JournalFormat::Binary);
                    let mut clock = RankClock::start(t.cpu_scope());
                    relay.keep(&t, &entry(1, 2, None, pingpong(&[(0, 2.0)])))?;
                    relay.end_part(&t, &mut clock)?;
                    relay.end_part(&t, &mut clock)?;
                    relay.finish(&t)?;
                    Ok(0)
                }
                _ => {
                    let mut records = 0;
                    while records < 3 {
                        let bytes = t.recv_vec(1, Tag::RESULT)?;
                        records += records_in(&bytes);
                    }
                    Ok(records)
                }
            }
        });
        let got: Vec<usize> = got.into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![3, 0, 0]);
    }

    fn records_in(bytes: &[u8]) -> usize {
        records(bytes).collect::<Result<Vec<_>, _>>().unwrap().len()
    }

    #[test]
    fn each_rank_relays_through_its_hosts_first_rank() {
        let ranks: Vec<_> = ["a", "b", "a", "c", "b", "c"]
            .iter()
            .enumerate()
            .map(|(r, host)| lgate_rundir::RankInfo::on_host(r, host.to_string()))
            .collect();
        assert_eq!(relays(&ranks), vec![0, 1, 0, 3, 1, 3]);
        assert_eq!(
            Relay::new(1, &relays(&ranks), JournalFormat::Json).members,
            [4]
        );
        assert_eq!(
            Relay::new(3, &relays(&ranks), JournalFormat::Json).members,
            [5]
        );
        // Rank 0 hears from its host's other rank and from the relays.
        assert_eq!(result_senders(0, &relays(&ranks)), [1, 2, 3]);
    }
}
