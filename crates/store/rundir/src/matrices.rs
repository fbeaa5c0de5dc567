//! `matrices/index.json`: which distance matrices a run has and what each holds.

use lgate_knobs::Knob;
use serde::{Deserialize, Serialize};

use crate::{RunDir, RunDirError};

pub use crate::files::{MATRICES_DIR, MATRIX_INDEX_FILE};

/// One matrix of a run, as listed in `matrices/index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixEntry {
    /// The name `cluster --matrix` takes: `latency`, `rtt:0`, `t:1KiB`, `features:0`.
    pub name: String,
    /// The file in `matrices/`.
    pub file: String,
    /// What the entries are.
    pub description: String,
    /// The unit of the entries: always `us`.
    pub unit: String,
    /// The message size, for size-dependent matrices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<usize>,
}

impl MatrixEntry {
    /// An entry in microseconds.
    pub fn in_us(name: &str, file: &str, description: &str, size_bytes: Option<usize>) -> Self {
        MatrixEntry {
            name: name.to_string(),
            file: file.to_string(),
            description: description.to_string(),
            unit: "us".to_string(),
            size_bytes,
        }
    }

    /// The kind of matrix: the name before its size (`t` of `t:1KiB`).
    pub fn kind(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }

    /// The path of the matrix's file, relative to the run directory.
    pub fn path(&self) -> String {
        format!("{MATRICES_DIR}/{}", self.file)
    }
}

/// The list of a run's matrices and how their values were made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixIndex {
    /// The statistic that stands for a pair's value (`median`, `mean`, ...).
    pub estimator: crate::Estimator,
    /// How the sweeps of a pair were combined: `median`.
    pub combine_sweeps: String,
    /// The matrices.
    pub matrices: Vec<MatrixEntry>,
    /// The matrix `cluster` takes when none is named, if not the usual (see
    /// [`MatrixIndex::default_matrix`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The matrices `cluster` tries when none is named, keeping the one whose topology has the
    /// most levels (a staged run's screening sizes: latency shows the levels on one machine,
    /// bandwidth those of another).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// Which entries were measured, when some were filled in (a staged run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredMask>,
}

/// Which entries of a run's matrices were measured and which were filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasuredMask {
    /// The mask's file in `matrices/`: 1 where the pair was measured, 0 where filled.
    pub file: String,
    /// How a pair not measured got its value.
    pub filled_with: String,
    /// Pairs measured.
    pub measured_pairs: usize,
    /// Pairs filled in.
    pub filled_pairs: usize,
}

impl MeasuredMask {
    /// The share of pairs filled in.
    pub fn filled_share(&self) -> f64 {
        let total = self.measured_pairs + self.filled_pairs;
        if total == 0 {
            0.0
        } else {
            self.filled_pairs as f64 / total as f64
        }
    }
}

impl MatrixIndex {
    /// Reads and checks the index of `run`; a run without one (it measured nothing a matrix
    /// holds) and a malformed index are errors naming the file.
    pub fn read(run: &RunDir) -> Result<Self, RunDirError> {
        let path = run.file(MATRIX_INDEX_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| RunDirError::BadFile {
            path: path.clone(),
            message: if e.kind() != std::io::ErrorKind::NotFound {
                e.to_string()
            } else if let Some(m) = run
                .read_meta()
                .ok()
                .filter(|m| m.status == crate::RunStatus::Running)
            {
                format!(
                    "not found: the run has not finished (meta.json says `running`: it is still \
                     measuring, or it stopped before its end); {}",
                    m.how_to_finish(run.path())
                )
            } else {
                format!(
                    "not found: this run has no distance matrices yet (derive them with \
                     `mpirun -np N lgate-plogp {} RUN`)",
                    Knob::Resume.in_command()
                )
            },
        })?;
        Self::parse(&text, &path)
    }

    /// Checks the text of an index; `path` names the file in errors.
    pub fn parse(text: &str, path: &std::path::Path) -> Result<Self, RunDirError> {
        let bad = |message: String| RunDirError::BadFile {
            path: path.to_path_buf(),
            message,
        };
        let index: MatrixIndex = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let mask = index.measured.as_ref().map(|m| MatrixEntry {
            name: "measured".into(),
            file: m.file.clone(),
            description: String::new(),
            unit: String::new(),
            size_bytes: None,
        });
        if let Some(e) = index
            .matrices
            .iter()
            .chain(mask.as_ref())
            .find(|e| e.file.is_empty() || e.file.contains('/') || e.file.contains(".."))
        {
            return Err(bad(format!(
                "matrix `{}` names the file {:?}, which is not a file in {MATRICES_DIR}/",
                e.name, e.file
            )));
        }
        Ok(index)
    }

