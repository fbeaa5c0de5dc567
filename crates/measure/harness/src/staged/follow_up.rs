//! The pairs rank 0 chooses for stages 3-5 from the screening.

use super::*;

/// The most follow-up tests a staged plan runs per sweep, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowUpCounts {
    /// Screened pairs inside groups tested again alone.
    pub alone_inside: usize,
    /// Screened pairs between groups tested again alone.
    pub alone_between: usize,
    /// The most pairs the sweep retests alone: slow pairs and a usual pair beside each.
    pub retest_between: usize,
    /// Pairs inside groups given the full test.
    pub sample_inside: usize,
    /// Pairs between groups given the full test, the slowest among them.
    pub sample_between: usize,
}

impl FollowUpCounts {
    /// Tests of the stage alone.
    pub fn alone(&self) -> usize {
        self.alone_inside + self.alone_between + self.retest_between
    }

    /// Tests of the stage sample.
    pub fn sample(&self) -> usize {
        self.sample_inside + self.sample_between
    }
}

/// The pairs rank 0 chose for stages 3-5, the same on every rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    /// More pairs of groups whose samples disagree, and between the groups of a level in
    /// doubt, screened.
    pub refine: Vec<Pair>,
    /// What the levels in doubt were and what was added for them, for people.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doubts: Vec<String>,
    /// Pairs screened again alone.
    pub alone: Vec<Pair>,
    /// Pairs given the full test.
    pub sample: Vec<Pair>,
}

impl FollowUp {
    /// The tests of stages 3-5 in the order they run, per sweep.
    pub fn tests(&self) -> impl Iterator<Item = (Stage, Pair)> + '_ {
        self.refine
            .iter()
            .map(|&p| (Stage::Refine, p))
            .chain(self.alone.iter().map(|&p| (Stage::Alone, p)))
            .chain(self.sample.iter().map(|&p| (Stage::Sample, p)))
    }

    /// The ranks taking part in stages 3-5, ascending.
    pub fn members(&self) -> Vec<Rank> {
        let mut m: Vec<Rank> = self.tests().flat_map(|(_, p)| [p.i, p.j]).collect();
        m.sort_unstable();
        m.dedup();
        m
    }
}

/// The pairs rank 0 chooses for stages 3-5 from the screening of `plan`: more pairs for the
/// pairs of groups whose samples disagree (see [`refinement`]); for each kind of pair (inside
/// groups, between groups), `samples` pairs at evenly spread quantiles of its distances, and
/// the slowest pair between groups; `alone` pairs spread the same way over both kinds; and
/// the pairs that would decide the levels above the groups that `judge` finds in doubt (see
/// [`confirmation`]).
pub fn choose_follow_up(
    screened: &mut ScreenedValues,
    plan: &StagedPlan,
    judge: Option<&dyn lgate_topology::judge::LevelJudge>,
) -> FollowUp {
    let options = plan.options();
    let mut spread = |stage: Stage, count: usize| -> Vec<Pair> {
        let of_stage = screened.of_stage(stage);
        let n = of_stage.len();
        let positions: Vec<usize> = (0..count.min(n))
            .map(|k| ((2 * k + 1) * n / (2 * count)).min(n - 1))
            .collect();
        let mut unique = positions.clone();
        unique.dedup();
        let mut found = Vec::with_capacity(unique.len());
        select_at(of_stage, &unique, 0, &mut found);
        let mut out: Vec<Pair> = positions
            .iter()
            .filter_map(|p| found.iter().find(|f| f.0 == *p).map(|f| f.1.pair()))
            .collect();
        out.dedup();
        out
    };
    let mut sample = spread(Stage::Hosts, options.samples);
    sample.extend(spread(Stage::Between, options.samples));
    let mut alone = spread(Stage::Hosts, plan.follow_up_counts().alone_inside);
    alone.extend(spread(
        Stage::Between,
        plan.follow_up_counts().alone_between,
    ));
    if options.samples > 0 {
        // The slowest, of equal values the least pair.
        if let Some(slowest) = screened.between.iter().max_by(|a, b| {
            a.value
                .total_cmp(&b.value)
                .then((b.i, b.j).cmp(&(a.i, a.j)))
        }) {
            if !sample.contains(&slowest.pair()) {
                sample.push(slowest.pair());
            }
        }
    }
    if options.sweep {
        for p in sweep::retests(screened, plan) {
            if !alone.contains(&p) {
                alone.push(p);
            }
        }
    }
    let mut refine = refinement(screened, plan);
    let doubts = confirmation(screened, plan, judge, &mut refine);
    FollowUp {
        refine,
        doubts,
        alone,
        sample,
    }
}
