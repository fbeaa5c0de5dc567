//! A simulated staged run (`measure --plan staged` on a modelled machine): the screening tests
//! of the plan's stages drawn from the model, the follow-up chosen from them as rank 0 would,
//! the sample's PLogP measurements drawn as in a full run, and the same derivation a measured
//! staged run goes through (`write_staged_outputs`).
//!
//! The journal is held in memory: stage 1 has g (g - 1) / 2 entries per host of g ranks and
//! stage 2 K per pair of hosts, about 100 000 entries at 4096 ranks.

use std::time::Instant;

use lgate_derive::write_staged_outputs;
use lgate_harness::pair_test::{PingPongResult, RoundTrips};
use lgate_harness::{
    choose_follow_up, Pair, ScreenedPair, StagedPlan, StagedPlanOptions, StagedTest, Summary,
};
use lgate_rundir::{
    JournalEntry, PlanInfo, RunDir, RunStatus, RunSummary, ScheduleInfo, Stage, StageSummary,
    TestInfo,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::estimate::{estimate_staged, Estimate, ScreenTest};
use crate::generate::{
    scaled, simulated_times, splitmix, SimulateError, Simulation, SimulationReport,
};

impl Simulation<'_> {
    /// One pair's screening result (round trips of m bytes each way at each of `sizes`,
    /// `reps` each) in one sweep and stage, drawn from its own seeded stream.
    pub fn screen(
        &self,
        pair: Pair,
        sweep: u32,
        stage: Stage,
        sizes: &[usize],
        reps: usize,
    ) -> PingPongResult {
        let o = self.options();
        let stream = splitmix(
            o.seed
                ^ 0x5343_5245_454e_0000
                ^ (stage as u64) << 56
                ^ splitmix(sweep as u64 ^ splitmix((pair.i as u64) << 32 | pair.j as u64)),
        );
        let mut rng = ChaCha8Rng::seed_from_u64(stream);
        let model = self.model();
        let level = self.layout().parting_level(pair.i, pair.j);
        let link = &model.links[&model.levels[level].name];
        let factor = self.effects().factor(model, self.layout(), pair);
        let sizes = sizes
            .iter()
            .enumerate()
            .map(|(k, &m)| {
                let p = link.at(m, model.eager_limit_bytes);
                let echo = 2.0 * link.latency_us + 2.0 * p.g;
                let samples = self.samples(&mut rng, echo, reps, model.noise.sigma, k == 0, true);
                RoundTrips {
                    size: m,
                    rtt: scaled(
                        &Summary::of(&samples).expect("at least one repetition"),
                        factor,
                    ),
                }
            })
            .collect();
        PingPongResult { sizes }
    }

    /// The staged plan a real run would follow on this machine, with `choices`.
    pub fn staged_plan(&self, staged: &StagedPlanOptions) -> Result<StagedPlan, SimulateError> {
        let (topology, _) = self.schedule()?;
        StagedPlan::new(
            topology.tree(),
            self.layout().size(),
            self.options().seed,
            &staged.plan,
        )
        .map_err(|e| SimulateError::Harness(e.into()))
    }

    /// The predicted time of a real staged run.
    pub fn estimate_staged(&self, staged: &StagedPlanOptions) -> Result<Estimate, SimulateError> {
        let plan = self.staged_plan(staged)?;
        Ok(estimate_staged(
            self.model(),
            self.layout(),
            &self.measure_options(),
            &ScreenTest {
                sizes: staged.screen_sizes.clone(),
                reps: staged.screen_reps,
            },
            &plan,
            self.options().sweeps,
        ))
    }

    /// Writes the run directory of a staged run.
    pub(crate) fn write_staged(
        &self,
        run: &RunDir,
        staged: &StagedPlanOptions,
    ) -> Result<SimulationReport, SimulateError> {
        let started = Instant::now();
        let o = self.options();
        let (topology, _) = self.schedule()?;
        let plan = self.staged_plan(staged)?;
        let predicted = self.estimate_staged(staged)?;
        let (start, end) = simulated_times(predicted.wall_s);
        let screen_test = staged
            .screening_test()
            .map_err(|e| SimulateError::Options(e.to_string()))?;
        let (inside, between) = plan.screening_tests_per_sweep();
        let plogp = self.plogp_options();
        let schedule_info = ScheduleInfo {
            topology_source: o.topology.describe(),
            topology: lgate_topology::json::to_value(&topology),
            sweeps: o.sweeps,
            seed: o.seed,
            fast_fraction: None,
            tested_ranks: (0..self.layout().size()).collect(),
            pairs_per_sweep: inside + between,
            plan: Some(PlanInfo {
                name: "staged".into(),
                parameters: serde_json::to_value(&staged.plan).expect("options serialise"),
                screen: TestInfo {
                    name: "pingpong".into(),
                    parameters: lgate_harness::PairTest::parameters(&screen_test),
                },
                screening_tests: [inside, between],
                notes: Vec::new(),
            }),
            pinned_hosts: Vec::new(),
        };
        let test = TestInfo {
            name: "plogp".into(),
            parameters: serde_json::to_value(&plogp).expect("options serialise"),
        };
        let mut meta = self.simulated_meta(test, schedule_info, start);
        run.write_meta(&meta)?;

        // Stages 1-2, then the follow-up rank 0 would choose from them.
        let tests: Vec<StagedTest> = plan.screening_tests(o.sweeps).collect();
        let entry =
            |stage: Stage, sweep: u32, pair: Pair, result: serde_json::Value| JournalEntry {
                sweep,
                i: pair.i,
                j: pair.j,
                start_s: 0.0,
                end_s: 0.0,
                result,
                stage: Some(stage),
            };
        let screen = |stage, sweep, pair| {
            serde_json::to_value(self.screen(
                pair,
                sweep,
                stage,
                &staged.screen_sizes,
                staged.screen_reps,
            ))
            .expect("results serialise")
        };
        let mut entries: Vec<JournalEntry> = tests
            .par_iter()
            .map(|t| {
                entry(
                    t.stage,
                    t.test.sweep,
                    t.test.pair,
                    screen(t.stage, t.test.sweep, t.test.pair),
                )
            })
            .collect();
        let screened: Vec<ScreenedPair> = entries
            .iter()
            .filter_map(|e| {
                Some(ScreenedPair {
                    stage: e.stage?,
                    pair: Pair::new(e.i, e.j),
                    value: lgate_harness::screening_value(&e.result)?,
                })
            })
            .collect();
        let follow_up = choose_follow_up(&screened, &plan);
        for sweep in 0..o.sweeps {
            for (stage, pair) in follow_up.tests() {
                let result = match stage {
                    Stage::Sample => {
                        serde_json::to_value(self.measure(pair, sweep)).expect("results serialise")
                    }
                    _ => screen(stage, sweep, pair),
                };
                entries.push(entry(stage, sweep, pair, result));
            }
        }
        let mut files = write_staged_outputs(run, &meta, &entries, &o.outputs)?;
        meta.status = RunStatus::Complete;
        meta.end = Some(end);
        meta.summary = Some(RunSummary {
            pairs_measured: entries.len(),
            pairs_total: entries.len(),
            wall_s: predicted.wall_s,
            testing_s: predicted.pair_tests_s.min(predicted.wall_s),
            overhead_share: 0.0,
            rank_time: Vec::new(),
            stages: Stage::ALL
                .iter()
                .zip(predicted.stage_wall_s)
                .map(|(&stage, wall_s)| StageSummary {
                    stage,
                    tests: entries.iter().filter(|e| e.stage == Some(stage)).count(),
                    wall_s,
                })
                .filter(|s| s.tests > 0)
                .collect(),
        });
        run.write_meta(&meta)?;
        files.insert(0, lgate_rundir::META_FILE.to_string());
        Ok(SimulationReport {
            pairs: entries.len(),
            files,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }
}
