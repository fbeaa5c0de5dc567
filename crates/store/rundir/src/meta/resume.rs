//! What a resume is checked against: where the ranks ran and the plan of the run, in words.

use std::collections::BTreeMap;

use super::{PlanInfo, RankInfo, RunMeta, TestInfo};

impl RunMeta {
    /// How the ranks of `other` (a resume) sit differently from this run's: the first rank on
    /// another host or with other CPUs to run on, and how many differ; `None` when all agree.
    pub fn placement_difference(&self, other: &RunMeta) -> Option<String> {
        let place = |r: &RankInfo| {
            format!(
                "on {} with CPUs {}",
                r.host,
                r.cpuset.as_deref().unwrap_or("unknown")
            )
        };
        let differ: Vec<(&RankInfo, &RankInfo)> = self
            .ranks
            .iter()
            .zip(&other.ranks)
            .filter(|(a, b)| a.host != b.host || a.cpuset != b.cpuset)
            .collect();
        let &(a, b) = differ.first()?;
        let more = match differ.len() {
            1 => String::new(),
            n => format!(" ({n} ranks differ)"),
        };
        Some(format!(
            "rank {} ran {} in the run, {} now{more}",
            a.rank,
            place(a),
            place(b)
        ))
    }

    /// Why a run with `other`'s plan cannot continue this one: each thing that differs.
    pub fn plan_differences(&self, other: &RunMeta) -> Vec<PlanDifference> {
        let mut out = Vec::new();
        let mut differ = |what: PlanItem, then: String, now: String| {
            if then != now {
                out.push(PlanDifference { what, then, now });
            }
        };
        differ(
            PlanItem::Ranks,
            self.ranks.len().to_string(),
            other.ranks.len().to_string(),
        );
        differ(
            PlanItem::Test,
            self.test.name().to_string(),
            other.test.name().to_string(),
        );
        if self.test.name() == other.test.name() {
            let text = |t: &TestInfo| -> BTreeMap<String, String> {
                (t.parameters().into_iter())
                    .map(|(k, v)| (k, v.to_string()))
                    .collect()
            };
            let (a, b) = (text(&self.test), text(&other.test));
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let value =
                    |m: &BTreeMap<String, String>| m.get(key).cloned().unwrap_or("none".into());
                differ(PlanItem::TestParameter(key.clone()), value(&a), value(&b));
            }
        }
        let (a, b) = (&self.schedule, &other.schedule);
        differ(PlanItem::Sweeps, a.sweeps.to_string(), b.sweeps.to_string());
        differ(PlanItem::Seed, a.seed.to_string(), b.seed.to_string());
        differ(
            PlanItem::Fast,
            format!("{:?}", a.fast_fraction),
            format!("{:?}", b.fast_fraction),
        );
        // A topology in words: its ranks are said above, and differ with them.
        if self.ranks.len() == other.ranks.len() && a.topology != b.topology {
            let (then, now) = (topology_words(&a.topology), topology_words(&b.topology));
            if then == now {
                differ(
                    PlanItem::Topology,
                    format!("{then} ({})", a.topology_source),
                    format!("other groups ({})", b.topology_source),
                );
            } else {
                differ(PlanItem::Topology, then, now);
            }
        }
        let plan = |p: &Option<PlanInfo>| {
            p.as_ref().map_or("full".to_string(), |p| {
                format!(
                    "{} ({}) screen {}",
                    p.name,
                    p.parameters,
                    p.screen.parameters_text()
                )
            })
        };
        differ(PlanItem::Plan, plan(&a.plan), plan(&b.plan));
        out
    }
}

/// What of a run's plan a resume changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanItem {
    /// The number of ranks.
    Ranks,
    /// The pair test (`plogp`, `pingpong`).
    Test,
    /// One of the pair test's parameters, by its field name in meta.json (`reps`, `or_wait`,
    /// `budget_s`, `adaptive`, `raw`, `sizes`, ...).
    TestParameter(String),
    /// The number of sweeps.
    Sweeps,
    /// The schedule's seed.
    Seed,
    /// The share of ranks of the fast mode.
    Fast,
    /// The topology the schedule was made for.
    Topology,
    /// The plan and its parameters.
    Plan,
}

impl std::fmt::Display for PlanItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanItem::Ranks => f.write_str("ranks"),
            PlanItem::Test => f.write_str("test"),
            PlanItem::TestParameter(key) => f.write_str(key),
            PlanItem::Sweeps => f.write_str("sweeps"),
            PlanItem::Seed => f.write_str("seed"),
            PlanItem::Fast => f.write_str("fast"),
            PlanItem::Topology => f.write_str("topology"),
            PlanItem::Plan => f.write_str("plan"),
        }
    }
}

/// One thing a resume's plan has otherwise than its run's: what, and its two values in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDifference {
    /// What differs.
    pub what: PlanItem,
    /// Its value in the run.
    pub then: String,
    /// Its value in the resume.
    pub now: String,
}

impl PlanDifference {
    /// `differences` in words, one after the other.
    pub fn joined(differences: &[PlanDifference]) -> String {
        let said: Vec<String> = differences.iter().map(ToString::to_string).collect();
        said.join("; ")
    }
}

impl std::fmt::Display for PlanDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} in the run, {} now",
            self.what, self.then, self.now
        )
    }
}

/// A topology as the schedule records it, in words: its levels and their groups.
fn topology_words(t: &Option<lgate_topology::Topology>) -> String {
    let levels: Vec<String> = (t.iter().flat_map(|t| t.levels()))
        .map(|l| format!("{} of {} groups", l.name, l.groups.len()))
        .collect();
    if levels.is_empty() {
        "no level above the ranks".into()
    } else {
        format!("levels {}", levels.join(", "))
    }
}
