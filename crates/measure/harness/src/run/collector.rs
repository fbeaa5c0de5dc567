//! Rank 0's collector of results (the journal, the stage times) and the progress it shows.

use super::*;
use lgate_knobs::Knob;

/// Rank 0's side: results in, journal out, progress on stderr.
pub(super) struct Collector {
    pub(super) prepared: Prepared,
    pub(super) journal: lgate_rundir::Journal,
    pub(super) expected: usize,
    pub(super) received: usize,
    pub(super) intervals: Vec<(f64, f64)>,
    /// Per stage of a staged run: tests and the span from first start to last end.
    pub(super) stages: Vec<(Stage, usize, f64, f64)>,
    /// The screening distances, resumed and new, for the follow-up's choice.
    pub(super) screened: ScreenedValues,
    pub(super) progress: Progress,
    pub(super) stop_after: Option<usize>,
    /// What rank 0 chose while measuring, for people (the run summary keeps it).
    notes: Vec<String>,
    /// Journal records taken in and not yet written: written once per message drained.
    pending: Vec<u8>,
    /// The ranks that send results to rank 0 (its host's ranks and the relays).
    pub(super) senders: Vec<Rank>,
}

impl Collector {
    pub(super) fn new(
        mut prepared: Prepared,
        style: ProgressStyle,
        stop_after: Option<usize>,
    ) -> Result<Self, HarnessError> {
        let journal = prepared.run.journal(prepared.journal)?;
        let meta = &prepared.meta;
        let dir = prepared.run.path();
        let resume = crate::interrupt::resume_command(&meta.launcher, meta.ranks.len(), dir);
        crate::interrupt::arm(&prepared.run.journal_file(), &resume);
        if style != ProgressStyle::Quiet {
            // Said up front as well: a launcher that kills its ranks at once leaves rank 0 no
            // time to say it when interrupted.
            eprintln!(
                "measure: writing {}/ ({} ranks); if it is interrupted, continue it with: {resume}",
                dir.display(),
                meta.ranks.len()
            );
        }
        let resumed = prepared.resumed_tests();
        crate::interrupt::record(resumed, resumed);
        Ok(Collector {
            journal,
            screened: std::mem::take(&mut prepared.screened),
            prepared,
            expected: 0,
            received: 0,
            intervals: Vec::new(),
            stages: Vec::new(),
            progress: Progress::new(style),
            stop_after,
            notes: Vec::new(),
            pending: Vec::new(),
            senders: Vec::new(),
        })
    }

    /// Says `lines` on stderr (unless quiet) and keeps them for the run summary.
    pub(super) fn note(&mut self, lines: &[String]) {
        for line in lines {
            self.progress.say(&format!("measure: {line}"));
        }
        self.notes.extend(lines.iter().cloned());
    }

    /// Expects `more` results beyond those expected so far.
    pub(super) fn expect(&mut self, more: usize) {
        self.expected += more;
        self.progress.set_total(self.expected as u64);
        self.record_for_interrupt();
    }

    /// Keeps the counts that an interrupted run reports up to date.
    pub(super) fn record_for_interrupt(&self) {
        let resumed = self.prepared.resumed_tests();
        crate::interrupt::record(resumed + self.received, resumed + self.expected);
    }

    /// Takes in rank 0's own result.
    pub(super) fn accept(&mut self, entry: &JournalEntry) -> Result<(), HarnessError> {
        let mut bytes = Vec::new();
        relay::encode(entry, self.journal.format(), &mut bytes);
        self.accept_message(&bytes, 0)?;
        self.write_pending()
    }

