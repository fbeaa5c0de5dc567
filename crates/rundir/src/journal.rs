//! The journal: one JSON line per measured pair, flushed as pairs finish, so that a crash, a
//! time limit or Ctrl-C loses at most the pairs in flight.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{io_error, RunDirError};

pub use crate::files::JOURNAL_FILE;

/// One measured pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The sweep (repetition of the whole schedule), from 0.
    pub sweep: u32,
    /// The sender, the smaller rank.
    pub i: usize,
    /// The receiver, the larger rank.
    pub j: usize,
    /// When the test started, seconds since the run's common start (sender's clock).
    pub start_s: f64,
    /// When the test ended, seconds since the run's common start (sender's clock).
    pub end_s: f64,
    /// What the pair test measured; its shape belongs to the test.
    pub result: serde_json::Value,
    /// The stage of a staged run the test belongs to; absent in a full run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// The stages of a staged run (`measure --plan staged`), in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Screening tests of every pair inside a group (host), every group at once.
    Hosts,
    /// Screening tests of sampled pairs between groups, in tournament rounds.
    Between,
    /// Screening tests of more pairs between groups whose samples disagree, one at a time.
    Refine,
    /// Screening tests of a sample of the pairs above again, one at a time: the interference.
    Alone,
    /// The full pair test of a sample of pairs from each class the screening found.
    Sample,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 5] = [
        Stage::Hosts,
        Stage::Between,
        Stage::Refine,
        Stage::Alone,
        Stage::Sample,
    ];

    /// The stage's name in the journal and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Hosts => "hosts",
            Stage::Between => "between",
            Stage::Refine => "refine",
            Stage::Alone => "alone",
            Stage::Sample => "sample",
        }
    }

    /// What the stage does, in a few words (the summary's stage lines).
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Hosts => "screening every pair inside each host",
            Stage::Between => "screening sampled pairs between hosts",
            Stage::Refine => "screening more pairs of hosts whose samples disagree",
            Stage::Alone => "screened pairs again, one at a time",
            Stage::Sample => "the full test for a sample of pairs",
        }
    }

    /// Whether the stage runs the screening test (else the full one).
    pub fn screens(self) -> bool {
        self != Stage::Sample
    }
}

/// How often appended lines are also forced to disk.
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// The journal, open for appending.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    last_sync: Instant,
}

impl Journal {
    /// Opens (creating) the journal for appending.
    pub fn open(path: &Path) -> Result<Self, RunDirError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_error(path))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            last_sync: Instant::now(),
        })
    }

    /// Appends one entry as a single write, and syncs to disk every few seconds.
    pub fn append(&mut self, entry: &JournalEntry) -> Result<(), RunDirError> {
        let mut line = serde_json::to_vec(entry).map_err(|e| RunDirError::BadJournal {
            path: self.path.clone(),
            line: 0,
            message: format!("cannot encode an entry: {e}"),
        })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io_error(&self.path))?;
        if self.last_sync.elapsed() >= SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Appends whole lines (each ending in a newline, as [`Journal::append`] writes them) as
    /// a single write, and syncs to disk every few seconds.
    pub fn append_lines(&mut self, lines: &[u8]) -> Result<(), RunDirError> {
        if lines.is_empty() {
            return Ok(());
        }
        self.file.write_all(lines).map_err(io_error(&self.path))?;
        if self.last_sync.elapsed() >= SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Forces everything appended so far to disk.
    pub fn sync(&mut self) -> Result<(), RunDirError> {
        self.last_sync = Instant::now();
        self.file.sync_data().map_err(io_error(&self.path))
    }
}

/// What a journal holds.
#[derive(Debug, Clone, Default)]
pub struct JournalRead {
    /// The complete entries, in file order.
    pub entries: Vec<JournalEntry>,
    /// Bytes of complete lines; anything after is an unfinished last line from a crash.
    pub complete_len: u64,
    /// Whether the file ends in an unfinished line.
    pub torn_tail: bool,
}

