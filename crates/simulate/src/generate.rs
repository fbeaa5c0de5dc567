//! Simulated measurements: every repetition of every PLogP procedure drawn from the model,
//! summarised with the same statistics a real run uses, and written as the same run directory.

use std::collections::HashSet;
use std::time::Instant;

use lgate_derive::{derive_plogp, MeasuredPair, OutputError, OutputOptions};
use lgate_harness::{Pair, Schedule, Summary, TopologySource};
use lgate_plogp_bench::PLogPOptions;
use lgate_rundir::{
    DegradedRecord, PairMeasurement, Saturation, SimulationRecord, SizeResult, SlowPairRecord,
    SlowRankRecord,
};
use lgate_rundir::{
    LauncherInfo, RunDir, RunDirError, RunMeta, RunStatus, RunSummary, ScheduleInfo, TestInfo,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

use crate::layout::Layout;
use crate::model::{MachineModel, TrueParams};

/// Seconds per microsecond.
const S_PER_US: f64 = 1e-6;
/// Pairs generated in parallel before they are handed to the outputs in order.
const CHUNK_PAIRS: usize = 1 << 15;

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

/// An error of simulating.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The options do not fit the model.
    #[error("{0}")]
    Options(String),
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

/// The seeded, fixed choices of a simulation: which pairs and nodes are slow.
#[derive(Debug, Clone)]
pub struct Effects {
    bands: Vec<usize>,
    /// Slow pairs of cores (indices in machine order).
    slow_pairs: HashSet<Pair>,
    slow_nodes: Vec<usize>,
    /// Degraded hosts (one node) and links (two), by node number, with their factor.
    degraded: Vec<(Vec<usize>, f64)>,
    /// Slower ranks (and the other rank when only their pair is slower), with their factor.
    slow_ranks: Vec<(usize, Option<usize>, f64)>,
    /// Where the fixed factors of links with a spread are drawn from.
    spread_seed: u64,
}

impl Effects {
    /// Draws the bands, slow pairs and slow nodes of `model` from `seed`.
    pub fn new(model: &MachineModel, layout: &Layout, seed: u64) -> Effects {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6172_7469_6661_6374);
        let n = layout.size();
        let a = &model.artifacts;
        let mut bands: Vec<usize> = Vec::new();
        if let Some(b) = a.bands {
            for _ in 0..b.count.min(n.saturating_sub(1)) {
                let d = rng.random_range(1..n);
                if !bands.contains(&d) {
                    bands.push(d);
                }
            }
        }
        let mut slow_pairs = HashSet::new();
        if let Some(s) = a.slow_pairs {
            let total = n * (n - 1) / 2;
            while slow_pairs.len() < s.count.min(total) {
                let i = rng.random_range(0..n);
                let j = rng.random_range(0..n);
                if i != j {
                    slow_pairs.insert(Pair::new(i, j));
                }
            }
        }
        let mut slow_nodes = Vec::new();
        if let Some(s) = a.slow_node {
            let nodes = model.node_count();
            match s.node {
                Some(first) => slow_nodes.extend(first..first + s.count),
                None => {
                    while slow_nodes.len() < s.count.min(nodes) {
                        let k = rng.random_range(0..nodes);
                        if !slow_nodes.contains(&k) {
                            slow_nodes.push(k);
                        }
                    }
                    slow_nodes.sort_unstable();
                }
            }
        }
        Effects {
            bands,
            slow_pairs,
            slow_nodes,
            degraded: Vec::new(),
            slow_ranks: Vec::new(),
            spread_seed: splitmix(seed ^ 0x7370_7265_6164),
        }
    }

    /// The nodes made slow, in machine order.
    pub fn slow_nodes(&self) -> &[usize] {
        &self.slow_nodes
    }

    /// The slow pairs drawn, as pairs of cores (indices in machine order): a slow pair is a
    /// slow path between two cores, so it stays with them when the ranks are numbered
    /// otherwise.
    pub fn slow_core_pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.slow_pairs.iter().copied()
    }

    /// The band offsets drawn.
    pub fn bands(&self) -> &[usize] {
        &self.bands
    }

    /// The fixed factor of the pair of items `pair` parts at, when its link has a spread: the
    /// same for every pair of ranks on those two items.
    fn spread_factor(&self, model: &MachineModel, layout: &Layout, pair: Pair) -> f64 {
        let (level, x, y) = layout.parting_items(pair.i, pair.j);
        let spread = model
            .links
            .get(&model.levels[level].name)
            .map_or(0.0, |l| l.spread);
        if spread == 0.0 {
            return 1.0;
        }
        let key =
            splitmix(self.spread_seed ^ ((level as u64) << 56) ^ ((x as u64) << 28) ^ y as u64);
        let z: f64 = ChaCha8Rng::seed_from_u64(key).sample(StandardNormal);
        (spread * z).exp()
    }

    /// How much slower than its link every measurement of `pair` is.
    pub(crate) fn factor(&self, model: &MachineModel, layout: &Layout, pair: Pair) -> f64 {
        let a = &model.artifacts;
        let mut f = self.spread_factor(model, layout, pair);
        if let Some(first) = a.first_pair {
            if pair == Pair::new(0, 1) {
                f *= first.factor;
            }
        }
        if let Some(b) = a.bands {
            if self.bands.contains(&(pair.j - pair.i)) {
                f *= b.factor;
            }
        }
        if let Some(s) = a.slow_pairs {
            if self
                .slow_pairs
                .contains(&Pair::new(layout.slot(pair.i), layout.slot(pair.j)))
            {
                f *= s.factor;
            }
        }
        if let Some(s) = a.slow_node {
            let slow = |r: usize| self.slow_nodes.contains(&layout.node_of(r));
            if slow(pair.i) || slow(pair.j) {
                f *= s.factor;
            }
        }
        let (ni, nj) = (layout.node_of(pair.i), layout.node_of(pair.j));
        for (nodes, factor) in &self.degraded {
            let hit = match nodes[..] {
                [n] => ni == n || nj == n,
                [a, b] => (ni, nj) == (a, b) || (ni, nj) == (b, a),
                _ => false,
            };
            if hit {
                f *= factor;
            }
        }
        for &(rank, with, factor) in &self.slow_ranks {
            let hit = match with {
                None => pair.i == rank || pair.j == rank,
                Some(w) => (pair.i, pair.j) == (rank.min(w), rank.max(w)),
            };
            if hit {
                f *= factor;
            }
        }
        f
    }
}

