//! What a simulation is asked: the options `simulate` takes, the hosts, links and ranks made
//! slower or different, and what it reports.

use std::collections::HashSet;

use lgate_derive::{OutputError, OutputOptions};
use lgate_harness::TopologySource;
use lgate_plogp_bench::PLogPOptions;
use lgate_rundir::RunDirError;

use crate::model::MachineModel;
use crate::seed::splitmix;

/// How to simulate a run: what `measure` would be asked.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// The measured sizes, ascending, starting at 0.
    pub sizes: Vec<usize>,
    /// Repetitions per size and procedure.
    pub reps: usize,
    /// How many times every pair is measured.
    pub sweeps: u32,
    /// The seed of everything random.
    pub seed: u64,
    /// The schedule's topology (it decides nothing here but `meta.json`'s schedule and the
    /// time estimate).
    pub topology: TopologySource,
    /// Fast mode's share of ranks per group.
    pub fast: Option<f64>,
    /// What to derive.
    pub outputs: OutputOptions,
    /// The command line, for `meta.json`.
    pub command_line: Vec<String>,
    /// The program and version, for `meta.json`.
    pub tool: String,
    /// The staged plan to model (`measure --plan staged`); the full plan when `None`.
    pub plan: Option<lgate_harness::StagedPlanOptions>,
    /// Facts of some hosts made to differ from the rest (`--odd-host`).
    pub host_changes: Vec<HostChange>,
    /// Hosts and links made slower than the model says (`--slow-host`, `--slow-link`).
    pub degraded: Vec<Degradation>,
    /// Ranks made slower (`--slow-rank`).
    pub slow_ranks: Vec<RankSlowdown>,
    /// Which measurement of the same machine this is: 0 for the first; another number draws
    /// other noise while the placement and the artifacts stay those of the seed.
    pub rerun: u64,
}

/// A host, or the link between two hosts, made slower: every pair with a rank on the host (or
/// with one rank on each host) takes `factor` times as long. Hosts by name or node number.
#[derive(Debug, Clone, PartialEq)]
pub struct Degradation {
    /// The host, or the two ends of the link.
    pub hosts: Vec<String>,
    /// How many times as long its pairs take (above 0).
    pub factor: f64,
}

impl Degradation {
    /// Parses `HOST=FACTOR` (`links` false) or `HOST:HOST=FACTOR` (`links` true).
    pub fn parse(s: &str, link: bool) -> Result<Degradation, DegradationError> {
        let wrong = || DegradationError::Form {
            text: s.to_string(),
            form: if link {
                "HOST:HOST=FACTOR"
            } else {
                "HOST=FACTOR"
            },
            example: if link { "n0:n3=2" } else { "n2=1.15" },
        };
        let (hosts, factor) = s.rsplit_once('=').ok_or_else(wrong)?;
        let factor: f64 = factor.trim().parse().map_err(|_| wrong())?;
        if !(factor.is_finite() && factor > 0.0) {
            return Err(DegradationError::Factor(s.to_string()));
        }
        let hosts: Vec<String> = if link {
            let (a, b) = hosts.split_once(':').ok_or_else(wrong)?;
            vec![a.into(), b.into()]
        } else {
            vec![hosts.into()]
        };
        if hosts.iter().any(|h| h.is_empty()) {
            return Err(wrong());
        }
        if link && hosts[0] == hosts[1] {
            return Err(DegradationError::SameHost(s.to_string()));
        }
        Ok(Degradation { hosts, factor })
    }
}

/// A rank made slower: every pair it is in takes `factor` times as long (a busy or slow
/// core); or, with `with`, only its pair with that rank (a bad link, port or cable).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankSlowdown {
    /// The rank.
    pub rank: usize,
    /// The other rank of the one slow pair, if only that pair is slow.
    pub with: Option<usize>,
    /// How many times as long its pairs take (above 0).
    pub factor: f64,
}

/// The slow pairs among `pairs` (rank, other rank, factor) that the staged run `run` never
/// tested (its screening table holds every pair it tested), which then change nothing in it;
/// none when the run has no screening table (the full plan tests every pair).
pub fn untested_slow_pairs(
    pairs: &[RankSlowdown],
    run: &std::path::Path,
) -> Vec<(usize, usize, f64)> {
    let table = run.join(lgate_rundir::files::SCREEN_TABLE);
    let Ok(rows) = lgate_rundir::read_screen_table(&table) else {
        return Vec::new();
    };
    let tested: HashSet<(usize, usize)> =
        rows.iter().map(|r| (r.i.min(r.j), r.i.max(r.j))).collect();
    pairs
        .iter()
        .filter_map(|p| Some((p.rank, p.with?, p.factor)))
        .filter(|&(a, b, _)| !tested.contains(&(a.min(b), a.max(b))))
        .collect()
}

impl RankSlowdown {
    /// Parses `RANK=FACTOR`.
    pub fn parse(s: &str) -> Result<RankSlowdown, DegradationError> {
        let wrong = || DegradationError::Form {
            text: s.to_string(),
            form: "RANK=FACTOR",
            example: "5=1.5",
        };
        let (rank, factor) = s.split_once('=').ok_or_else(wrong)?;
        let rank: usize = rank.trim().parse().map_err(|_| wrong())?;
        let factor: f64 = factor.trim().parse().map_err(|_| wrong())?;
        if !(factor.is_finite() && factor > 0.0) {
            return Err(DegradationError::Factor(s.to_string()));
        }
        Ok(RankSlowdown {
            rank,
            with: None,
            factor,
        })
    }