    /// Writes the index into `run` atomically.
    pub fn write(&self, run: &RunDir) -> Result<(), RunDirError> {
        // Through a JSON value: keys in sorted order, as the index has always been written.
        let value = serde_json::to_value(self).expect("the index serialises");
        run.write_file(MATRIX_INDEX_FILE, format!("{value:#}\n").as_bytes())
    }

    /// The matrix called `name`; a kind alone (`t`, `features`) takes its smallest size.
    pub fn find(&self, name: &str) -> Option<&MatrixEntry> {
        self.matrices.iter().find(|e| e.name == name).or_else(|| {
            self.matrices
                .iter()
                .filter(|e| e.kind() == name)
                .min_by_key(|e| e.size_bytes.unwrap_or(0))
        })
    }

    /// The matrix `cluster` takes when none is named: the one the index names, else t(m) at the
    /// smallest size (PLogP), else RTT(m) at the smallest size (ping-pong).
    pub fn default_matrix(&self) -> Option<&MatrixEntry> {
        self.default
            .as_deref()
            .and_then(|name| self.find(name))
            .or_else(|| self.find("t"))
            .or_else(|| self.find("rtt"))
    }

    /// The matrices `cluster` tries when none is named: the candidates, else the default.
    pub fn default_candidates(&self) -> Vec<&MatrixEntry> {
        let listed: Vec<&MatrixEntry> = self
            .candidates
            .iter()
            .filter_map(|n| self.find(n))
            .collect();
        if listed.is_empty() {
            self.default_matrix().into_iter().collect()
        } else {
            listed
        }
    }

    /// The names of the matrices, in index order.
    pub fn names(&self) -> Vec<&str> {
        self.matrices.iter().map(|e| e.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> MatrixIndex {
        MatrixIndex {
            estimator: crate::Estimator::Median,
            combine_sweeps: "median".into(),
            matrices: vec![
                MatrixEntry::in_us("latency", "L.csv", "latency", None),
                MatrixEntry::in_us("t:1KiB", "t_1024.csv", "t(m)", Some(1024)),
                MatrixEntry::in_us("t:0", "t_0.csv", "t(m)", Some(0)),
            ],
            default: None,
            candidates: Vec::new(),
            measured: None,
        }
    }

    #[test]
    fn round_trips_and_finds_by_name_or_kind() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::create(&dir.path().join("run"), false).unwrap();
        std::fs::create_dir(run.file(MATRICES_DIR)).unwrap();
        index().write(&run).unwrap();
        let back = MatrixIndex::read(&run).unwrap();
        assert_eq!(back, index());
        assert_eq!(back.find("t").unwrap().name, "t:0");
        assert_eq!(back.default_matrix().unwrap().name, "t:0");
        assert_eq!(back.find("t:1KiB").unwrap().path(), "matrices/t_1024.csv");
        assert!(back.find("features").is_none());
        let text = std::fs::read_to_string(run.file(MATRIX_INDEX_FILE)).unwrap();
        assert!(text.starts_with("{\n  \"combine_sweeps\""), "{text}");
        assert!(!text.contains("size_bytes\": null"), "{text}");
    }

    #[test]
    fn a_missing_or_malformed_index_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::create(&dir.path().join("run"), false).unwrap();
        let err = MatrixIndex::read(&run).unwrap_err().to_string();
        assert!(
            err.contains("matrices/index.json") && err.contains("not found"),
            "{err}"
        );
        std::fs::create_dir(run.file(MATRICES_DIR)).unwrap();
        for (text, says) in [
            ("{", "EOF"),
            ("{\"estimator\": \"median\"}", "combine_sweeps"),
            (
                "{\"estimator\":\"median\",\"combine_sweeps\":\"m\",\"matrices\":[{\"name\":\"x\",\"file\":\"../../etc/passwd\",\"description\":\"\",\"unit\":\"us\"}]}",
                "not a file in matrices/",
            ),
        ] {
            run.write_file(MATRIX_INDEX_FILE, text.as_bytes()).unwrap();
            let err = MatrixIndex::read(&run).unwrap_err().to_string();
            assert!(err.contains("index.json") && err.contains(says), "{text}: {err}");
        }
    }
}