/// A simulated machine ready to be measured.
#[derive(Debug, Clone)]
pub struct Simulation<'a> {
    model: &'a MachineModel,
    layout: Layout,
    effects: Effects,
    options: &'a SimulateOptions,
    /// The facts of every host, as meta.json records them.
    hosts: Vec<lgate_rundir::HostFacts>,
    /// Summaries to draw from, per level, size and series, when the run is large.
    pools: Option<Vec<Vec<Summary>>>,
}

/// One series of repetitions of a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Series {
    Rtt,
    Os,
    Or,
    G,
}

impl Series {
    const ALL: [Series; SERIES] = [Series::Rtt, Series::Os, Series::Or, Series::G];
}

/// Series per size.
const SERIES: usize = 4;
/// g(m) by saturation up to this size, as a real run does.
const SATURATION_MAX: usize = 64 << 10;
/// Samples of g(m) a saturation keeps.
const SATURATION_SAMPLES: usize = 4;
/// Summaries per level, size and series in a pool.
const POOL_SIZE: usize = 4096;
/// Runs with more pairs than this draw summaries from pools: a pair's summary is then one of
/// 4096 summaries of R repetitions each, drawn alike, instead of its own R repetitions; both
/// follow the same distribution.
pub const POOLED_ABOVE_PAIRS: usize = 1 << 16;

