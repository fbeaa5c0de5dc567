//! The run directory that `lgate-plogp measure` writes and the analysis commands read.
//!
//! ```text
//! RUN/
//!   meta.json       who ran where and how: ranks and their placement, parameters, times
//!   journal.bin     one binary record per pair test, appended as tests finish
//!                   (journal.jsonl: one JSON line each, on request)
//! ```
//!
//! Measurement-specific outputs (matrices, tables) are written next to these by the test that
//! produced them. [`RunMeta`] also serves as the ground truth of rank placement.
#![deny(missing_docs)]

pub mod bcast_tuning;
pub mod clustered;
pub mod files;
mod hosts;
mod journal;
mod matrices;
mod meta;
pub mod mpi;
mod placement;
mod plan;
pub mod records;
pub mod report;
mod screen;
mod simulation;

use lgate_knobs::Knob;
use std::path::{Path, PathBuf};

pub use hosts::{
    odd_host_lines, odd_hosts, parse_cpu_list, placement_mismatches, CacheFacts, FactError,
    FrequencyFacts, HostFacts, OddFact, FACT_NAMES,
};
pub use journal::{
    binary as journal_binary, for_each_journal_entry, parse_journal, read_journal, Journal,
    JournalEntry, JournalFormat, JournalRead, Stage, JOURNAL_FILE, JOURNAL_JSON_FILE,
};
pub use matrices::{MatrixEntry, MatrixIndex, MeasuredMask, MATRICES_DIR, MATRIX_INDEX_FILE};
pub use meta::{
    LauncherInfo, PlanDifference, PlanInfo, PlanItem, RankInfo, RankTime, RunMeta, RunPart,
    RunStatus, RunSummary, ScheduleInfo, StageSummary, SystemInfo, TestInfo, META_FILE, RUN_FORMAT,
    RUN_VERSION,
};
pub use mpi::{MpiInfo, MpiSettings, SettingValue, YieldSetting};
pub use placement::KnownPlacement;
pub use plan::StagedChoices;
pub use records::{
    Estimator, ImportedParameters, MessageSize, MpiGraphParameters, PLogPOptions, Pair,
    PairMeasurement, PairResult, PingPongParameters, PingPongResult, RawSamples, RoundTrips,
    Saturation, SizeError, SizeResult, UnknownEstimator,
};
pub use report::{
    FoundLevel, FoundLevels, Report, RetestedPair, StagedReport, UndecidedFound, SLOW_PAIR_FACTOR,
};
pub use screen::{parse_screen_table, read_screen_table, ScreenRow, ScreenTableError};
pub use simulation::{DegradedRecord, SimulationRecord, SlowPairRecord, SlowRankRecord};

