//! meta.json: who ran where and how. It is also the ground truth of rank placement.

use lgate_knobs::Knob;
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::RunDirError;

mod resume;
mod summary;
mod test_info;

pub use resume::{PlanDifference, PlanItem};
pub use summary::{RankTime, RunPart, RunSummary, StageSummary};
use test_info::sorted;
pub use test_info::TestInfo;

pub use crate::files::META_FILE;
/// The value of meta.json's `format` field.
pub const RUN_FORMAT: &str = "lgate-plogp-run";
/// The version of meta.json this build writes and reads.
pub const RUN_VERSION: u64 = 1;

/// Everything known about a run apart from its results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Always [`RUN_FORMAT`].
    pub format: String,
    /// [`RUN_VERSION`].
    pub version: u64,
    /// The program and version that wrote the run, e.g. `lgate-plogp 0.1.0`.
    pub tool: String,
    /// Whether the run finished.
    pub status: RunStatus,
    /// The command line of rank 0.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The pair test and its parameters.
    #[serde(serialize_with = "sorted")]
    pub test: TestInfo,
    /// How pairs were scheduled.
    pub schedule: ScheduleInfo,
    /// One entry per rank, in rank order.
    pub ranks: Vec<RankInfo>,
    /// The MPI library and its settings.
    #[serde(default)]
    pub mpi: crate::MpiInfo,
    /// How the job was launched.
    #[serde(default)]
    pub launcher: LauncherInfo,
    /// The operating system of rank 0's host.
    #[serde(default)]
    pub system: SystemInfo,
    /// What each host is (CPU, caches, memory, frequency policy), once per host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::HostFacts>,
    /// When the run started (RFC 3339, UTC).
    pub start: String,
    /// When the run ended (RFC 3339, UTC), once it has.
    #[serde(default)]
    pub end: Option<String>,
    /// Totals, once the run has ended.
    #[serde(default)]
    pub summary: Option<RunSummary>,
    /// Each invocation that measured: the first start and every resume, in order; the last is
    /// open (no end) while it runs, or when it was killed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<RunPart>,
    /// For a run written by `simulate`: the machine model and what was drawn from the seed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "sorted"
    )]
    pub simulation: Option<crate::SimulationRecord>,
}

/// Whether a run finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Measuring, or stopped before the end (resume it with `--resume`).
    Running,
    /// Every scheduled pair was measured.
    Complete,
}

/// How pairs were scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleInfo {
    /// Where the topology came from: a file path, `auto`, or `none` (all ranks one group).
    pub topology_source: String,
    /// The topology that was used, as an `lgate-plogp-topology` JSON document (`{}` for none:
    /// an imported run).
    #[serde(with = "lgate_topology::json::embedded")]
    pub topology: Option<lgate_topology::Topology>,
    /// How many times the whole schedule ran.
    pub sweeps: u32,
    /// The seed of the pair order (and of fast mode's choice of ranks).
    pub seed: u64,
    /// Fast mode's share of ranks tested per group, if on.
    #[serde(default)]
    pub fast_fraction: Option<f64>,
    /// The ranks that were tested; all of them unless fast mode chose.
    pub tested_ranks: Vec<usize>,
    /// Pairs per sweep.
    pub pairs_per_sweep: usize,
    /// The staged plan's choices and screening test; absent when every pair had the full test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanInfo>,
    /// Hosts whose ranks could float over several CPUs and outnumbered them: each test there
    /// ran with its two ranks pinned to two CPUs, so the scheduler could not stack them on one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_hosts: Vec<String>,
}

