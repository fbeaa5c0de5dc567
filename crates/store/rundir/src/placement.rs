//! Known placement: which ranks share a node, a socket, a core (or a simulated switch), as
//! levels of labels: the truth that `score`, `cluster`'s level names and the plots compare with.

use std::path::Path;

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{RunDirError, RunMeta, META_FILE, RUN_FORMAT};

/// What kind of JSON file a placement is read from: a run's meta.json names its format.
#[derive(Deserialize)]
struct FileKind {
    #[serde(default)]
    format: Option<String>,
}

/// A placement file: per level name, one label per rank.
#[derive(Deserialize)]
struct PlacementFile {
    levels: BTreeMap<String, LevelLabels>,
}

/// A level's labels: a list, or an object holding the list as `labels`.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a list of labels (strings or numbers), one per rank"
)]
enum LevelLabels {
    List(Vec<Label>),
    Object { labels: Vec<Label> },
}

impl LevelLabels {
    fn into_labels(self) -> Vec<Label> {
        match self {
            LevelLabels::List(l) | LevelLabels::Object { labels: l } => l,
        }
    }
}

/// One rank's label: a name or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Label {
    Text(String),
    Number(serde_json::Number),
}

/// Known placement: named levels of labels, one label per rank.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownPlacement {
    /// Level name and one label per rank, coarsest first when known.
    pub levels: Vec<(String, Vec<usize>)>,
    /// Per rank, a label shared by the ranks of one host whose allowed CPUs overlap (directly
    /// or through other ranks): ranks that may have run on the same CPUs, so that where each
    /// ran inside the host is no placement. `None` when not every rank's CPUs were recorded.
    pub shared_cpus: Option<Vec<usize>>,
    /// Per rank, a label shared by the ranks of one host bound to the very same CPUs of one core
    /// (their allowed CPUs equal): ranks that take turns on them. `None` when not recorded.
    pub same_cpus: Option<Vec<usize>>,
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
        // A JSON value of another shape is not a run's meta.json; it is judged as a placement.
        let format = match serde_json::from_str::<FileKind>(text) {
            Ok(kind) => kind.format,
            Err(e) if e.classify() == serde_json::error::Category::Data => None,
            Err(e) => return Err(invalid(format!("not JSON: {e}"))),
        };
        if format.as_deref() == Some(RUN_FORMAT) {
            return Ok(RunMeta::parse(text, path)?.known_placement());
        }
        let file: PlacementFile = serde_json::from_str(text).map_err(|e| {
            invalid(format!(
                "expected a run's meta.json or an object with `levels`: {{name: [label per \
                 rank]}} ({e})"
            ))
        })?;
        let levels = (file.levels.into_iter())
            .map(|(name, level)| {
                let labels = level.into_labels().into_iter().map(|l| match l {
                    Label::Text(s) => s,
                    Label::Number(n) => n.to_string(),
                });
                (name, labels_of(labels))
            })
            .collect();
        Ok(KnownPlacement {
            levels,
            shared_cpus: None,
            same_cpus: None,
        })
    }

    /// Whether `labels` (one per rank) put two ranks that may have run on the same CPUs
    /// ([`KnownPlacement::shared_cpus`]) in different groups: the first such two ranks.
    pub fn split_of_shared_cpus(&self, labels: &[usize]) -> Option<(usize, usize)> {
        split_of(self.shared_cpus.as_deref()?, labels)
    }

    /// Whether ranks `a` and `b` were bound to the very same CPUs.
    pub fn same_cpus(&self, a: usize, b: usize) -> bool {
        self.same_cpus
            .as_ref()
            .is_some_and(|s| a < s.len() && b < s.len() && s[a] == s[b])
    }
}

/// A unit of placement inside a host that a rank may be bound within.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Core,
    Numa,
    Socket,
}

/// The first two ranks that share a label of `shared` and not one of `labels`.
fn split_of(shared: &[usize], labels: &[usize]) -> Option<(usize, usize)> {
    let mut first: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for (rank, (&s, &l)) in shared.iter().zip(labels).enumerate() {
        let r = *first.entry(s).or_insert(rank);
        if labels[r] != l {
            return Some((r, rank));
        }
    }
    None
}