    /// Parses `RANK:RANK=FACTOR`: one pair of ranks slower.
    pub fn parse_pair(s: &str) -> Result<RankSlowdown, DegradationError> {
        let wrong = || DegradationError::Form {
            text: s.to_string(),
            form: "RANK:RANK=FACTOR",
            example: "3:12=2",
        };
        let (ranks, factor) = s.split_once('=').ok_or_else(wrong)?;
        let (a, b) = ranks.split_once(':').ok_or_else(wrong)?;
        let one = RankSlowdown::parse(&format!("{a}={factor}")).map_err(|_| wrong())?;
        let with: usize = b.trim().parse().map_err(|_| wrong())?;
        if with == one.rank {
            return Err(DegradationError::SameRank(s.to_string()));
        }
        Ok(RankSlowdown {
            with: Some(with),
            ..one
        })
    }
}

/// A slower host or link that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DegradationError {
    /// Not of the form asked for.
    #[error("{text}: expected {form}, e.g. {example}")]
    Form {
        /// The text given.
        text: String,
        /// The form expected.
        form: &'static str,
        /// An example of it.
        example: &'static str,
    },
    /// The factor is not a positive number.
    #[error("{0}: the factor must be a positive number")]
    Factor(String),
    /// Both ends of a link are one host.
    #[error("{0}: a link joins two different hosts")]
    SameHost(String),
    /// Both ranks of a pair are one rank.
    #[error("{0}: a pair joins two different ranks")]
    SameRank(String),
}

/// One fact of one simulated host set apart from the rest: `HOST:FACT=VALUE`, the host by name
/// or by node number (`n3:governor=powersave`, `3:smt=off`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostChange {
    /// The host's name or node number.
    pub host: String,
    /// The fact (see [`lgate_rundir::HostFacts::set`]).
    pub fact: String,
    /// Its value on that host.
    pub value: String,
}

/// A host change that is not of the form `HOST:FACT=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given}: expected HOST:FACT=VALUE, e.g. 3:governor=powersave")]
pub struct HostChangeError {
    /// The text given.
    pub given: String,
}

impl std::str::FromStr for HostChange {
    type Err = HostChangeError;
    fn from_str(s: &str) -> Result<Self, HostChangeError> {
        let wrong = || HostChangeError {
            given: s.to_string(),
        };
        let (host, rest) = s.split_once(':').ok_or_else(wrong)?;
        let (fact, value) = rest.split_once('=').ok_or_else(wrong)?;
        if host.is_empty() || fact.is_empty() || value.is_empty() {
            return Err(wrong());
        }
        Ok(HostChange {
            host: host.into(),
            fact: fact.into(),
            value: value.into(),
        })
    }
}

impl SimulateOptions {
    /// The seed of the repetitions' noise: the seed's for the first measurement, another for
    /// each rerun.
    pub fn noise_seed(&self) -> u64 {
        if self.rerun == 0 {
            self.seed
        } else {
            self.seed ^ splitmix(0x7265_7275_6e00 ^ self.rerun)
        }
    }

    /// What `measure --max-size` would do on `model`: 0 and powers of two up to `max_size`,
    /// the model's repetitions, one sweep, no schedule topology, the default outputs.
    pub fn new(model: &MachineModel, max_size: usize, seed: u64) -> Self {
        SimulateOptions {
            sizes: PLogPOptions::sizes_up_to(max_size),
            reps: model.reps,
            sweeps: 1,
            seed,
            topology: TopologySource::None,
            fast: None,
            outputs: OutputOptions {
                matrix_sizes: OutputOptions::default_matrix_sizes(max_size),
                ..OutputOptions::default()
            },
            command_line: Vec::new(),
            tool: format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
            plan: None,
            host_changes: Vec::new(),
            degraded: Vec::new(),
            slow_ranks: Vec::new(),
            rerun: 0,
        }
    }
}

/// Which change of [`SimulateOptions`] an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// A host made slower (`degraded`, one host).
    SlowHost,
    /// A link between two hosts made slower (`degraded`, two hosts).
    SlowLink,
    /// A rank made slower (`slow_ranks`, alone).
    SlowRank,
    /// A pair of ranks made slower (`slow_ranks`, with another rank).
    SlowPair,
    /// A host whose facts differ (`host_changes`).
    OddHost,
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ChangeKind::SlowHost => "slow host",
            ChangeKind::SlowLink => "slow link",
            ChangeKind::SlowRank => "slow rank",
            ChangeKind::SlowPair => "slow pair",
            ChangeKind::OddHost => "odd host",
        })
    }
}

/// An error of simulating.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The options do not fit the model.
    #[error("{0}")]
    Options(String),
    /// A change asked of the machine does not fit it: which change, as given, and why.
    #[error("{what} {given}: {problem}")]
    Change {
        /// Which of [`SimulateOptions`]'s changes.
        what: ChangeKind,
        /// The change as given (`betzy-n9=1.3`, `3:999=2`, ...).
        given: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A count of the options is refused (`field` names it).
    #[error("{field} {source}")]
    Count {
        /// The option's field.
        field: &'static str,
        /// Why.
        source: lgate_stats::CountError,
    },
    /// The schedule's topology.
    #[error(transparent)]
    Harness(#[from] lgate_harness::HarnessError),
    /// The run directory.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// Deriving or writing the outputs.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// What a simulation wrote.
#[derive(Debug, Clone)]
pub struct SimulationReport {
    /// Pair measurements generated (all sweeps).
    pub pairs: usize,
    /// Files written in the run directory.
    pub files: Vec<String>,
    /// Seconds it took.
    pub wall_s: f64,
}
