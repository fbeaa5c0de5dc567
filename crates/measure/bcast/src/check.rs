//! Checking every broadcast: each plan, from every root, at each size; every rank compares its
//! buffer with the root's bytes, and rank 0 learns every rank's verdict.

use lgate_topology::TopologyNode;
use lgate_transport::{SleepingReceives, Transport};

use crate::bench::{default_candidates, payload};
use crate::share::{gather_verdicts, ShareError};
use crate::{broadcast, BaseAlgorithm, Candidate, Plan};

/// What a check found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The plans checked.
    pub plans: usize,
    /// The ranks, each also a root.
    pub ranks: usize,
    /// The sizes checked.
    pub sizes: usize,
    /// On rank 0: every broadcast that left a rank with other bytes than the root's, as
    /// `rank R: PLAN from root X at N bytes`; empty elsewhere.
    pub wrong: Vec<String>,
}

/// The plans a check runs: every default candidate over `tree`, and every base algorithm both
/// inside the groups and between their coordinators.
pub fn check_plans(tree: Option<&TopologyNode>, segments: &[usize]) -> Vec<Plan> {
    default_candidates(tree, segments)
        .into_iter()
        .chain(BaseAlgorithm::all(segments).into_iter().flat_map(|a| {
            tree.into_iter().map(move |tree| {
                Candidate::Plan(Plan::Magpie {
                    tree: tree.clone(),
                    between: a,
                    inside: a,
                })
            })
        }))
        .filter_map(|c| match c {
            Candidate::Plan(p) => Some(p),
            Candidate::Library => None,
        })
        .collect()
}

/// Runs every plan of [`check_plans`] from every root at every size on every rank.
pub fn check_all(
    t: &dyn Transport,
    tree: Option<&TopologyNode>,
    sizes: &[usize],
    segments: &[usize],
) -> Result<CheckReport, ShareError> {
    let plans = check_plans(tree, segments);
    // Untimed: ranks waiting for their turn sleep, so that the ones sending have the cores
    // (8 ranks on 2 cores under MPICH spun past 10 minutes in one check).
    let sleeping = SleepingReceives::new(t);
    let mut wrong = Vec::new();
    for plan in &plans {
        for root in 0..t.size() {
            for &len in sizes {
                let mut buf = if t.rank() == root {
                    payload(root, len)
                } else {
                    vec![0xee; len]
                };
                broadcast(&sleeping, &mut buf, root, plan)?;
                if buf != payload(root, len) {
                    wrong.push(format!("{} from root {root} at {len} bytes", plan.name()));
                }
            }
        }
    }
    Ok(CheckReport {
        plans: plans.len(),
        ranks: t.size(),
        sizes: sizes.len(),
        wrong: gather_verdicts(t, &wrong)?,
    })
}

impl CheckReport {
    /// The line a person reads: every plan passed, or the broadcasts that failed.
    pub fn verdict(&self) -> Result<String, crate::share::ShareError> {
        if self.wrong.is_empty() {
            Ok(format!(
                "{} broadcasts x {} roots x {} sizes on {} ranks: every rank held the root's bytes",
                self.plans, self.ranks, self.sizes, self.ranks
            ))
        } else {
            Err(crate::share::ShareError::Invalid(format!(
                "wrong bytes: {}",
                self.wrong.join("; ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use lgate_topology::TopologyNode;
    use lgate_transport::InProcessWorld;

    use super::*;

    #[test]
    fn every_plan_from_every_root_delivers_the_roots_bytes() {
        let tree = TopologyNode::cluster(vec![
            TopologyNode::group(vec![0, 2, 4]),
            TopologyNode::group(vec![1, 3]),
        ]);
        let reports = InProcessWorld::new(5)
            .run(|t| check_all(&t, Some(&tree), &[0, 7, 1000], &[3, 64]).unwrap());
        assert!(reports[0].plans > 10, "{}", reports[0].plans);
        for r in &reports {
            assert!(r.wrong.is_empty(), "{:?}", r.wrong);
        }
        let verdict = reports[0].verdict().unwrap();
        assert!(
            verdict.contains("x 5 roots x 3 sizes on 5 ranks"),
            "{verdict}"
        );
    }
}