/// Reads a journal; a missing file has no entries, and an unfinished last line is reported,
/// not an error, since it is what a crash mid-write leaves.
pub fn read_journal(path: &Path) -> Result<JournalRead, RunDirError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalRead::default()),
        Err(e) => return Err(io_error(path)(e)),
    };
    parse_journal(BufReader::new(file), path)
}

/// Reads journal lines from `reader` as [`read_journal`] does; `path` names the file in errors.
pub fn parse_journal(reader: impl BufRead, path: &Path) -> Result<JournalRead, RunDirError> {
    let mut entries = Vec::new();
    let mut out = each_entry(reader, path, |e| {
        entries.push(e);
        Ok::<_, RunDirError>(())
    })?;
    out.entries = entries;
    Ok(out)
}

/// Calls `each` with every complete entry of the journal at `path`, in file order, one line in
/// memory at a time (a missing file has none); the result says where the complete lines end,
/// its `entries` empty.
pub fn for_each_journal_entry<E: From<RunDirError>>(
    path: &Path,
    each: impl FnMut(JournalEntry) -> Result<(), E>,
) -> Result<JournalRead, E> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalRead::default()),
        Err(e) => return Err(io_error(path)(e).into()),
    };
    each_entry(BufReader::with_capacity(1 << 20, file), path, each)
}

fn each_entry<E: From<RunDirError>>(
    mut reader: impl BufRead,
    path: &Path,
    mut each: impl FnMut(JournalEntry) -> Result<(), E>,
) -> Result<JournalRead, E> {
    let mut out = JournalRead::default();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| E::from(io_error(path)(e)))?;
        if n == 0 {
            break;
        }
        number += 1;
        if buf.last() != Some(&b'\n') {
            out.torn_tail = true;
            break;
        }
        let entry: JournalEntry = serde_json::from_slice(&buf).map_err(|e| {
            E::from(RunDirError::BadJournal {
                path: path.to_path_buf(),
                line: number,
                message: e.to_string(),
            })
        })?;
        each(entry)?;
        out.complete_len += n as u64;
    }
    Ok(out)
}

/// Cuts an unfinished last line off a journal so appending can go on after it.
pub(crate) fn truncate_to(path: &Path, len: u64) -> Result<(), RunDirError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io_error(path))?;
    file.set_len(len).map_err(io_error(path))
}

impl JournalRead {
    /// Removes an unfinished last line from the file, if there is one.
    pub fn repair(&self, path: &Path) -> Result<(), RunDirError> {
        if self.torn_tail {
            truncate_to(path, self.complete_len)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize, j: usize) -> JournalEntry {
        JournalEntry {
            sweep: 0,
            i,
            j,
            start_s: 0.5,
            end_s: 0.75,
            result: serde_json::json!({"rtt_s": [1e-6]}),
            stage: None,
        }
    }

    #[test]
    fn appends_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        assert!(read_journal(&path).unwrap().entries.is_empty());
        let mut j = Journal::open(&path).unwrap();
        j.append(&entry(0, 1)).unwrap();
        j.append(&entry(0, 2)).unwrap();
        drop(j);
        let read = read_journal(&path).unwrap();
        assert_eq!(read.entries, vec![entry(0, 1), entry(0, 2)]);
        assert!(!read.torn_tail);
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_appending_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let mut j = Journal::open(&path).unwrap();
        j.append(&entry(0, 1)).unwrap();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"sweep\": 0, \"i\": 1").unwrap();
        drop(f);
        let read = read_journal(&path).unwrap();
        assert_eq!(read.entries.len(), 1);
        assert!(read.torn_tail);
        read.repair(&path).unwrap();
        let mut j = Journal::open(&path).unwrap();
        j.append(&entry(1, 2)).unwrap();
        drop(j);
        assert_eq!(
            read_journal(&path).unwrap().entries,
            vec![entry(0, 1), entry(1, 2)]
        );
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        std::fs::write(&path, "not json\n").unwrap();
        let err = read_journal(&path).unwrap_err();
        assert!(err.to_string().contains("journal.jsonl:1: "), "{err}");
    }
}
