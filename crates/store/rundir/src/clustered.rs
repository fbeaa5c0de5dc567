//! Topologies `cluster` computed from a run, kept in the run directory with what they were
//! computed from (the binary, the options, every file of the run it read), so that `report`,
//! `plot`, `diff` and every export reuse one instead of clustering again.
//!
//! `clustered/index.json` lists up to [`MAX_ENTRIES`] clusterings, newest first; each one's
//! topology is a file beside it in the tool's JSON topology format. An entry is reused only
//! while every stamp of its key (size and modification time of the binary and of each file read)
//! is as it was: a run measured again, resumed, or a binary built anew makes it stale.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::files::{CLUSTERED_DIR, CLUSTERED_INDEX_FILE};
use crate::files::{HOSTS_DIR, MATRICES_DIR, RUN_FILES};
use crate::{io_error, RunDirError};

/// The version of the index's format.
pub const CLUSTERED_VERSION: u32 = 1;

/// Clusterings kept per run: the oldest goes when another is stored.
pub const MAX_ENTRIES: usize = 4;

/// A file as it was: its path, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// The path (relative to the run directory for the run's files).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its modification time, in nanoseconds since the Unix epoch.
    pub modified_ns: u64,
}

impl FileStamp {
    /// The stamp of `path`, named `name`; `None` when it cannot be read.
    pub fn of(path: &Path, name: &str) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(FileStamp {
            path: name.to_string(),
            bytes: meta.len(),
            modified_ns: u64::try_from(since.as_nanos()).unwrap_or(u64::MAX),
        })
    }
}

/// What a clustering was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusteredKey {
    /// The binary that computed it.
    pub tool: Option<FileStamp>,
    /// The options it was computed with, in one canonical text.
    pub options: String,
    /// The run's files, as they were.
    pub inputs: Vec<FileStamp>,
}

/// One stored clustering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusteredEntry {
    /// What it was computed from.
    pub key: ClusteredKey,
    /// Its topology's file, in [`CLUSTERED_DIR`].
    pub topology_file: String,
    /// The run's matrix it clustered (`rtt:0`, ...), when it was one matrix of the run.
    pub matrix: Option<String>,
    /// What was read, for people.
    pub source: String,
    /// The host of each rank of the job, when known.
    pub hosts: Option<Vec<String>>,
    /// The summary `cluster` printed.
    pub summary: String,
}

/// The stored clusterings of a run, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusteredIndex {
    /// [`CLUSTERED_VERSION`].
    pub version: u32,
    /// The clusterings.
    pub entries: Vec<ClusteredEntry>,
}

/// The stamps of every file of `run` that a clustering may read: the run's own files, and
/// those under `matrices/` and `hosts/`.
pub fn run_stamps(run: &Path) -> Vec<FileStamp> {
    let mut stamps: Vec<FileStamp> = (RUN_FILES.iter())
        .filter_map(|name| FileStamp::of(&run.join(name), name))
        .collect();
    for dir in [MATRICES_DIR, HOSTS_DIR] {
        let Ok(entries) = std::fs::read_dir(run.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = (entries.flatten())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{dir}/{name}");
            stamps.extend(FileStamp::of(&run.join(&rel), &rel));
        }
    }
    stamps
}

/// The stamp of the running binary.
pub fn tool_stamp() -> Option<FileStamp> {
    let exe = std::env::current_exe().ok()?;
    FileStamp::of(&exe, &exe.display().to_string())
}

/// Reads `run`'s index; an index that is missing, unreadable or of another version holds no
/// entry (the clusterings are computed again, never trusted half-read).
pub fn read_index(run: &Path) -> ClusteredIndex {
    let empty = ClusteredIndex {
        version: CLUSTERED_VERSION,
        entries: Vec::new(),
    };
    let Ok(bytes) = std::fs::read(run.join(CLUSTERED_INDEX_FILE)) else {
        return empty;
    };
    match serde_json::from_slice::<ClusteredIndex>(&bytes) {
        Ok(index) if index.version == CLUSTERED_VERSION => index,
        _ => empty,
    }
}

