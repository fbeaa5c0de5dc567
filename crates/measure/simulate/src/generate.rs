//! Simulated measurements: every repetition of every PLogP procedure drawn from the model,
//! summarised with the same statistics a real run uses, and written as the same run directory.

use lgate_knobs::Knob;
use std::time::Instant;

use lgate_derive::{derive_plogp, MeasuredPair};
use lgate_harness::{Pair, Schedule, Summary};
use lgate_plogp_bench::PLogPOptions;
use lgate_rundir::{
    DegradedRecord, PairMeasurement, Saturation, SimulationRecord, SizeResult, SlowPairRecord,
    SlowRankRecord,
};
use lgate_rundir::{LauncherInfo, RunDir, RunMeta, RunStatus, RunSummary, ScheduleInfo, TestInfo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

use crate::effects::Effects;
use crate::layout::Layout;
use crate::model::{MachineModel, TrueParams};
use crate::options::{SimulateError, SimulateOptions, SimulationReport};
use crate::seed::splitmix;

/// Seconds per microsecond.
const S_PER_US: f64 = 1e-6;
/// Pairs generated in parallel before they are handed to the outputs in order.
const CHUNK_PAIRS: usize = 1 << 15;

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
                "matrix size {s} is above the largest simulated size ({}); lower {} or raise {}",
                lgate_rundir::MessageSize(max),
                Knob::MatrixSizes,
                Knob::MaxSize
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
        let mut effects = effects;
        effects.add_changes(options, &layout, &mut hosts)?;
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