/// A summary with every statistic multiplied by `f` (the statistics, and the warm-up and
/// outlier rules, scale with the samples).
pub(crate) fn scaled(s: &Summary, f: f64) -> Summary {
    if f == 1.0 {
        return *s;
    }
    Summary {
        min: s.min * f,
        p10: s.p10 * f,
        median: s.median * f,
        p90: s.p90 * f,
        mean: s.mean * f,
        max: s.max * f,
        ..*s
    }
}

/// The most ranks one simulated host may have: a host's block is dense and every pair inside a
/// host is measured (16 384 ranks: 2.1 GB a screening size, 134 million pairs).
pub const MAX_HOST_RANKS: usize = 16_384;

impl<'a> Simulation<'a> {
    /// Places the ranks and draws the artifacts.
    pub fn new(
        model: &'a MachineModel,
        options: &'a SimulateOptions,
    ) -> Result<Self, SimulateError> {
        let bad = |m: String| Err(SimulateError::Options(m));
        if options.sizes.first() != Some(&0) || options.sizes.windows(2).any(|w| w[0] >= w[1]) {
            return bad("the sizes must ascend and start at 0".into());
        }
        let count = |field, source| SimulateError::Count { field, source };
        lgate_stats::check_repetitions(options.reps).map_err(|e| count("reps", e))?;
        lgate_stats::check_sweeps(options.sweeps).map_err(|e| count("sweeps", e))?;
        if let Some(staged) = &options.plan {
            lgate_stats::check_repetitions(staged.screen_reps)
                .map_err(|e| count("screen_reps", e))?;
        }
        let max = *options.sizes.last().expect("size 0 at least");
        if let Some(s) = options.outputs.matrix_sizes.iter().find(|s| s.0 > max) {
            return bad(format!(
                "matrix size {s} is above the largest simulated size ({}); lower --matrix-sizes or raise --max-size",
                lgate_rundir::MessageSize(max)
            ));
        }
        let layout = Layout::new(model, options.seed);
        let mut per_host = vec![0usize; model.node_count()];
        for r in 0..layout.size() {
            if let Some(n) = per_host.get_mut(layout.node_of(r)) {
                *n += 1;
            }
        }
        let largest = per_host.iter().copied().max().unwrap_or(0);
        if largest > MAX_HOST_RANKS {
            return bad(format!(
                "a host of {largest} ranks is more than this tool takes ({MAX_HOST_RANKS} at \
                 most): its block alone takes {:.0} GB a screening size and its {} pairs are all \
                 measured",
                (largest as f64).powi(2) * 8.0 / 1e9,
                largest * (largest - 1) / 2
            ));
        }
        let effects = Effects::new(model, &layout, options.seed);
        let mut hosts = layout.host_facts(&model.name);
        let node_named = |flag: &str, host: &str| -> Result<usize, SimulateError> {
            hosts
                .iter()
                .position(|h| h.host == host)
                .or_else(|| host.parse::<usize>().ok().filter(|&k| k < hosts.len()))
                .ok_or_else(|| {
                    SimulateError::Options(format!(
                        "{flag} {host}: no such host; the hosts are {} or their numbers 0-{}",
                        hosts
                            .iter()
                            .map(|h| h.host.as_str())
                            .take(4)
                            .collect::<Vec<_>>()
                            .join(", ")
                            + if hosts.len() > 4 { ", ..." } else { "" },
                        hosts.len() - 1
                    ))
                })
        };
        let mut effects = effects;
        for d in &options.degraded {
            let flag = if d.hosts.len() == 2 {
                "--slow-link"
            } else {
                "--slow-host"
            };
            let nodes = d
                .hosts
                .iter()
                .map(|h| node_named(flag, h))
                .collect::<Result<Vec<usize>, _>>()?;
            if nodes.len() == 2 && nodes[0] == nodes[1] {
                return bad(format!(
                    "{flag} {}: a link joins two different hosts",
                    d.hosts.join(":")
                ));
            }
            effects.degraded.push((nodes, d.factor));
        }
        for r in &options.slow_ranks {
            if let Some(bad_rank) = [Some(r.rank), r.with]
                .into_iter()
                .flatten()
                .find(|&k| k >= layout.size())
            {
                let flag = match r.with {
                    None => format!("--slow-rank {}={}", r.rank, r.factor),
                    Some(w) => format!("--slow-pair {}:{w}={}", r.rank, r.factor),
                };
                return bad(format!(
                    "{flag}: no rank {bad_rank}; the ranks are 0-{}",
                    layout.size() - 1
                ));
            }
            effects.slow_ranks.push((r.rank, r.with, r.factor));
        }
        let changed = options
            .host_changes
            .iter()
            .map(|c| node_named("--odd-host", &c.host).map(|k| (k, c)))
            .collect::<Result<Vec<_>, _>>()?;
        for (k, change) in changed {
            hosts[k]
                .set(&change.fact, &change.value)
                .map_err(|e| SimulateError::Options(format!("--odd-host: {e}")))?;
        }
        let mut sim = Simulation {
            model,
            layout,
            effects,
            options,
            hosts,
            pools: None,
        };
        let n = sim.layout.size();
        if n * (n - 1) / 2 > POOLED_ABOVE_PAIRS {
            sim.pools = Some(Self::pools(model, options, &sim));
        }
        Ok(sim)
    }