impl RunMeta {
    /// The placement this run recorded: any extra placement field (such as a simulated
    /// `switch`), `node` from host names, then `socket`, `numa` (where it is not the sockets)
    /// and `core` (the physical core, which SMT siblings share; else the CPU) within hosts,
    /// where every rank has them.
    ///
    /// A level inside hosts is left out where it splits ranks that may have run on the same
    /// CPUs (their allowed CPUs overlap: not bound apart): each rank's socket, NUMA node and
    /// core are then only where it happened to start, not a placement the run pinned.
    pub fn known_placement(&self) -> KnownPlacement {
        let shared_cpus = self.shared_cpus();
        // A level is pinned where no two ranks free to share CPUs sit in different groups and
        // every rank's allowed CPUs lie within one unit of the level (`Unit`).
        let pinned_by = |labels: &Vec<usize>, unit: Unit| {
            shared_cpus
                .as_deref()
                .is_none_or(|shared| split_of(shared, labels).is_none())
                && self.ranks.iter().all(|r| self.bound_within(r, unit))
        };
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
        // Sockets, NUMA nodes and cores only where the ranks were bound apart by them.
        if self.ranks.iter().all(|r| r.socket.is_some()) {
            let socket = labels_of(
                self.ranks
                    .iter()
                    .map(|r| format!("{}/{:?}", r.host, r.socket)),
            );
            if pinned_by(&socket, Unit::Socket) {
                levels.push(("socket".into(), socket));
            }
        }
        if self.ranks.iter().all(|r| r.numa.is_some()) {
            let numa = labels_of(
                self.ranks
                    .iter()
                    .map(|r| format!("{}/{:?}", r.host, r.numa)),
            );
            // Only where NUMA nodes are not simply the sockets.
            let socket = levels.iter().find(|(name, _)| name == "socket");
            if socket.is_none_or(|(_, socket)| *socket != numa) && pinned_by(&numa, Unit::Numa) {
                levels.push(("numa".into(), numa));
            }
        }
        // The physical core (SMT siblings share it), else the CPU the rank started on.
        let core = if self.ranks.iter().all(|r| r.core.is_some()) {
            Some(labels_of(
                self.ranks
                    .iter()
                    .map(|r| format!("{}/{:?}/{:?}", r.host, r.socket, r.core)),
            ))
        } else if self.ranks.iter().all(|r| r.cpu.is_some()) {
            Some(labels_of(
                self.ranks.iter().map(|r| format!("{}/{:?}", r.host, r.cpu)),
            ))
        } else {
            None
        };
        if let Some(core) = core.filter(|c| pinned_by(c, Unit::Core)) {
            levels.push(("core".into(), core));
        }
        // Ranks bound within one core (no more CPUs than its threads) share a label with those
        // bound to the same CPUs; ranks left freer have one each.
        let same_cpus = (self.ranks.iter().enumerate())
            .map(|(k, r)| {
                let set = r.cpuset.as_deref()?;
                Some(match self.bound_within(r, Unit::Core) {
                    true => format!("{} {set}", r.host),
                    false => format!("free rank {k}"),
                })
            })
            .collect::<Option<Vec<String>>>()
            .map(|v| labels_of(v.into_iter()));
        KnownPlacement {
            levels,
            shared_cpus,
            same_cpus,
        }
    }

    /// Whether rank `r`'s allowed CPUs lie within one `unit` of its host, as far as the record
    /// tells: a core holds at most its host's threads per core, a socket or NUMA node the CPUs
    /// the host facts list for it. Unknown (no CPUs or facts recorded) counts as within.
    fn bound_within(&self, r: &crate::RankInfo, unit: Unit) -> bool {
        let Some(cpus) = r.cpuset.as_deref().and_then(crate::parse_cpu_list) else {
            return true;
        };
        let facts = self.hosts.iter().find(|h| h.host == r.host);
        match unit {
            Unit::Core => {
                let per_core = facts
                    .and_then(|f| Some(f.threads? / f.cores?.max(1)))
                    .unwrap_or(1)
                    .max(1);
                cpus.len() <= per_core
            }
            Unit::Socket | Unit::Numa => {
                let lists = match (facts, unit) {
                    (Some(f), Unit::Socket) => &f.socket_cpus,
                    (Some(f), _) => &f.numa_cpus,
                    (None, _) => return true,
                };
                lists.is_empty()
                    || lists.values().any(|list| {
                        crate::parse_cpu_list(list)
                            .is_some_and(|list| cpus.iter().all(|c| list.contains(c)))
                    })
            }
        }
    }

    /// Per rank, a label shared by the ranks of one host whose allowed CPUs overlap, directly
    /// or through other ranks (see [`KnownPlacement::shared_cpus`]); `None` when a rank's CPUs
    /// were not recorded or cannot be read.
    pub fn shared_cpus(&self) -> Option<Vec<usize>> {
        let n = self.ranks.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn root(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        // (host, CPU) -> the first rank allowed on it.
        let mut owner: std::collections::HashMap<(&str, usize), usize> =
            std::collections::HashMap::new();
        for (k, r) in self.ranks.iter().enumerate() {
            for cpu in crate::parse_cpu_list(r.cpuset.as_deref()?)? {
                let other = *owner.entry((r.host.as_str(), cpu)).or_insert(k);
                let (a, b) = (root(&mut parent, other), root(&mut parent, k));
                parent[a] = b;
            }
        }
        Some((0..n).map(|k| root(&mut parent, k)).collect())
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    fn parse(text: &str) -> Result<KnownPlacement, String> {
        KnownPlacement::parse(text, Path::new("truth.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_placement_file_gives_its_levels_as_labels_in_order_of_first_appearance() {
        let p = parse(
            r#"{"levels": {"node": ["n2", "n2", "n1", "n1"], "core": {"labels": [7, 7, 3, 4]}}}"#,
        )
        .unwrap();
        assert_eq!(
            p.levels,
            [
                ("core".to_string(), vec![0, 0, 1, 2]),
                ("node".to_string(), vec![0, 0, 1, 1])
            ]
        );
        assert_eq!((p.shared_cpus, p.same_cpus), (None, None));
    }

    #[test]
    fn a_file_of_another_shape_is_named_with_what_was_expected() {
        for (text, expected) in [
            ("{\"levels\": ", "not JSON"),
            ("not json", "not JSON"),
            ("[1, 2]", "an object with `levels`"),
            ("{\"format\": 3}", "an object with `levels`"),
            ("{\"levels\": {\"node\": 4}}", "a list of labels"),
            ("{\"levels\": {\"node\": [true]}}", "a list of labels"),
            (
                "{\"levels\": {\"node\": {\"names\": [1]}}}",
                "a list of labels",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(
                e.contains("truth.json") && e.contains(expected),
                "{text}: {e}"
            );
        }
    }
}
