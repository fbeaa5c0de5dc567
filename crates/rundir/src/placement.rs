//! Known placement: which ranks share a node, a socket, a core (or a simulated switch), as
//! levels of labels: the truth that `score`, `cluster`'s level names and the plots compare with.

use std::path::Path;

use serde_json::Value;

use crate::{RunDirError, RunMeta, META_FILE, RUN_FORMAT};

/// Known placement: named levels of labels, one label per rank.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownPlacement {
    /// Level name and one label per rank, coarsest first when known.
    pub levels: Vec<(String, Vec<usize>)>,
}

/// One label per value, numbered in order of first appearance.
fn labels_of(values: impl Iterator<Item = String>) -> Vec<usize> {
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    values
        .map(|v| {
            let next = ids.len();
            *ids.entry(v).or_insert(next)
        })
        .collect()
}

impl KnownPlacement {
    /// Reads known placement: a run directory or its meta.json (see
    /// [`RunMeta::known_placement`]), or a JSON object with `levels` mapping a level name to
    /// one label per rank.
    pub fn read(path: &Path) -> Result<KnownPlacement, RunDirError> {
        let meta_path = if path.is_dir() {
            path.join(META_FILE)
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&meta_path).map_err(|e| RunDirError::BadFile {
            path: meta_path.clone(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &meta_path)
    }

    /// Checks the text of a placement file (or meta.json); `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<KnownPlacement, RunDirError> {
        let invalid = |message: String| RunDirError::BadFile {
            path: path.to_path_buf(),
            message,
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
        if value.get("format").and_then(Value::as_str) == Some(RUN_FORMAT) {
            return Ok(RunMeta::parse(text, path)?.known_placement());
        }
        let levels = value
            .get("levels")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                invalid(
                    "expected a run's meta.json or an object with `levels`: {name: [label per rank]}"
                        .into(),
                )
            })?;
        let mut out = Vec::new();
        for (name, v) in levels {
            let list = v
                .get("labels")
                .unwrap_or(v)
                .as_array()
                .ok_or_else(|| invalid(format!("levels.{name} is not a list")))?;
            let labels = list
                .iter()
                .map(|x| match x {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| {
                    invalid(format!("levels.{name} holds something other than labels"))
                })?;
            out.push((name.clone(), labels_of(labels.into_iter())));
        }
        Ok(KnownPlacement { levels: out })
    }
}

impl RunMeta {
    /// The placement this run recorded: any extra placement field (such as a simulated
    /// `switch`), `node` from host names, then `socket`, `numa` (where it is not the sockets)
    /// and `core` (the physical core, which SMT siblings share; else the CPU) within hosts,
    /// where every rank has them.
    pub fn known_placement(&self) -> KnownPlacement {
        let mut levels = Vec::new();
        let extra: std::collections::BTreeSet<String> = self
            .ranks
            .iter()
            .flat_map(|r| r.extra.keys().cloned())
            .collect();
        for key in extra {
            levels.push((
                key.clone(),
                labels_of(
                    self.ranks
                        .iter()
                        .map(|r| r.extra.get(&key).map_or(String::new(), |v| v.to_string())),
                ),
            ));
        }
        levels.push((
            "node".into(),
            labels_of(self.ranks.iter().map(|r| r.host.clone())),
        ));
        if self.ranks.iter().all(|r| r.socket.is_some()) {
            levels.push((
                "socket".into(),
                labels_of(
                    self.ranks
                        .iter()
                        .map(|r| format!("{}/{:?}", r.host, r.socket)),
                ),
            ));
        }
        if self.ranks.iter().all(|r| r.numa.is_some()) {
            let numa = labels_of(
                self.ranks
                    .iter()
                    .map(|r| format!("{}/{:?}", r.host, r.numa)),
            );
            // Only where NUMA nodes are not simply the sockets.
            if levels.last().is_none_or(|(_, socket)| *socket != numa) {
                levels.push(("numa".into(), numa));
            }
        }
        // The physical core (SMT siblings share it), else the CPU the rank started on.
        if self.ranks.iter().all(|r| r.core.is_some()) {
            levels.push((
                "core".into(),
                labels_of(
                    self.ranks
                        .iter()
                        .map(|r| format!("{}/{:?}/{:?}", r.host, r.socket, r.core)),
                ),
            ));
        } else if self.ranks.iter().all(|r| r.cpu.is_some()) {
            levels.push((
                "core".into(),
                labels_of(self.ranks.iter().map(|r| format!("{}/{:?}", r.host, r.cpu))),
            ));
        }
        KnownPlacement { levels }
    }
}