    /// Where the ranks sit.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The artifacts drawn.
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// The model.
    pub fn model(&self) -> &MachineModel {
        self.model
    }

    /// The noise-free parameters of a pair's link at `m` bytes, microseconds.
    pub fn link(&self, pair: Pair, m: usize) -> TrueParams {
        let level = &self.model.levels[self.layout.parting_level(pair.i, pair.j)].name;
        self.model.links[level].at(m, self.model.eager_limit_bytes)
    }

    /// The options of the simulation.
    pub fn options(&self) -> &SimulateOptions {
        self.options
    }

    /// The PLogP options a real `measure` of these sizes and repetitions would use, midpoints
    /// and time budget included: what its time is estimated with.
    pub fn measure_options(&self) -> PLogPOptions {
        PLogPOptions {
            adaptive: true,
            ..self.plogp_options()
        }
    }

    /// The PLogP options a real run of these sizes and repetitions would use.
    pub fn plogp_options(&self) -> PLogPOptions {
        PLogPOptions {
            sizes: self.options.sizes.clone(),
            reps: self.options.reps,
            adaptive: false,
            ..PLogPOptions::new(*self.options.sizes.last().expect("size 0 at least"))
        }
    }

    /// One pair's measurement in one sweep, drawn from its own seeded stream (so the result
    /// does not depend on the order or the threads pairs are generated in).
    pub fn measure(&self, pair: Pair, sweep: u32) -> PairMeasurement {
        let o = self.options;
        let stream = splitmix(
            o.noise_seed()
                ^ splitmix(sweep as u64 ^ splitmix((pair.i as u64) << 32 | pair.j as u64)),
        );
        let mut rng = ChaCha8Rng::seed_from_u64(stream);
        let factor = self.effects.factor(self.model, &self.layout, pair);
        let level = self.layout.parting_level(pair.i, pair.j);
        let mut draw = |k: usize, series: Series| match &self.pools {
            Some(pools) => {
                let pool = &pools[(level * o.sizes.len() + k) * SERIES + series as usize];
                scaled(&pool[rng.random_range(0..pool.len())], factor)
            }
            None => scaled(&self.series(&mut rng, level, k, series), factor),
        };
        let sizes = o
            .sizes
            .iter()
            .enumerate()
            .map(|(k, &m)| SizeResult {
                size: m,
                rtt: draw(k, Series::Rtt),
                os: draw(k, Series::Os),
                or: draw(k, Series::Or),
                g: (m <= SATURATION_MAX).then(|| Saturation {
                    gap: draw(k, Series::G),
                    messages: 1000,
                    converged: true,
                }),
                adaptive: false,
                raw: None,
            })
            .collect();
        PairMeasurement {
            clock_overhead_s: 0.0,
            sizes,
        }
    }

