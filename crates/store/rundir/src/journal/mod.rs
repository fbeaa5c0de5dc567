//! The journal: one record per pair test, appended as tests finish, so that a crash, a time
//! limit or Ctrl-C loses at most the tests in flight. Binary (`journal.bin`, see [`binary`])
//! unless JSON lines (`journal.jsonl`) are asked for; readers tell them by their first bytes.

pub mod binary;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{io_error, RunDirError};

pub use crate::files::{JOURNAL_FILE, JOURNAL_JSON_FILE};

/// How a journal stores its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalFormat {
    /// Length-prefixed binary records, about 56 bytes a screening test (`journal.bin`).
    #[default]
    Binary,
    /// One JSON line per test (`journal.jsonl`).
    Json,
}

impl JournalFormat {
    /// Both formats, the default first.
    pub const ALL: [JournalFormat; 2] = [JournalFormat::Binary, JournalFormat::Json];

    /// The journal's file name in a run directory.
    pub fn file_name(self) -> &'static str {
        match self {
            JournalFormat::Binary => JOURNAL_FILE,
            JournalFormat::Json => JOURNAL_JSON_FILE,
        }
    }

    /// The format a journal file's name says (JSON lines for `.jsonl`, else binary).
    pub fn of_path(path: &Path) -> Self {
        if path.extension().is_some_and(|e| e == "jsonl") {
            JournalFormat::Json
        } else {
            JournalFormat::Binary
        }
    }

    /// Appends `entry` to `out` as one record of this format.
    pub fn encode(self, entry: &JournalEntry, out: &mut Vec<u8>) {
        match self {
            JournalFormat::Binary => binary::encode(entry, out),
            JournalFormat::Json => {
                serde_json::to_writer(&mut *out, entry).expect("journal entries serialise");
                out.push(b'\n');
            }
        }
    }
}

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
    /// What the pair test measured.
    pub result: crate::PairResult,
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
    format: JournalFormat,
    last_sync: Instant,
}

impl Journal {
    /// Opens (creating) the journal for appending, in the format its name says; a new binary
    /// journal starts with its header.
    pub fn open(path: &Path) -> Result<Self, RunDirError> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_error(path))?;
        let format = JournalFormat::of_path(path);
        let len = file.metadata().map_err(io_error(path))?.len();
        if format == JournalFormat::Binary && len < binary::MAGIC.len() as u64 {
            // New, or a header cut short by a crash.
            file.set_len(0).map_err(io_error(path))?;
            file.write_all(binary::MAGIC).map_err(io_error(path))?;
        }
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            format,
            last_sync: Instant::now(),
        })
    }

    /// The format the journal is written in.
    pub fn format(&self) -> JournalFormat {
        self.format
    }

    /// Appends one entry as a single write, and syncs to disk every few seconds.
    pub fn append(&mut self, entry: &JournalEntry) -> Result<(), RunDirError> {
        let mut record = Vec::new();
        self.format.encode(entry, &mut record);
        self.append_records(&record)
    }

    /// Appends whole records (as [`JournalFormat::encode`] makes them, in this journal's
    /// format) as a single write, and syncs to disk every few seconds.
    pub fn append_records(&mut self, records: &[u8]) -> Result<(), RunDirError> {
        if records.is_empty() {
            return Ok(());
        }
        self.file.write_all(records).map_err(io_error(&self.path))?;
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
    /// Bytes of complete records (and the header); anything after is an unfinished last
    /// record from a crash.
    pub complete_len: u64,
    /// Whether the file ends in an unfinished record.
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
    each: impl FnMut(JournalEntry) -> Result<(), E>,
) -> Result<JournalRead, E> {
    let start = reader.fill_buf().map_err(|e| E::from(io_error(path)(e)))?;
    let n = start.len().min(binary::MAGIC.len());
    if n > 0 && start[..n] == binary::MAGIC[..n] {
        each_record(reader, path, each)
    } else if n > 0 && path.extension().is_some_and(|e| e == "bin") {
        Err(E::from(RunDirError::BadJournal {
            path: path.to_path_buf(),
            line: 1,
            message: "does not start as a binary journal does (LGJRNL1)".to_string(),
        }))
    } else {
        each_line(reader, path, each)
    }
}

