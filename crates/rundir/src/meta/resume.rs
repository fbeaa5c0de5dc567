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

    /// Why a run with `other`'s plan cannot continue this one, if it cannot.
    pub fn plan_differences(&self, other: &RunMeta) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what}: {a} in the run, {b} now"));
            }
        };
        differ(
            "ranks",
            self.ranks.len().to_string(),
            other.ranks.len().to_string(),
        );
        differ(
            "test",
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
                differ(&parameter_name(key), value(&a), value(&b));
            }
        }
        let (a, b) = (&self.schedule, &other.schedule);
        differ("sweeps", a.sweeps.to_string(), b.sweeps.to_string());
        differ("seed", a.seed.to_string(), b.seed.to_string());
        differ(
            "fast",
            format!("{:?}", a.fast_fraction),
            format!("{:?}", b.fast_fraction),
        );
        // A topology in words: its ranks are said above, and differ with them.
        if self.ranks.len() == other.ranks.len() && a.topology != b.topology {
            let (then, now) = (topology_words(&a.topology), topology_words(&b.topology));
            if then == now {
                differ(
                    "topology",
                    format!("{then} ({})", a.topology_source),
                    format!("other groups ({})", b.topology_source),
                );
            } else {
                differ("topology", then, now);
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
        differ("plan", plan(&a.plan), plan(&b.plan));
        out
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

/// A pair test parameter as `measure` sets it: the flag's name where one sets it alone.
fn parameter_name(key: &str) -> String {
    let flag = match key {
        "reps" => "--reps",
        "or_wait" => "--or-wait",
        "budget_s" => "--pair-budget",
        "adaptive" => "--no-adaptive",
        "raw" => "--raw",
        "sizes" => "--max-size or --sizes",
        _ => return format!("test parameter {key}"),
    };
    format!("{key} ({flag})")
}