    /// The summary of one series of repetitions over a link parting at `level`, at size index
    /// `k`, before the pair's own slowdown: log-normal noise and spikes on every sample, the
    /// warm-up on the first size's samples, then the statistics a real run applies.
    fn series(&self, rng: &mut ChaCha8Rng, level: usize, k: usize, series: Series) -> Summary {
        let model = self.model;
        let m = self.options.sizes[k];
        let link = &model.links[&model.levels[level].name];
        let t = link.at(m, model.eager_limit_bytes);
        let (truth, reps, sigma, first) = match series {
            Series::Rtt => (t.rtt, self.options.reps, model.noise.sigma, k == 0),
            Series::Os => (t.os, self.options.reps, model.noise.sigma, k == 0),
            Series::Or => (t.or, self.options.reps, model.noise.sigma, k == 0),
            // A saturated batch averages many messages: little noise is left.
            Series::G => (t.g, SATURATION_SAMPLES, model.noise.sigma / 8.0, false),
        };
        // A saturation sample is the average of a batch of many messages: one slow message is
        // diluted in it, so spikes hit the timed single operations only.
        let samples = self.samples(rng, truth, reps, sigma, first, series != Series::G);
        match series {
            Series::G => Summary::of_steady(&samples),
            _ => Summary::of(&samples),
        }
        .expect("at least one repetition")
    }

    /// `reps` samples (seconds) of a quantity whose noise-free value is `truth` microseconds:
    /// log-normal noise of `sigma`, spikes when `spiky`, the warm-up when `first`.
    pub(crate) fn samples(
        &self,
        rng: &mut ChaCha8Rng,
        truth: f64,
        reps: usize,
        sigma: f64,
        first: bool,
        spiky: bool,
    ) -> Vec<f64> {
        let a = &self.model.artifacts;
        (0..reps)
            .map(|r| {
                let mut v = truth;
                if sigma > 0.0 {
                    let z: f64 = rng.sample(StandardNormal);
                    v *= (sigma * z).exp();
                }
                if let (Some(s), true) = (a.spikes, spiky) {
                    if rng.random::<f64>() < s.rate {
                        v *= s.factor;
                    }
                }
                if let Some(w) = a.warmup {
                    if first && r < w.samples {
                        v *= w.factor - (w.factor - 1.0) * r as f64 / w.samples as f64;
                    }
                }
                v * S_PER_US
            })
            .collect()
    }

    /// Pools of summaries per level, size and series, drawn from the seed, for runs too large
    /// to draw every repetition of every pair.
    fn pools(
        model: &MachineModel,
        options: &SimulateOptions,
        sim: &Simulation,
    ) -> Vec<Vec<Summary>> {
        let keys: Vec<(usize, usize, Series)> = (0..model.levels.len())
            .flat_map(|l| {
                (0..options.sizes.len())
                    .flat_map(move |k| Series::ALL.into_iter().map(move |s| (l, k, s)))
            })
            .collect();
        keys.par_iter()
            .map(|&(l, k, s)| {
                let stream = splitmix(
                    options.noise_seed()
                        ^ 0x706f_6f6c
                        ^ splitmix(((l as u64) << 40) | ((k as u64) << 8) | s as u64),
                );
                let mut rng = ChaCha8Rng::seed_from_u64(stream);
                (0..POOL_SIZE)
                    .map(|_| sim.series(&mut rng, l, k, s))
                    .collect()
            })
            .collect()
    }