/// The stored clustering of `run` computed with `key`, and its topology file, if one is.
pub fn find(run: &Path, key: &ClusteredKey) -> Option<(ClusteredEntry, PathBuf)> {
    let index = read_index(run);
    let entry = index.entries.into_iter().find(|e| &e.key == key)?;
    let path = run.join(CLUSTERED_DIR).join(&entry.topology_file);
    path.is_file().then_some((entry, path))
}

/// Stores a clustering of `run` (its topology in `topology`, the JSON topology format) as the
/// newest entry, replacing one of the same key and dropping the oldest past [`MAX_ENTRIES`].
pub fn store(run: &Path, mut entry: ClusteredEntry, topology: &str) -> Result<(), RunDirError> {
    let dir = run.join(CLUSTERED_DIR);
    std::fs::create_dir_all(&dir).map_err(io_error(&dir))?;
    let mut index = read_index(run);
    index.entries.retain(|e| e.key != entry.key);
    // A file name no entry kept uses.
    let used: Vec<&str> = (index.entries.iter())
        .map(|e| e.topology_file.as_str())
        .collect();
    let name = (0..=MAX_ENTRIES)
        .map(|n| format!("topology-{n}.json"))
        .find(|n| !used.contains(&n.as_str()))
        .unwrap_or_else(|| "topology-0.json".to_string());
    let path = dir.join(&name);
    lgate_output::write_atomic(&path, topology.as_bytes()).map_err(io_error(&path))?;
    entry.topology_file = name;
    index.entries.insert(0, entry);
    let dropped: Vec<ClusteredEntry> = if index.entries.len() > MAX_ENTRIES {
        index.entries.split_off(MAX_ENTRIES)
    } else {
        Vec::new()
    };
    let index_path = run.join(CLUSTERED_INDEX_FILE);
    let mut text = serde_json::to_vec(&index).map_err(|e| RunDirError::BadFile {
        path: index_path.clone(),
        message: e.to_string(),
    })?;
    text.push(b'\n');
    lgate_output::write_atomic(&index_path, &text).map_err(io_error(&index_path))?;
    for old in dropped {
        let kept = index
            .entries
            .iter()
            .any(|e| e.topology_file == old.topology_file);
        if !kept {
            let _ = std::fs::remove_file(dir.join(&old.topology_file));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(options: &str, inputs: Vec<FileStamp>) -> ClusteredEntry {
        ClusteredEntry {
            key: ClusteredKey {
                tool: None,
                options: options.into(),
                inputs,
            },
            topology_file: String::new(),
            matrix: Some("rtt:0".into()),
            source: "run".into(),
            hosts: None,
            summary: "2 levels\n".into(),
        }
    }

    #[test]
    fn a_clustering_is_found_while_its_run_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        std::fs::write(run.join("meta.json"), b"{}").unwrap();
        let stamps = run_stamps(run);
        assert_eq!(stamps.len(), 1);
        store(run, entry("auto", stamps.clone()), "{\"a\":1}").unwrap();
        let (found, path) = find(run, &entry("auto", stamps.clone()).key).unwrap();
        assert_eq!(found.summary, "2 levels\n");
        assert_eq!(std::fs::read_to_string(path).unwrap(), "{\"a\":1}");
        // Other options, or the run changed: not found.
        assert!(find(run, &entry("hdbscan", stamps).key).is_none());
        std::fs::write(run.join("meta.json"), b"{ }").unwrap();
        assert!(find(run, &entry("auto", run_stamps(run)).key).is_none());
    }

    #[test]
    fn the_oldest_clustering_goes_past_the_most_kept() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        for n in 0..MAX_ENTRIES + 2 {
            store(run, entry(&format!("o{n}"), Vec::new()), &format!("{n}")).unwrap();
        }
        let index = read_index(run);
        assert_eq!(index.entries.len(), MAX_ENTRIES);
        assert_eq!(
            index.entries[0].key.options,
            format!("o{}", MAX_ENTRIES + 1)
        );
        assert!(find(run, &entry("o0", Vec::new()).key).is_none());
        let files = std::fs::read_dir(run.join(CLUSTERED_DIR)).unwrap().count();
        assert_eq!(files, MAX_ENTRIES + 1, "the topologies kept and the index");
        // A garbled index holds nothing.
        std::fs::write(run.join(CLUSTERED_INDEX_FILE), b"{garbage").unwrap();
        assert!(read_index(run).entries.is_empty());
    }
}