/// A staged plan as meta.json records it (`measure --plan staged`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInfo {
    /// The plan: `staged`.
    pub name: String,
    /// Its choices (pairs between groups, samples, concurrency, ...), keys sorted.
    #[serde(serialize_with = "sorted")]
    pub parameters: crate::StagedChoices,
    /// The screening test of stages hosts, between and alone.
    #[serde(serialize_with = "sorted")]
    pub screen: TestInfo,
    /// Screening tests per sweep inside groups and between them.
    pub screening_tests: [usize; 2],
    /// Choices the plan made for this machine, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Where one rank ran. Fields that could not be read are left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    /// The rank.
    pub rank: usize,
    /// Host name (MPI processor name).
    pub host: String,
    /// Process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The CPU the rank ran on when it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// The CPUs the rank may run on, compressed (`0-3,8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuset: Option<String>,
    /// Core id of `cpu` within its socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<usize>,
    /// Socket (package) id of `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<usize>,
    /// NUMA node of `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<usize>,
    /// CPU frequency governor of `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// The machine's boot id (Linux): ranks with other host names and one boot id share one
    /// machine's CPUs (containers, network namespaces, an emulated cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The levels above the host the rank sits in, by name: the item's index (such as the
    /// `switch` of a simulated machine).
    #[serde(flatten)]
    pub extra: BTreeMap<String, usize>,
}

/// How the job was launched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LauncherInfo {
    /// `slurm`, `mpirun` or `unknown`.
    pub kind: String,
    /// The launcher's command line, when it could be read.
    #[serde(default)]
    pub command_line: Option<String>,
    /// The launcher's variables (SLURM_*, OMPI_COMM_WORLD_*, PMIX_RANK, ...) on rank 0.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
}

impl LauncherInfo {
    /// The command that continues the run in `dir` under `program` (the tool's file name): the
    /// launch the run was started with, its options included, when its command line was read,
    /// else `srun -n N` or `mpirun -np N` by the launcher's kind.
    pub fn resume_line(&self, program: &str, ranks: usize, dir: &std::path::Path) -> String {
        let dir = dir.display();
        // The launch up to the program, as typed: `mpirun --bind-to core -np 4 /path/lgate-plogp`.
        let launch = self.command_line.as_deref().and_then(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let at = words.iter().position(|w| {
                std::path::Path::new(w)
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy() == program)
            })?;
            Some(words[..=at].join(" "))
        });
        let resume = Knob::Resume.in_command();
        match (launch, self.kind.as_str()) {
            (Some(launch), _) => format!("{launch} {resume} {dir}"),
            (None, "slurm") => format!("srun -n {ranks} {program} {resume} {dir}"),
            (None, _) => format!("mpirun -np {ranks} {program} {resume} {dir}"),
        }
    }
}

/// The operating system of rank 0's host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// Kernel release (`uname -r`).
    #[serde(default)]
    pub kernel: Option<String>,
    /// Operating system name.
    #[serde(default)]
    pub os: Option<String>,
}

impl RankInfo {
    /// A rank known only by its host (an imported run): no process, CPU or placement.
    pub fn on_host(rank: usize, host: String) -> RankInfo {
        RankInfo {
            rank,
            host,
            pid: None,
            cpu: None,
            cpuset: None,
            core: None,
            socket: None,
            numa: None,
            governor: None,
            machine: None,
            extra: Default::default(),
        }
    }
}

impl RunMeta {
    /// The run summary's lines about the hosts: what they are when they agree, else which hosts
    /// differ from most and in what, and ranks whose placement their host's facts contradict.
    pub fn host_summary_lines(&self) -> Vec<String> {
        let hosts = &self.hosts;
        let Some(first) = hosts.first() else {
            return Vec::new();
        };
        let odd = crate::odd_hosts(hosts);
        let mut lines = Vec::new();
        if odd.is_empty() {
            let unknown = || "unknown".to_string();
            let f = &first.frequency;
            lines.push(format!(
                "{}: {}, {} CPUs in {} socket(s), SMT {}, frequency governor {}{}",
                if hosts.len() == 1 {
                    format!("host {}", first.host)
                } else {
                    format!("{} hosts, all alike", hosts.len())
                },
                first.cpu_model.clone().unwrap_or_else(unknown),
                first.threads.map_or_else(unknown, |t| t.to_string()),
                first.sockets.map_or_else(unknown, |s| s.to_string()),
                first
                    .smt
                    .map_or_else(unknown, |s| if s { "on" } else { "off" }.to_string()),
                f.governor.clone().unwrap_or_else(unknown),
                match f.boost {
                    Some(true) => ", boost on",
                    Some(false) => ", boost off",
                    None => "",
                }
            ));
        } else {
            let lines_of = crate::odd_host_lines(&odd, hosts.len());
            lines.push(format!(
                "{} of {} hosts differ from most (host facts in meta.json):",
                lines_of.len(),
                hosts.len()
            ));
            lines.extend(lines_of.into_iter().map(|l| format!("  {l}")));
        }
        let (mismatches, count) = crate::placement_mismatches(&self.ranks, hosts, 3);
        if count > 0 {
            lines.push(format!(
                "{count} rank(s) have a placement their host's facts contradict: {}{}",
                mismatches.join("; "),
                if count > mismatches.len() {
                    "; ..."
                } else {
                    ""
                }
            ));
        }
        lines
    }