/// An error of creating, reading or writing a run directory.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// A file or folder could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The output folder already holds results.
    #[error("{}: already holds a run; choose another {}, or pass {} to replace it", path.display(), Knob::Output, Knob::Force)]
    Exists {
        /// The folder.
        path: PathBuf,
    },
    /// A non-empty folder that is not a run directory.
    #[error("{}: is not empty and holds no meta.json, so it is not a run directory; refusing to write into it", path.display())]
    NotARunDir {
        /// The folder.
        path: PathBuf,
    },
    /// meta.json is missing or malformed.
    #[error("{}: {message}", path.display())]
    BadMeta {
        /// The meta.json file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Another file of the run is missing or malformed.
    #[error("{}: {message}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A line of the journal is malformed.
    #[error("{}:{line}: {message}", path.display())]
    BadJournal {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Turns an I/O error on `path` into the run directory's error naming the path.
pub fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |error| RunDirError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// A run directory on disk.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Creates the folder for a new run; an existing run is replaced only with `force`.
    ///
    /// With `force`, only the files a run writes are removed; a non-empty folder without
    /// `meta.json` is refused either way, so a mistyped `--out` cannot wipe unrelated files.
    pub fn create(path: &Path, force: bool) -> Result<Self, RunDirError> {
        if path.exists() {
            let entries: Vec<_> = std::fs::read_dir(path)
                .map_err(io_error(path))?
                .collect::<Result<_, _>>()
                .map_err(io_error(path))?;
            if !entries.is_empty() {
                if !path.join(META_FILE).is_file() {
                    return Err(RunDirError::NotARunDir {
                        path: path.to_path_buf(),
                    });
                }
                if !force {
                    return Err(RunDirError::Exists {
                        path: path.to_path_buf(),
                    });
                }
                // Everything the run held and everything made from it goes, so that the folder
                // never mixes two runs (other files stay).
                for name in files::RUN_FILES.iter().chain(files::MADE_FROM_THE_RUN) {
                    let file = path.join(name);
                    if file.is_dir() {
                        std::fs::remove_dir_all(&file).map_err(io_error(&file))?;
                    } else if file.exists() {
                        std::fs::remove_file(&file).map_err(io_error(&file))?;
                    }
                }
            }
        } else {
            std::fs::create_dir_all(path).map_err(io_error(path))?;
        }
        // Fail now, not after an hour of measuring, if the folder is not writable.
        let probe = path.join(".lgate-plogp-write-test");
        std::fs::write(&probe, b"").map_err(io_error(path))?;
        std::fs::remove_file(&probe).map_err(io_error(&probe))?;
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing run directory (for resuming or reading).
    pub fn open(path: &Path) -> Result<Self, RunDirError> {
        if !path.join(META_FILE).is_file() {
            return Err(RunDirError::BadMeta {
                path: path.join(META_FILE),
                message: "not found: this is not a run directory".into(),
            });
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of a file in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Reads meta.json.
    pub fn read_meta(&self) -> Result<RunMeta, RunDirError> {
        RunMeta::read(&self.file(META_FILE))
    }

    /// Writes meta.json atomically.
    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), RunDirError> {
        self.write_file(META_FILE, &meta.to_json())
    }

    /// Writes any file of the run atomically.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), RunDirError> {
        let path = self.file(name);
        lgate_output::write_atomic(&path, bytes).map_err(io_error(&path))
    }

    /// Starts writing a file of the run that appears only when committed.
    pub fn create_file(&self, name: &str) -> Result<lgate_output::AtomicFile, RunDirError> {
        let path = self.file(name);
        lgate_output::AtomicFile::create(&path).map_err(io_error(&path))
    }

    /// The format of the run's journal, if it has one (the binary one first).
    pub fn journal_format(&self) -> Option<JournalFormat> {
        JournalFormat::ALL
            .into_iter()
            .find(|f| self.file(f.file_name()).exists())
    }

    /// The run's journal file: the one it has, else where a binary one goes.
    pub fn journal_file(&self) -> PathBuf {
        self.file(self.journal_format().unwrap_or_default().file_name())
    }

    /// Opens the journal for appending: the run's own, or a new one in `format`.
    pub fn journal(&self, format: JournalFormat) -> Result<Journal, RunDirError> {
        Journal::open(&self.file(self.journal_format().unwrap_or(format).file_name()))
    }

    /// Reads the journal; a missing journal has no entries.
    pub fn read_journal(&self) -> Result<JournalRead, RunDirError> {
        read_journal(&self.journal_file())
    }

    /// Reads report.json (the run's health and the levels found), its version checked.
    pub fn read_report(&self) -> Result<Report, RunDirError> {
        Report::read(&self.path)
    }

    /// Reads the index of the run's matrices (matrices/index.json), its version checked.
    pub fn read_matrices(&self) -> Result<MatrixIndex, RunDirError> {
        MatrixIndex::read(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{HEATMAP_PNG, HOSTS_DIR, REPORT_HTML, SCREEN_TABLE};

    #[test]
    fn create_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let rd = RunDir::create(&run, false).unwrap();
        // An empty folder may be reused.
        RunDir::create(&run, false).unwrap();
        rd.write_file(META_FILE, b"{}").unwrap();
        assert!(matches!(
            RunDir::create(&run, false),
            Err(RunDirError::Exists { .. })
        ));
        std::fs::write(run.join("matrix.csv"), "keep").unwrap();
        // What the old run held and what was made from it goes with it.
        for name in [SCREEN_TABLE, REPORT_HTML, HEATMAP_PNG, "hosts/index.json"] {
            std::fs::create_dir_all(run.join(name).parent().unwrap()).unwrap();
            std::fs::write(run.join(name), "old").unwrap();
        }
        RunDir::create(&run, true).unwrap();
        assert!(!run.join(META_FILE).exists());
        for name in [SCREEN_TABLE, REPORT_HTML, HEATMAP_PNG, HOSTS_DIR] {
            assert!(!run.join(name).exists(), "{name} of the old run");
        }
        assert!(
            run.join("matrix.csv").exists(),
            "only run files are removed"
        );

        let other = dir.path().join("home");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "precious").unwrap();
        let err = RunDir::create(&other, true).unwrap_err();
        assert!(matches!(err, RunDirError::NotARunDir { .. }), "{err}");
        assert!(other.join("notes.txt").exists());
    }

    #[test]
    fn unwritable_output_fails_up_front() {
        let err = RunDir::create(Path::new("/proc/lgate-run"), false).unwrap_err();
        assert!(matches!(err, RunDirError::Io { .. }), "{err}");
    }
}