    /// Takes in the records of one message from `from` (a rank of rank 0's host or a relay),
    /// their journal records kept.
    fn accept_message(&mut self, bytes: &[u8], from: Rank) -> Result<(), HarnessError> {
        for record in relay::records(bytes) {
            let record = record.map_err(|message| TransportError::Protocol {
                rank: 0,
                message: format!("rank {from} sent results that do not parse: {message}"),
            })?;
            self.pending.extend_from_slice(record.journal);
            self.intervals.push((record.start_s, record.end_s));
            if let Some(stage) = record.stage {
                match self.stages.iter_mut().find(|s| s.0 == stage) {
                    Some(s) => {
                        s.1 += 1;
                        s.2 = s.2.min(record.start_s);
                        s.3 = s.3.max(record.end_s);
                    }
                    None => self.stages.push((stage, 1, record.start_s, record.end_s)),
                }
                if let Some(value) = record.screened {
                    self.screened.push(ScreenedPair {
                        stage,
                        pair: record.pair,
                        value,
                        smallest: record.smallest,
                        floor: record.floor,
                        smallest_floor: record.smallest_floor,
                    });
                }
            }
            self.received += 1;
            self.progress.advance(self.received as u64, record.stage);
            if self.stop_after == Some(self.received) {
                self.write_pending()?;
                self.journal.sync()?;
                return Err(HarnessError::Setup(format!(
                    "stopped after {} pairs, as {} asked",
                    self.received,
                    Knob::StopAfter
                )));
            }
        }
        Ok(())
    }

    /// Writes the records taken in; only then are they counted as kept if the run is
    /// interrupted.
    fn write_pending(&mut self) -> Result<(), HarnessError> {
        self.journal.append_records(&self.pending)?;
        self.pending.clear();
        self.record_for_interrupt();
        Ok(())
    }

    pub(super) fn drain(&mut self, t: &dyn Transport) -> Result<(), HarnessError> {
        let mut buf = Vec::new();
        while let Some((from, len)) = t.probe_any(Tag::RESULT)? {
            buf.resize(len, 0);
            let n = t.recv(from, Tag::RESULT, &mut buf)?;
            self.accept_message(&buf[..n], from)?;
        }
        self.write_pending()
    }

    /// Waits, politely, until every expected result is in.
    pub(super) fn collect_all(
        &mut self,
        t: &dyn Transport,
        clock: &mut RankClock,
    ) -> Result<(), HarnessError> {
        let mut wait = PoliteWait::new(t.wait_limit());
        while self.received < self.expected {
            collect(t, Some(self), clock)?;
            if self.received < self.expected {
                wait.pause_for_any(t, &self.senders, Tag::RESULT)?;
            }
        }
        Ok(())
    }

    pub(super) fn finish(
        mut self,
        wall: Duration,
        rank_time: Vec<RankTime>,
    ) -> Result<RunReport, HarnessError> {
        self.journal.sync()?;
        self.progress.done();
        let wall_s = wall.as_secs_f64();
        let testing_s = union_length(&mut self.intervals);
        // Every entry of a resumed journal is a test done (or the run would not resume).
        let resumed_pairs = self.prepared.resumed_tests();
        let summary = RunSummary {
            pairs_measured: self.received,
            pairs_total: resumed_pairs + self.received,
            wall_s,
            testing_s,
            overhead_share: RunSummary::overhead_share(wall_s, testing_s),
            rank_time,
            stages: {
                self.stages.sort_by_key(|s| s.0);
                self.stages
                    .iter()
                    .map(|&(stage, tests, start, end)| StageSummary {
                        stage,
                        tests,
                        wall_s: end - start,
                    })
                    .collect()
            },
            notes: std::mem::take(&mut self.notes),
        };
        // Re-deriving a finished run measures nothing: its record of the measuring stays.
        let mut parts = std::mem::take(&mut self.prepared.meta.parts);
        let (end, recorded) = match self.prepared.finished.take() {
            Some((end, Some(old))) if self.received == 0 => {
                parts.pop();
                (end, old)
            }
            _ => {
                let end = now_rfc3339();
                if let Some(last) = parts.last_mut() {
                    last.end = Some(end.clone());
                    last.pairs_measured = self.received;
                    last.wall_s = Some(wall_s);
                    last.testing_s = Some(testing_s);
                }
                let total = RunSummary::over_parts(&parts, summary.pairs_total, summary.clone());
                (Some(end), total)
            }
        };
        let meta = RunMeta {
            status: RunStatus::Complete,
            end,
            summary: Some(recorded),
            parts,
            ..self.prepared.meta
        };
        self.prepared.run.write_meta(&meta)?;
        Ok(RunReport {
            run_dir: self.prepared.run.path().to_path_buf(),
            summary,
            resumed_pairs,
            setup_s: 0.0,
        })
    }
}