    /// The meta.json of a run imported from another tool's measurements at `now`: `hosts`
    /// per rank (`rankN` where none are named), nothing scheduled, complete.
    pub fn imported(
        tool: String,
        command_line: Vec<String>,
        test: TestInfo,
        hosts: Vec<String>,
        now: String,
    ) -> RunMeta {
        let n = hosts.len();
        let ranks = hosts
            .into_iter()
            .enumerate()
            .map(|(r, host)| RankInfo::on_host(r, host))
            .collect();
        let schedule = ScheduleInfo {
            topology_source: "none: imported".into(),
            topology: None,
            sweeps: 1,
            seed: 0,
            fast_fraction: None,
            tested_ranks: (0..n).collect(),
            pairs_per_sweep: n * n.saturating_sub(1) / 2,
            plan: None,
            pinned_hosts: Vec::new(),
        };
        let mut meta = RunMeta::started(tool, command_line, test, schedule, ranks, now.clone());
        meta.status = RunStatus::Complete;
        meta.end = Some(now);
        meta.launcher.kind = "imported".into();
        meta
    }

    /// The record of a run that is starting: format, version and status filled in, nothing
    /// about the MPI library, the launcher or the system yet (set those fields on the result),
    /// no end and no summary.
    pub fn started(
        tool: String,
        command_line: Vec<String>,
        test: TestInfo,
        schedule: ScheduleInfo,
        ranks: Vec<RankInfo>,
        start: String,
    ) -> RunMeta {
        RunMeta {
            format: RUN_FORMAT.into(),
            version: RUN_VERSION,
            tool,
            status: RunStatus::Running,
            command_line,
            test,
            schedule,
            ranks,
            mpi: Default::default(),
            launcher: LauncherInfo::default(),
            system: SystemInfo::default(),
            hosts: Vec::new(),
            start,
            end: None,
            summary: None,
            parts: Vec::new(),
            simulation: None,
        }
    }

    /// What finishes this run when it stopped before its end, for a message: a measured run
    /// resumes; a simulated one is written again.
    pub fn how_to_finish(&self, path: &std::path::Path) -> String {
        match self.simulation {
            Some(_) => format!(
                "a simulated run is not resumed: `lgate-plogp simulate {} {} {}` with its \
                 options writes it again",
                Knob::SimulateForce,
                Knob::SimulateOutput,
                path.display()
            ),
            None => {
                let program = (self.command_line.first())
                    .and_then(|p| std::path::Path::new(p).file_name())
                    .map_or("lgate-plogp".into(), |n| n.to_string_lossy().into_owned());
                format!(
                    "`{}` finishes it",
                    self.launcher.resume_line(&program, self.ranks.len(), path)
                )
            }
        }
    }

    /// The tests this record says its journal holds: those of the parts that ended (a part cut
    /// short records none), or a finished run's total.
    pub fn recorded_tests(&self) -> usize {
        let ended: usize = self
            .parts
            .iter()
            .filter(|p| p.end.is_some())
            .map(|p| p.pairs_measured)
            .sum();
        ended.max(self.summary.as_ref().map_or(0, |s| s.pairs_total))
    }

