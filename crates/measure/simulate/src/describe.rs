//! What `simulate` says of a simulated machine and of how long a real `measure` on it would
//! take (`--estimate-time`).

use lgate_harness::{human_duration, TopologySource};
use lgate_knobs::Knob;
use lgate_rundir::MessageSize;

use crate::{SimulateError, Simulation};

impl Simulation<'_> {
    /// The machine and the measurement as one line: `fram (switch=2,..., 256 ranks, block
    /// placement, R = 32, 22 sizes from 0 to 2MiB)`.
    pub fn describe(&self) -> String {
        let (model, options) = (self.model(), self.options());
        format!(
            "{} ({model}, {} ranks, {} placement, R = {}, {} sizes from 0 to {})",
            model.name,
            model.ranks(),
            model.placement.name(),
            options.reps,
            options.sizes.len(),
            MessageSize(options.sizes.last().copied().unwrap_or(0))
        )
    }

    /// How long a real `measure` with these options would take on the machine, stage by
    /// stage for the staged plan, as `simulate --estimate-time` prints it.
    pub fn estimate_text(&self) -> Result<String, SimulateError> {
        let describe = self.describe();
        let options = self.options();
        let topology = topology_name(&options.topology);
        let Some(staged) = &options.plan else {
            let (_, schedule) = self.schedule()?;
            let e = crate::estimate(
                self.model(),
                self.layout(),
                &self.measure_options(),
                &schedule,
                options.sweeps,
            );
            return Ok(format!(
                "machine: {describe}\n\
                 plan: full, schedule: {topology}, {} sweep(s)\n\
                 pair tests: {}, {} on average, {} one after the other\n\
                 estimated wall time: {} ({:.1} pair tests at a time)\n",
                options.sweeps,
                e.pairs,
                human_duration(e.pair_tests_s / e.pairs.max(1) as f64),
                human_duration(e.pair_tests_s),
                human_duration(e.wall_s),
                e.concurrency
            ));
        };
        let e = self.estimate_staged(staged)?;
        let plan = self.staged_plan(staged)?;
        let (inside, between) = plan.screening_tests_per_sweep();
        let counts = plan.follow_up_counts();
        Ok(format!(
            "machine: {describe}\n\
             plan: staged, {} group(s) ({topology}), {} sweep(s)\n\
             stage hosts:   {inside} screening tests, every group at once: {}\n\
             stage between: {between} screening tests in {} rounds: {}\n\
             stage alone:   {} screening tests one at a time: {}\n\
             stage sample:  {} full PLogP tests one at a time: {}\n\
             pair tests: {}, {} one after the other\n\
             estimated wall time: {} ({:.1} pair tests at a time)\n",
            plan.groups().len(),
            options.sweeps,
            human_duration(e.stage_wall_s[0]),
            plan.between_rounds(),
            human_duration(e.stage_wall_s[1]),
            counts.alone(),
            human_duration(e.stage_wall_s[3]),
            counts.sample(),
            human_duration(e.stage_wall_s[4]),
            e.pairs,
            human_duration(e.pair_tests_s),
            human_duration(e.wall_s),
            e.concurrency
        ))
    }
}

/// The schedule's topology as the estimate names it.
fn topology_name(topology: &TopologySource) -> String {
    match topology {
        TopologySource::None => format!("one pair at a time (no {})", Knob::SimulateTopology),
        TopologySource::Auto => format!("one group per host ({} auto)", Knob::SimulateTopology),
        TopologySource::File(p) => format!("topology {}", p.display()),
    }
}