/// The total length covered by a set of intervals.
pub(super) fn union_length(intervals: &mut [(f64, f64)]) -> f64 {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for &(s, e) in intervals.iter() {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        total += ce - cs;
    }
    total
}

/// Progress on stderr: a bar, or a plain line every few seconds.
pub(super) enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        /// The tests to run, once said (`None` before).
        total: Option<u64>,
        started: Instant,
        next: Duration,
    },
    Quiet,
}

impl Progress {
    /// The first line comes this long after the start (or at the first result after it).
    const FIRST_LINE: Duration = Duration::from_secs(2);
    /// Later lines come this often.
    const LINE_EVERY: Duration = Duration::from_secs(10);

    pub(super) fn new(style: ProgressStyle) -> Self {
        match style {
            ProgressStyle::Quiet | ProgressStyle::None => Progress::Quiet,
            ProgressStyle::Bar => Self::bar(indicatif::ProgressDrawTarget::term_like_with_hz(
                // console's terminal writes its control codes whatever stderr is.
                Box::new(console::Term::stderr()),
                4,
            )),
            ProgressStyle::Auto if std::io::stderr().is_terminal() => {
                Self::bar(indicatif::ProgressDrawTarget::stderr())
            }
            ProgressStyle::Auto | ProgressStyle::Lines => Progress::Lines {
                total: None,
                started: Instant::now(),
                next: Self::FIRST_LINE,
            },
        }
    }

    pub(super) fn bar(target: indicatif::ProgressDrawTarget) -> Self {
        let bar = indicatif::ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "measure {msg}{bar:30} {pos}/{len} pairs  {per_sec}  ETA {eta}",
            )
            .expect("a valid template"),
        );
        Progress::Bar(bar)
    }

    pub(super) fn say(&self, line: &str) {
        match self {
            Progress::Bar(bar) => bar.println(line),
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    pub(super) fn set_total(&mut self, new_total: u64) {
        match self {
            Progress::Bar(bar) => bar.set_length(new_total),
            Progress::Lines { total, .. } => {
                // Said at once, so that a log shows the size of the job before its first line.
                match *total {
                    None => eprintln!("measure: {new_total} pair tests to run"),
                    Some(0) if new_total > 0 => {
                        eprintln!("measure: {new_total} pair tests to run")
                    }
                    Some(old) if new_total > old => eprintln!(
                        "measure: {} more pair tests, {new_total} in all",
                        new_total - old
                    ),
                    _ => {}
                }
                *total = Some(new_total);
            }
            Progress::Quiet => {}
        }
    }

    pub(super) fn advance(&mut self, done: u64, stage: Option<Stage>) {
        let label = stage
            .map(|s| format!("stage {}, ", s.name()))
            .unwrap_or_default();
        match self {
            Progress::Bar(bar) => {
                bar.set_message(label.replace(", ", " "));
                bar.set_position(done)
            }
            Progress::Lines {
                total,
                started,
                next,
            } => {
                let elapsed = started.elapsed();
                let total = total.unwrap_or(0);
                if elapsed >= *next {
                    *next = elapsed + Self::LINE_EVERY;
                    let secs = elapsed.as_secs_f64();
                    let rate = done as f64 / secs.max(1e-9);
                    let eta = total.saturating_sub(done) as f64 / rate.max(1e-9);
                    eprintln!(
                        "measure: {label}{done}/{total} pairs ({:.0}%), {rate:.1} pairs/s, ETA {}",
                        100.0 * done as f64 / total.max(1) as f64,
                        humantime::format_duration(Duration::from_secs(eta.round() as u64))
                    );
                }
            }
            Progress::Quiet => {}
        }
    }

    pub(super) fn done(&mut self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