    /// The parts of this run as a resume finds them: a part left open was killed, and is
    /// closed with the tests the journal (`journal_tests` in all) holds beyond the earlier
    /// parts'; a run written before parts were kept is one part made of its start, end and
    /// summary.
    pub fn parts_before_resume(&self, journal_tests: usize) -> Vec<RunPart> {
        let mut parts = self.parts.clone();
        if parts.is_empty() {
            parts.push(RunPart {
                start: self.start.clone(),
                end: self.end.clone(),
                pairs_measured: self
                    .summary
                    .as_ref()
                    .map_or(journal_tests, |s| s.pairs_measured),
                wall_s: self.summary.as_ref().map(|s| s.wall_s),
                testing_s: self.summary.as_ref().map(|s| s.testing_s),
                command_line: self.command_line.clone(),
            });
        }
        if let Some((last, earlier)) = parts.split_last_mut() {
            if last.end.is_none() && last.wall_s.is_none() {
                let before: usize = earlier.iter().map(|p| p.pairs_measured).sum();
                last.pairs_measured = journal_tests.saturating_sub(before);
            }
        }
        parts
    }
}

impl RunMeta {
    /// Reads and checks meta.json.
    pub fn read(path: &Path) -> Result<Self, RunDirError> {
        let text = std::fs::read_to_string(path).map_err(crate::io_error(path))?;
        Self::parse(&text, path)
    }

    /// Checks the text of meta.json; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, RunDirError> {
        let bad = |message: String| RunDirError::BadMeta {
            path: path.to_path_buf(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(RUN_FORMAT) => {}
            other => {
                return Err(bad(format!(
                    "`format` is {}, expected \"{RUN_FORMAT}\"",
                    other.map_or("missing".to_string(), |f| format!("{f:?}"))
                )))
            }
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(RUN_VERSION) => {}
            other => {
                return Err(bad(format!(
                    "run version {} is not supported (this build reads version {RUN_VERSION})",
                    other.map_or("missing".to_string(), |v| v.to_string())
                )))
            }
        }
        let meta: RunMeta = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if let Some((k, r)) = meta.ranks.iter().enumerate().find(|(k, r)| r.rank != *k) {
            return Err(bad(format!(
                "ranks[{k}] is rank {}: ranks must be in order",
                r.rank
            )));
        }
        Ok(meta)
    }

    /// The JSON text of meta.json.
    pub fn to_json(&self) -> Vec<u8> {
        let mut text = serde_json::to_vec_pretty(self).expect("meta.json serialises");
        text.push(b'\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> RunMeta {
        RunMeta {
            format: RUN_FORMAT.into(),
            version: RUN_VERSION,
            tool: "lgate-plogp 0.1.0".into(),
            status: RunStatus::Running,
            command_line: vec!["lgate-plogp".into(), "measure".into()],
            test: TestInfo::PingPong(crate::PingPongParameters {
                sizes: vec![0],
                reps: 8,
            }),
            schedule: ScheduleInfo {
                topology_source: "none".into(),
                topology: None,
                sweeps: 1,
                seed: 7,
                fast_fraction: None,
                tested_ranks: vec![0, 1],
                pairs_per_sweep: 1,
                plan: None,
                pinned_hosts: Vec::new(),
            },
            ranks: (0..2)
                .map(|rank| RankInfo {
                    rank,
                    host: "n1".into(),
                    pid: Some(100 + rank as u32),
                    cpu: Some(rank),
                    cpuset: Some("0-1".into()),
                    core: Some(rank),
                    socket: Some(0),
                    numa: None,
                    governor: None,
                    machine: None,
                    extra: BTreeMap::from([("switch".to_string(), 0)]),
                })
                .collect(),
            mpi: Default::default(),
            launcher: LauncherInfo::default(),
            system: SystemInfo::default(),
            hosts: Vec::new(),
            start: "2026-11-21T21:00:00Z".into(),
            end: None,
            summary: None,
            parts: Vec::new(),
            simulation: None,
        }
    }

    #[test]
    fn ranks_bound_to_the_same_cpus_are_told_from_ranks_left_free() {
        // Both ranks allowed on CPUs 0-1 (more than a core): free to share them, not bound.
        let mut meta = sample();
        let p = meta.known_placement();
        assert!(!p.same_cpus(0, 1));
        assert!(p.split_of_shared_cpus(&[0, 1]).is_some());
        // Both bound to CPU 0: taking turns on it.
        meta.ranks[0].cpuset = Some("0".into());
        meta.ranks[1].cpuset = Some("0".into());
        assert!(meta.known_placement().same_cpus(0, 1));
        // Each on a CPU of its own: neither.
        meta.ranks[1].cpuset = Some("1".into());
        meta.ranks[0].cpuset = Some("0".into());
        let p = meta.known_placement();
        assert!(!p.same_cpus(0, 1));
        assert!(p.split_of_shared_cpus(&[0, 1]).is_none());
        // One bound to CPU 0, the other free on 0-1: they may share, but are not bound alike.
        meta.ranks[1].cpuset = Some("0-1".into());
        let p = meta.known_placement();
        assert!(!p.same_cpus(0, 1));
        assert!(p.split_of_shared_cpus(&[0, 1]).is_some());
    }

    #[test]
    fn round_trips_and_checks_the_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_FILE);
        let meta = sample();
        std::fs::write(&path, meta.to_json()).unwrap();
        assert_eq!(RunMeta::read(&path).unwrap(), meta);
        let text = String::from_utf8(meta.to_json()).unwrap();
        assert!(
            text.contains("\"switch\": 0"),
            "extra placement is flattened: {text}"
        );