    /// The schedule a real run would follow, and the ranks' host names.
    pub fn schedule(&self) -> Result<(lgate_topology::Topology, Schedule), SimulateError> {
        let n = self.layout.size();
        let hosts: Vec<String> = (0..n)
            .map(|r| self.layout.host_name(self.layout.node_of(r)))
            .collect();
        let topology = lgate_harness::resolve_topology(&self.options.topology, &hosts)?;
        let schedule = Schedule::new(topology.tree(), n, self.options.seed, self.options.fast)
            .map_err(lgate_harness::HarnessError::from)?;
        Ok((topology, schedule))
    }

    /// Writes the run directory: `meta.json` with the true placement, then the outputs a
    /// measured run has.
    pub fn write(&self, run: &RunDir) -> Result<SimulationReport, SimulateError> {
        if let Some(staged) = &self.options.plan {
            return self.write_staged(run, staged);
        }
        let started = Instant::now();
        let (topology, schedule) = self.schedule()?;
        let predicted = crate::estimate::estimate(
            self.model(),
            self.layout(),
            &self.measure_options(),
            &schedule,
            self.options.sweeps,
        );
        let (start, end) = simulated_times(predicted.wall_s);
        let ranks = schedule.tested_ranks();
        let o = self.options;
        let test = TestInfo::PLogP(self.plogp_options());
        let schedule_info = ScheduleInfo {
            topology_source: o.topology.describe(),
            topology: Some(topology.clone()),
            sweeps: o.sweeps,
            seed: o.seed,
            fast_fraction: o.fast,
            tested_ranks: ranks.clone(),
            pairs_per_sweep: schedule.pairs_per_sweep(),
            plan: None,
            pinned_hosts: Vec::new(),
        };
        let mut meta = self.simulated_meta(test, schedule_info, start);
        run.write_meta(&meta)?;

        let sweeps: Vec<u32> = (0..o.sweeps).collect();
        // Chunks of pairs in order; each is drawn and valued on every core while the
        // derivation takes the one before.
        let mut cursor = (0u32, 0usize, 1usize);
        let mut count = 0;
        let next_chunk = || -> Option<Vec<(u32, Pair)>> {
            let (sweep, a, b) = &mut cursor;
            if *sweep >= o.sweeps || ranks.len() < 2 {
                return None;
            }
            let mut chunk = Vec::with_capacity(CHUNK_PAIRS);
            while chunk.len() < CHUNK_PAIRS && *a + 1 < ranks.len() {
                chunk.push((*sweep, Pair::new(ranks[*a], ranks[*b])));
                *b += 1;
                if *b == ranks.len() {
                    *a += 1;
                    *b = *a + 1;
                }
            }
            if *a + 1 >= ranks.len() {
                (*sweep, *a, *b) = (*sweep + 1, 0, 1);
            }
            count += chunk.len();
            Some(chunk)
        };
        let mut files = derive_plogp(
            run,
            ranks.clone(),
            sweeps.clone(),
            &o.outputs,
            next_chunk,
            |&(sweep, pair): &(u32, Pair)| {
                Ok(MeasuredPair {
                    sweep,
                    pair,
                    measurement: self.measure(pair, sweep),
                })
            },
        )?;
        meta.status = RunStatus::Complete;
        meta.end = Some(end);
        // The times of the run a real measurement would have made (see `estimate`).
        meta.summary = Some(RunSummary {
            pairs_measured: count,
            pairs_total: count,
            wall_s: predicted.wall_s,
            testing_s: predicted.pair_tests_s.min(predicted.wall_s),
            overhead_share: 0.0,
            rank_time: Vec::new(),
            stages: Vec::new(),
            notes: Vec::new(),
        });
        let wall_s = started.elapsed().as_secs_f64();
        run.write_meta(&meta)?;
        files.insert(0, lgate_rundir::META_FILE.to_string());
        Ok(SimulationReport {
            pairs: count,
            files,
            wall_s,
        })
    }