/// Reads a binary journal's records; see [`each_entry`].
fn each_record<E: From<RunDirError>>(
    mut reader: impl BufRead,
    path: &Path,
    mut each: impl FnMut(JournalEntry) -> Result<(), E>,
) -> Result<JournalRead, E> {
    let mut out = JournalRead::default();
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = 0;
    let mut number = 0;
    let mut ended = false;
    loop {
        let got = if ended {
            0
        } else {
            reader
                .read(&mut chunk)
                .map_err(|e| E::from(io_error(path)(e)))?
        };
        ended |= got == 0;
        bytes.drain(..at);
        at = 0;
        bytes.extend_from_slice(&chunk[..got]);
        if out.complete_len == 0 {
            if bytes.len() < binary::MAGIC.len() {
                if ended {
                    out.torn_tail = !bytes.is_empty();
                    return Ok(out);
                }
                continue;
            }
            at = binary::MAGIC.len();
            out.complete_len = at as u64;
        }
        loop {
            let next = binary::decode(&bytes[at..]).map_err(|message| {
                E::from(RunDirError::BadJournal {
                    path: path.to_path_buf(),
                    line: number + 1,
                    message: format!("record at byte {}: {message}", out.complete_len),
                })
            })?;
            match next {
                binary::Next::Record(entry, len) => {
                    number += 1;
                    at += len;
                    out.complete_len += len as u64;
                    each(entry)?;
                }
                binary::Next::Short => break,
            }
        }
        if ended {
            out.torn_tail = at < bytes.len();
            return Ok(out);
        }
    }
}

/// Reads a JSON-lines journal; see [`each_entry`].
fn each_line<E: From<RunDirError>>(
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
            // The pair, when the line says which, before what is wrong with it.
            let pair = serde_json::from_slice::<LineHead>(&buf)
                .map_or(String::new(), |h| format!("pair {}-{}: ", h.i, h.j));
            E::from(RunDirError::BadJournal {
                path: path.to_path_buf(),
                line: number,
                message: format!("{pair}{e}"),
            })
        })?;
        each(entry)?;
        out.complete_len += n as u64;
    }
    Ok(out)
}

/// The pair a journal line is of, read alone to name it when the rest does not read.
#[derive(Deserialize)]
struct LineHead {
    i: usize,
    j: usize,
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
            result: crate::PairResult::PLogP(crate::PairMeasurement {
                clock_overhead_s: 2.5e-8,
                sizes: Vec::new(),
            }),
            stage: None,
        }
    }

    #[test]
    fn appends_and_reads_back() {
        for format in JournalFormat::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format.file_name());
            assert!(read_journal(&path).unwrap().entries.is_empty());
            let mut j = Journal::open(&path).unwrap();
            assert_eq!(j.format(), format);
            j.append(&entry(0, 1)).unwrap();
            j.append(&entry(0, 2)).unwrap();
            drop(j);
            let read = read_journal(&path).unwrap();
            assert_eq!(read.entries, vec![entry(0, 1), entry(0, 2)], "{format:?}");
            assert!(!read.torn_tail);
            assert_eq!(read.complete_len, std::fs::metadata(&path).unwrap().len());
        }
    }

    #[test]
    fn a_torn_last_record_is_cut_off_and_appending_goes_on() {
        for format in JournalFormat::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format.file_name());
            let mut j = Journal::open(&path).unwrap();
            j.append(&entry(0, 1)).unwrap();
            drop(j);
            let mut whole = Vec::new();
            format.encode(&entry(1, 3), &mut whole);
            let mut f = OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(&whole[..whole.len() - 3]).unwrap();
            drop(f);
            let read = read_journal(&path).unwrap();
            assert_eq!(read.entries.len(), 1, "{format:?}");
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
    }

    #[test]
    fn a_binary_header_cut_short_is_a_torn_tail_and_opening_starts_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        std::fs::write(&path, &binary::MAGIC[..3]).unwrap();
        let read = read_journal(&path).unwrap();
        assert!(read.entries.is_empty() && read.torn_tail);
        let mut j = Journal::open(&path).unwrap();
        j.append(&entry(0, 1)).unwrap();
        drop(j);
        assert_eq!(read_journal(&path).unwrap().entries, vec![entry(0, 1)]);
    }

    #[test]
    fn a_bad_record_in_the_middle_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL_JSON_FILE);
        std::fs::write(&path, "not json\n").unwrap();
        let err = read_journal(&path).unwrap_err();
        assert!(err.to_string().contains("journal.jsonl:1: "), "{err}");
        let path = dir.path().join(JOURNAL_FILE);
        std::fs::write(&path, "not json\n").unwrap();
        let err = read_journal(&path).unwrap_err().to_string();
        assert!(err.contains("journal.bin:1: does not start"), "{err}");
        let mut bytes = binary::MAGIC.to_vec();
        JournalFormat::Binary.encode(&entry(0, 1), &mut bytes);
        bytes.extend_from_slice(&[3, 0xff, 0, 0]); // a record of kind 15
        JournalFormat::Binary.encode(&entry(0, 2), &mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        let err = read_journal(&path).unwrap_err().to_string();
        assert!(err.contains("journal.bin:2: record at byte"), "{err}");
    }
}
