//! Simulated measurements: every repetition of every PLogP procedure drawn from the model,
//! summarised with the same statistics a real run uses, and written as the same run directory.

use std::collections::HashSet;
use std::time::Instant;

use lgate_harness::{Pair, Schedule, Summary, TopologySource};
use lgate_plogp_bench::procedures::{Saturation, SizeResult};
use lgate_plogp_bench::{
    OutputBuilder, OutputError, OutputOptions, PLogPOptions, PairMeasurement, PairParams,
    PairValues,
};
use lgate_rundir::{
    LauncherInfo, RunDir, RunDirError, RunMeta, RunStatus, RunSummary, ScheduleInfo, SystemInfo,
    TestInfo, RUN_FORMAT, RUN_VERSION,
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
}

impl SimulateOptions {
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
        }
    }
}

/// An error of simulating.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The options do not fit the model.
    #[error("{0}")]
    Options(String),
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

/// The seeded, fixed choices of a simulation: which pairs and node are slow.
#[derive(Debug, Clone)]
pub struct Effects {
    bands: Vec<usize>,
    slow_pairs: HashSet<Pair>,
    slow_node: Option<usize>,
}

impl Effects {
    /// Draws the bands, slow pairs and slow node of `model` from `seed`.
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
        let slow_node = a.slow_node.map(|s| {
            s.node
                .unwrap_or_else(|| rng.random_range(0..model.node_count()))
        });
        Effects {
            bands,
            slow_pairs,
            slow_node,
        }
    }

    /// The node made slow, if any.
    pub fn slow_node(&self) -> Option<usize> {
        self.slow_node
    }

    /// The slow pairs drawn.
    pub fn slow_pairs(&self) -> impl Iterator<Item = Pair> + '_ {
        self.slow_pairs.iter().copied()
    }

    /// The band offsets drawn.
    pub fn bands(&self) -> &[usize] {
        &self.bands
    }

    /// How much slower than its link every measurement of `pair` is.
    fn factor(&self, model: &MachineModel, layout: &Layout, pair: Pair) -> f64 {
        let a = &model.artifacts;
        let mut f = 1.0;
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
            if self.slow_pairs.contains(&pair) {
                f *= s.factor;
            }
        }
        if let (Some(s), Some(node)) = (a.slow_node, self.slow_node) {
            if layout.node_of(pair.i) == node || layout.node_of(pair.j) == node {
                f *= s.factor;
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
}

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
        if options.reps == 0 {
            return bad("--reps must be at least 1".into());
        }
        if options.sweeps == 0 {
            return bad("--sweeps must be at least 1".into());
        }
        let max = *options.sizes.last().expect("size 0 at least");
        if let Some(s) = options.outputs.matrix_sizes.iter().find(|s| s.0 > max) {
            return bad(format!(
                "matrix size {s} is above the largest simulated size ({}); lower --matrix-sizes or raise --max-size",
                lgate_plogp_bench::MessageSize(max)
            ));
        }
        let layout = Layout::new(model, options.seed);
        let effects = Effects::new(model, &layout, options.seed);
        Ok(Simulation {
            model,
            layout,
            effects,
            options,
        })
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
            o.seed ^ splitmix(sweep as u64 ^ splitmix((pair.i as u64) << 32 | pair.j as u64)),
        );
        let mut rng = ChaCha8Rng::seed_from_u64(stream);
        let a = &self.model.artifacts;
        let sigma = self.model.noise.sigma;
        let factor = self.effects.factor(self.model, &self.layout, pair);
        let saturation_max = PLogPOptions::new(0).saturation_max_size;
        let mut buf = vec![0.0; o.reps];
        let mut series =
            |rng: &mut ChaCha8Rng, truth: f64, first: bool, reps: usize, noise: f64| {
                buf.resize(reps, 0.0);
                for (k, x) in buf.iter_mut().enumerate() {
                    let mut v = truth * factor;
                    if noise > 0.0 {
                        let z: f64 = rng.sample(StandardNormal);
                        v *= (noise * z).exp();
                    }
                    if let Some(s) = a.spikes {
                        if rng.random::<f64>() < s.rate {
                            v *= s.factor;
                        }
                    }
                    if let Some(w) = a.warmup {
                        if first && k < w.samples {
                            v *= w.factor - (w.factor - 1.0) * k as f64 / w.samples as f64;
                        }
                    }
                    *x = v * S_PER_US;
                }
                buf.clone()
            };
        let sizes = o
            .sizes
            .iter()
            .enumerate()
            .map(|(k, &m)| {
                let t = self.link(pair, m);
                let first = k == 0;
                let rtt = series(&mut rng, t.rtt, first, o.reps, sigma);
                let os = series(&mut rng, t.os, first, o.reps, sigma);
                let or = series(&mut rng, t.or, first, o.reps, sigma);
                let g = (m <= saturation_max).then(|| {
                    // A saturated batch averages many messages: little noise is left.
                    let samples = series(&mut rng, t.g, false, 4, sigma / 8.0);
                    Saturation {
                        gap: Summary::of_steady(&samples).expect("samples"),
                        messages: 1000,
                        converged: true,
                    }
                });
                SizeResult {
                    size: m,
                    rtt: Summary::of(&rtt).expect("samples"),
                    os: Summary::of(&os).expect("samples"),
                    or: Summary::of(&or).expect("samples"),
                    g,
                    adaptive: false,
                    raw: None,
                }
            })
            .collect();
        PairMeasurement {
            clock_overhead_s: 0.0,
            sizes,
        }
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
        let started = Instant::now();
        let (topology, schedule) = self.schedule()?;
        let predicted = crate::estimate::estimate(self, &schedule, self.options.sweeps);
        let (start, end) = simulated_times(predicted.wall_s);
        let ranks = schedule.tested_ranks();
        let o = self.options;
        let mut meta = RunMeta {
            format: RUN_FORMAT.into(),
            version: RUN_VERSION,
            tool: o.tool.clone(),
            status: RunStatus::Running,
            command_line: o.command_line.clone(),
            test: TestInfo {
                name: "plogp".into(),
                parameters: serde_json::to_value(self.plogp_options()).expect("options serialise"),
            },
            schedule: ScheduleInfo {
                topology_source: match &o.topology {
                    TopologySource::None => "none".into(),
                    TopologySource::Auto => "auto".into(),
                    TopologySource::File(p) => p.display().to_string(),
                },
                topology: serde_json::from_str(&lgate_topology::format::to_string(
                    &topology,
                    lgate_topology::TopologyFormat::Json,
                ))
                .expect("topology JSON parses"),
                sweeps: o.sweeps,
                seed: o.seed,
                fast_fraction: o.fast,
                tested_ranks: ranks.clone(),
                pairs_per_sweep: schedule.pairs_per_sweep(),
            },
            ranks: self.layout.rank_infos(),
            mpi: [
                ("library_version".to_string(), serde_json::Value::from("none: simulated by lgate-plogp simulate")),
                (
                    "control_variables".to_string(),
                    serde_json::json!({"total": 1, "protocol": {"eager_limit": self.model.eager_limit_bytes}}),
                ),
            ]
            .into_iter()
            .collect(),
            launcher: LauncherInfo {
                kind: "simulated".into(),
                command_line: None,
                environment: Default::default(),
            },
            system: SystemInfo::default(),
            start,
            end: None,
            summary: None,
            simulation: Some(self.record()),
        };
        run.write_meta(&meta)?;

        let sweeps: Vec<u32> = (0..o.sweeps).collect();
        let mut outputs = OutputBuilder::new(run, ranks.clone(), sweeps.clone(), &o.outputs)?;
        let mut count = 0;
        for &sweep in &sweeps {
            let mut a = 0;
            let mut b = 1;
            while a + 1 < ranks.len() {
                // The next chunk of pairs (a, b), a < b, in order.
                let mut chunk = Vec::with_capacity(CHUNK_PAIRS);
                while chunk.len() < CHUNK_PAIRS && a + 1 < ranks.len() {
                    chunk.push(Pair::new(ranks[a], ranks[b]));
                    b += 1;
                    if b == ranks.len() {
                        a += 1;
                        b = a + 1;
                    }
                }
                let params: Vec<(PairParams, PairValues)> = chunk
                    .par_iter()
                    .map(|&pair| {
                        let p =
                            PairParams::from_measurement(sweep, pair, &self.measure(pair, sweep))
                                .expect("simulated measurements have size 0 and ascend");
                        let v = outputs.values_of(&p)?;
                        Ok((p, v))
                    })
                    .collect::<Result<_, OutputError>>()?;
                count += params.len();
                for (p, v) in params {
                    outputs.add_values(&p, v)?;
                }
            }
        }
        let mut files = outputs.finish()?;
        meta.status = RunStatus::Complete;
        meta.end = Some(end);
        // The times of the run a real measurement would have made (see `estimate`).
        meta.summary = Some(RunSummary {
            pairs_measured: count,
            pairs_total: count,
            wall_s: predicted.wall_s,
            testing_s: predicted.pair_tests_s.min(predicted.wall_s),
            overhead_share: 0.0,
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

    /// What `meta.json` keeps of the simulation: the model and the artifacts drawn.
    fn record(&self) -> serde_json::Value {
        let mut slow: Vec<Pair> = self.effects.slow_pairs().collect();
        slow.sort();
        serde_json::json!({
            "model": self.model,
            "machine": self.model.to_string(),
            "reps": self.options.reps,
            "artifacts": self.model.artifacts.names(),
            "band_offsets": self.effects.bands(),
            "slow_pairs": slow.iter().map(|p| [p.i, p.j]).collect::<Vec<_>>(),
            "slow_node": self.effects.slow_node().map(|n| self.layout.host_name(n)),
            "times": "simulated: start from SOURCE_DATE_EPOCH (or the Unix epoch), wall time as estimated for a real run",
        })
    }
}

/// The start and end of a simulated run: from `SOURCE_DATE_EPOCH` when set (the reproducible
/// builds convention), else the Unix epoch, and `wall_s` later; never the clock, so that the
/// same seed gives the same bytes.
fn simulated_times(wall_s: f64) -> (String, String) {
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
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