    /// The `meta.json` of a simulated run as it starts: the true placement, no MPI, the
    /// simulation's record.
    pub(crate) fn simulated_meta(
        &self,
        test: TestInfo,
        schedule: ScheduleInfo,
        start: String,
    ) -> RunMeta {
        let o = self.options;
        RunMeta {
            mpi: lgate_rundir::MpiInfo {
                control_variables: Some(lgate_rundir::MpiSettings {
                    protocol: Some(
                        [(
                            "eager_limit".to_string(),
                            lgate_rundir::SettingValue::Integer(
                                i64::try_from(self.model.eager_limit_bytes).unwrap_or(i64::MAX),
                            ),
                        )]
                        .into_iter()
                        .collect(),
                    ),
                    total: Some(1),
                    ..Default::default()
                }),
                library_version: Some("none: simulated by lgate-plogp simulate".to_string()),
            },
            launcher: LauncherInfo {
                kind: "simulated".into(),
                command_line: None,
                environment: Default::default(),
            },
            simulation: Some(self.record()),
            hosts: self.hosts.clone(),
            ..RunMeta::started(
                o.tool.clone(),
                o.command_line.clone(),
                test,
                schedule,
                self.layout.rank_infos(),
                start,
            )
        }
    }

    /// What `meta.json` keeps of the simulation: the model and the artifacts drawn.
    pub(crate) fn record(&self) -> SimulationRecord {
        let mut rank_of = vec![0; self.layout.size()];
        for r in 0..self.layout.size() {
            rank_of[self.layout.slot(r)] = r;
        }
        let mut slow: Vec<Pair> = self
            .effects
            .slow_core_pairs()
            .map(|p| Pair::new(rank_of[p.i], rank_of[p.j]))
            .collect();
        slow.sort();
        let hosts = |nodes: &[usize]| -> Vec<String> {
            nodes.iter().map(|&n| self.layout.host_name(n)).collect()
        };
        SimulationRecord {
            model: self.model.clone(),
            machine: self.model.to_string(),
            reps: self.options.reps,
            artifacts: (self.model.artifacts.names().into_iter())
                .map(String::from)
                .collect(),
            band_offsets: self.effects.bands().to_vec(),
            slow_pairs: slow.iter().map(|p| [p.i, p.j]).collect(),
            slow_node: (self.effects.slow_nodes().first()).map(|&n| self.layout.host_name(n)),
            slow_nodes: hosts(self.effects.slow_nodes()),
            degraded: (self.effects.degraded.iter())
                .map(|(nodes, f)| DegradedRecord {
                    hosts: hosts(nodes),
                    factor: *f,
                })
                .collect(),
            slow_ranks: (self.effects.slow_ranks.iter())
                .filter(|r| r.1.is_none())
                .map(|&(rank, _, factor)| SlowRankRecord { rank, factor })
                .collect(),
            slow_rank_pairs: (self.effects.slow_ranks.iter())
                .filter_map(|&(rank, with, factor)| {
                    with.map(|w| SlowPairRecord {
                        ranks: [rank.min(w), rank.max(w)],
                        factor,
                    })
                })
                .collect(),
            rerun: self.options.rerun,
            times: SIMULATED_TIMES.into(),
        }
    }
}

/// How meta.json says a simulated run's times were made.
const SIMULATED_TIMES: &str =
    "simulated: start from SOURCE_DATE_EPOCH (or the Unix epoch), wall time as estimated for a real run";

/// The start and end of a simulated run: from `SOURCE_DATE_EPOCH` when set (the reproducible
/// builds convention), else the Unix epoch, and `wall_s` later; never the clock, so that the
/// same seed gives the same bytes.
pub(crate) fn simulated_times(wall_s: f64) -> (String, String) {
    let start = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let at = |s: u64| {
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s))
            .to_string()
    };
    let end = start.saturating_add(wall_s.ceil().min(1e15) as u64);
    (at(start), at(end))
}

/// SplitMix64: a well-mixed 64-bit value from any 64-bit value.
pub(crate) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