        std::fs::write(&path, text.replace(RUN_FORMAT, "other")).unwrap();
        let err = RunMeta::read(&path).unwrap_err().to_string();
        assert!(err.contains("`format` is \"other\""), "{err}");
        std::fs::write(&path, "{").unwrap();
        assert!(RunMeta::read(&path)
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
    }

    #[test]
    fn measured_runs_meta_json_is_written_back_byte_for_byte() {
        // Two real staged PLogP runs of the emulated testbed: the test, the plan's choices and
        // the screening test typed, their keys sorted as they were written.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fixtures/testbed");
        for run in ["one-rank-a-host", "three-ranks-a-host"] {
            let path = fixtures.join(run).join(META_FILE);
            let text = std::fs::read(&path).unwrap();
            let meta = RunMeta::read(&path).unwrap();
            assert!(matches!(meta.test, TestInfo::PLogP(_)), "{run}");
            let screen = &meta.schedule.plan.as_ref().unwrap().screen;
            assert!(matches!(screen, TestInfo::PingPong(_)), "{run}");
            assert!(
                meta.to_json() == text,
                "{run}: meta.json written back differs"
            );
        }
    }

    #[test]
    fn plan_differences_name_what_changed() {
        let a = sample();
        let mut b = sample();
        assert!(a.plan_differences(&b).is_empty());
        b.schedule.seed = 8;
        b.test = TestInfo::PingPong(crate::PingPongParameters {
            sizes: vec![0],
            reps: 16,
        });
        let d = a.plan_differences(&b);
        assert_eq!(d.len(), 2, "{d:?}");
        let said: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert!(said
            .iter()
            .any(|s| s.starts_with("seed: 7 in the run, 8 now")));
        let reps = PlanDifference {
            what: PlanItem::TestParameter("reps".into()),
            then: "8".into(),
            now: "16".into(),
        };
        assert!(d.contains(&reps), "{d:?}");
        assert!(said.iter().all(|s| !s.contains("--")), "no flag: {said:?}");
    }

    #[test]
    fn a_topology_that_differs_is_told_in_words() {
        let a = sample();
        let mut b = sample();
        assert_eq!(b.ranks.len(), 2);
        b.schedule.topology = Some(
            lgate_topology::json::parse(
                r#"{"format": "lgate-plogp-topology", "version": 1, "ranks": 2,
                    "levels": [{"name": "node", "groups": [[0], [1]]}]}"#,
                None,
            )
            .unwrap(),
        );
        let d: Vec<String> = a
            .plan_differences(&b)
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert!(
            d.iter()
                .any(|s| s.starts_with("topology: ") && s.ends_with("levels node of 2 groups now")),
            "{d:?}"
        );
        assert!(d.iter().all(|s| !s.contains('{')), "no raw JSON: {d:?}");
        // Other rank counts: the ranks are named, and the topology (which differs with them)
        // is not printed as JSON.
        b.ranks.pop();
        let d: Vec<String> = a
            .plan_differences(&b)
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert!(d.iter().any(|s| s.starts_with("ranks: ")), "{d:?}");
        assert!(d.iter().all(|s| !s.contains('{')), "no raw JSON: {d:?}");
    }
}
