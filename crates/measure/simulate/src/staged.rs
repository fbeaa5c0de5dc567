//! A simulated staged run (`measure --plan staged` on a modelled machine): the screening tests
//! of the plan's stages drawn from the model, the follow-up chosen from them as rank 0 would,
//! the sample's PLogP measurements drawn as in a full run, and the same derivation a measured
//! staged run goes through (`write_staged_outputs`).
//!
//! No journal is held: the screening tests are drawn in chunks and gathered into the host
//! blocks as they come (stage 1 has g (g - 1) / 2 tests per host of g ranks and stage 2 K per
//! pair of hosts: 10 million at 128 000 ranks); rank 0's follow-up choice keeps one value per
//! test, as a measured run's does.

use std::time::Instant;

use lgate_derive::StagedScreening;
use lgate_harness::pair_test::{PingPongResult, RoundTrips};
use lgate_harness::{
    choose_follow_up, Pair, ScreenedPair, ScreenedValues, StagedPlan, StagedPlanOptions,
    StagedTest, Summary,
};
use lgate_rundir::{
    JournalEntry, PlanInfo, RunDir, RunStatus, RunSummary, ScheduleInfo, Stage, StageSummary,
    TestInfo,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Screening tests drawn at a time, on every core.
const CHUNK: usize = 1 << 16;

use crate::estimate::{estimate_staged, Estimate, ScreenTest};
use crate::generate::{scaled, simulated_times, Simulation};
use crate::options::{SimulateError, SimulationReport};
use crate::seed::splitmix;

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
        // The noise's seed: a rerun (the same machine measured again) draws other noise.
        let stream = splitmix(
            o.noise_seed()
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
        let (inside, between) = plan.screening_tests_per_sweep();
        let schedule_info = self.staged_schedule(staged, topology, (inside, between))?;
        let test = TestInfo::PLogP(self.plogp_options());
        let mut meta = self.simulated_meta(test, schedule_info, start);
        run.write_meta(&meta)?;

        // Stages 1-2 drawn in chunks on every core and gathered straight into the host blocks
        // (no journal is held: 10 million tests at 128 000 ranks), then the follow-up rank 0
        // would choose from their values.
        let mut sizes = staged.screen_sizes.clone();
        sizes.sort_unstable();
        sizes.dedup();
        let mut screening = StagedScreening::new(run, &meta, sizes.clone(), &o.outputs)?;
        screening.reserve_between(between * o.sweeps as usize);
        let mut counts = [0usize; Stage::ALL.len()];
        // One value a test, 16 bytes: reserved whole (doubling would hold up to twice that).
        let sweeps = o.sweeps as usize;
        let mut screened = ScreenedValues::with_capacity(inside * sweeps, between * sweeps);
        let screen = |stage, sweep, pair| {
            self.screen(pair, sweep, stage, &staged.screen_sizes, staged.screen_reps)
        };
        let mut tests = plan.screening_tests(o.sweeps);
        loop {
            let chunk: Vec<StagedTest> = tests.by_ref().take(CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let results: Vec<PingPongResult> = chunk
                .par_iter()
                .map(|t| screen(t.stage, t.test.sweep, t.test.pair))
                .collect();
            for (t, r) in chunk.iter().zip(&results) {
                counts[t.stage as usize] += 1;
                if let Some(s) = ScreenedPair::of(t.stage, t.test.pair, r) {
                    screened.push(s);
                }
                screening.add(t.stage, t.test.sweep, t.test.pair, &r.sizes);
            }
        }
        let follow_up = choose_follow_up(&mut screened, &plan, Some(&lgate_cluster::ScreenedJudge));
        let notes = follow_up.doubts.clone();
        drop(screened);
        let mut sampled = Vec::new();
        // The alone tests, and the side-by-side tests of the same pairs drawn again (each
        // test's draw is its own seeded stream), for the interference.
        let mut alone: Vec<Screened> = Vec::new();
        for sweep in 0..o.sweeps {
            for (stage, pair) in follow_up.tests() {
                counts[stage as usize] += 1;
                if stage == Stage::Sample {
                    let result = self.measure(pair, sweep).into();
                    sampled.push(JournalEntry {
                        sweep,
                        i: pair.i,
                        j: pair.j,
                        start_s: 0.0,
                        end_s: 0.0,
                        result,
                        stage: Some(stage),
                    });
                    continue;
                }
                let result = screen(stage, sweep, pair);
                screening.add(stage, sweep, pair, &result.sizes);
                if stage == Stage::Alone {
                    alone.push((stage, sweep, pair, result));
                }
            }
        }
        let wanted: std::collections::HashSet<(u32, Pair)> = alone
            .iter()
            .map(|(_, sweep, pair, _)| (*sweep, *pair))
            .collect();
        let side: Vec<Screened> = plan
            .screening_tests(o.sweeps)
            .filter(|t| matches!(t.stage, Stage::Hosts | Stage::Between))
            .filter(|t| wanted.contains(&(t.test.sweep, t.test.pair)))
            .map(|t| {
                let r = screen(t.stage, t.test.sweep, t.test.pair);
                (t.stage, t.test.sweep, t.test.pair, r)
            })
            .collect();
        let interference = lgate_derive::interference(
            alone
                .iter()
                .chain(&side)
                .map(|(stage, sweep, pair, r)| (*stage, *sweep, *pair, r.sizes.as_slice())),
        );
        let retested: Vec<(u32, Pair, Vec<RoundTrips>)> = (alone.iter())
            .map(|(_, sweep, pair, r)| (*sweep, *pair, r.sizes.clone()))
            .collect();
        let mut files =
            screening.finish(run, &meta, &sampled, interference, &retested, &o.outputs)?;
        let tests_run: usize = counts.iter().sum();
        meta.status = RunStatus::Complete;
        meta.end = Some(end);
        meta.summary = Some(staged_summary(&counts, &predicted, notes));
        run.write_meta(&meta)?;
        files.insert(0, lgate_rundir::META_FILE.to_string());
        Ok(SimulationReport {
            pairs: tests_run,
            files,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }
}

/// One screening test drawn: its stage, sweep, pair and result.
type Screened = (Stage, u32, Pair, PingPongResult);

impl Simulation<'_> {
    /// What meta.json records of a staged run's schedule: the plan, its screening test and the
    /// screening tests a sweep (`tests`: inside hosts, between them).
    fn staged_schedule(
        &self,
        staged: &StagedPlanOptions,
        topology: lgate_topology::Topology,
        (inside, between): (usize, usize),
    ) -> Result<ScheduleInfo, SimulateError> {
        let o = self.options();
        let screen_test = staged
            .screening_test()
            .map_err(|e| SimulateError::Options(e.to_string()))?;
        Ok(ScheduleInfo {
            topology_source: o.topology.describe(),
            topology: Some(topology),
            sweeps: o.sweeps,
            seed: o.seed,
            fast_fraction: None,
            tested_ranks: (0..self.layout().size()).collect(),
            pairs_per_sweep: inside + between,
            plan: Some(PlanInfo {
                name: "staged".into(),
                parameters: staged.plan.clone(),
                screen: lgate_harness::AnyPairTest::info(&screen_test),
                screening_tests: [inside, between],
                notes: Vec::new(),
            }),
            pinned_hosts: Vec::new(),
        })
    }
}

/// A simulated staged run's summary: the tests of each stage (`counts`), the predicted times.
fn staged_summary(counts: &[usize], predicted: &Estimate, notes: Vec<String>) -> RunSummary {
    let tests_run: usize = counts.iter().sum();
    RunSummary {
        pairs_measured: tests_run,
        pairs_total: tests_run,
        wall_s: predicted.wall_s,
        testing_s: predicted.pair_tests_s.min(predicted.wall_s),
        overhead_share: 0.0,
        rank_time: Vec::new(),
        notes,
        stages: Stage::ALL
            .iter()
            .zip(predicted.stage_wall_s)
            .map(|(&stage, wall_s)| StageSummary {
                stage,
                tests: counts[stage as usize],
                wall_s,
            })
            .filter(|s| s.tests > 0)
            .collect(),
    }
}
