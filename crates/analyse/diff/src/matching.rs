//! Which rank of one run stands for which rank of the other: the same host and CPU when every
//! rank was bound to one CPU in both runs, or the same host and local rank, whichever matches
//! more ranks (the CPU on a tie); the same rank number only when a run has no host names.

use std::collections::HashMap;

/// Where a rank ran, as far as matching needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPlace {
    /// The rank.
    pub rank: usize,
    /// Its host, when known.
    pub host: Option<String>,
    /// The one CPU it was bound to; `None` when it could run on several or is unknown.
    pub bound_cpu: Option<usize>,
}

/// What two ranks must share to be taken for the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedBy {
    /// Host name and the CPU the rank was bound to.
    HostAndCpu,
    /// Host name and the rank's position among its host's ranks.
    HostAndLocalRank,
    /// The rank number alone.
    Rank,
}

impl MatchedBy {
    /// How people read it.
    pub fn describe(self) -> &'static str {
        match self {
            MatchedBy::HostAndCpu => "host and CPU",
            MatchedBy::HostAndLocalRank => "host and local rank",
            MatchedBy::Rank => "rank number",
        }
    }
}

/// The ranks of run A and run B taken for the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankMatching {
    /// What matched them.
    pub by: MatchedBy,
    /// (rank in A, rank in B), in A's rank order.
    pub pairs: Vec<(usize, usize)>,
    /// Ranks of A without a match in B.
    pub only_a: Vec<usize>,
    /// Ranks of B without a match in A.
    pub only_b: Vec<usize>,
}

/// The key of each rank under `by`, or `None` when a rank lacks what it needs.
fn keys(places: &[RankPlace], by: MatchedBy) -> Option<Vec<String>> {
    let mut local: HashMap<&str, usize> = HashMap::new();
    let mut sorted: Vec<&RankPlace> = places.iter().collect();
    sorted.sort_by_key(|p| p.rank);
    let mut out: HashMap<usize, String> = HashMap::new();
    for p in sorted {
        let key = match by {
            MatchedBy::Rank => p.rank.to_string(),
            MatchedBy::HostAndCpu => format!("{}\u{0}{}", p.host.as_ref()?, p.bound_cpu?),
            MatchedBy::HostAndLocalRank => {
                let host = p.host.as_deref()?;
                let k = local.entry(host).or_insert(0);
                *k += 1;
                format!("{host}\u{0}{}", *k - 1)
            }
        };
        out.insert(p.rank, key);
    }
    Some(places.iter().map(|p| out[&p.rank].clone()).collect())
}

fn matching_by(a: &[RankPlace], b: &[RankPlace], by: MatchedBy) -> Option<RankMatching> {
    let (ka, kb) = (keys(a, by)?, keys(b, by)?);
    let unique = |k: &[String]| {
        let mut s: Vec<&String> = k.iter().collect();
        s.sort();
        s.windows(2).all(|w| w[0] != w[1])
    };
    if !unique(&ka) || !unique(&kb) {
        return None;
    }
    let in_b: HashMap<&str, usize> = kb
        .iter()
        .zip(b)
        .map(|(k, p)| (k.as_str(), p.rank))
        .collect();
    let mut pairs = Vec::new();
    let mut only_a = Vec::new();
    let mut used = std::collections::HashSet::new();
    for (k, p) in ka.iter().zip(a) {
        match in_b.get(k.as_str()) {
            Some(&r) => {
                pairs.push((p.rank, r));
                used.insert(r);
            }
            None => only_a.push(p.rank),
        }
    }
    pairs.sort_unstable();
    only_a.sort_unstable();
    let mut only_b: Vec<usize> = b
        .iter()
        .map(|p| p.rank)
        .filter(|r| !used.contains(r))
        .collect();
    only_b.sort_unstable();
    Some(RankMatching {
        by,
        pairs,
        only_a,
        only_b,
    })
}

/// Matches the ranks of two runs (see the module's documentation).
pub fn match_ranks(a: &[RankPlace], b: &[RankPlace]) -> RankMatching {
    let mut best: Option<RankMatching> = None;
    for by in [MatchedBy::HostAndCpu, MatchedBy::HostAndLocalRank] {
        if let Some(m) = matching_by(a, b, by) {
            if best.as_ref().is_none_or(|x| m.pairs.len() > x.pairs.len()) {
                best = Some(m);
            }
        }
    }
    best.or_else(|| matching_by(a, b, MatchedBy::Rank))
        .expect("rank numbers are unique keys")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(rank: usize, host: &str, cpu: Option<usize>) -> RankPlace {
        RankPlace {
            rank,
            host: Some(host.into()),
            bound_cpu: cpu,
        }
    }

    #[test]
    fn bound_ranks_match_by_host_and_cpu_whatever_their_numbers() {
        let a = vec![
            place(0, "n0", Some(0)),
            place(1, "n0", Some(1)),
            place(2, "n1", Some(0)),
        ];
        let b = vec![
            place(0, "n1", Some(0)),
            place(1, "n0", Some(1)),
            place(2, "n0", Some(0)),
        ];
        let m = match_ranks(&a, &b);
        assert_eq!(m.by, MatchedBy::HostAndCpu);
        assert_eq!(m.pairs, vec![(0, 2), (1, 1), (2, 0)]);
        assert!(m.only_a.is_empty() && m.only_b.is_empty());
    }

    #[test]
    fn unbound_ranks_match_by_host_and_local_rank() {
        let a = vec![
            place(0, "n0", None),
            place(1, "n1", None),
            place(2, "n0", None),
        ];
        let b = vec![
            place(0, "n1", None),
            place(1, "n0", None),
            place(2, "n0", None),
        ];
        let m = match_ranks(&a, &b);
        assert_eq!(m.by, MatchedBy::HostAndLocalRank);
        assert_eq!(m.pairs, vec![(0, 1), (1, 0), (2, 2)]);
    }

    #[test]
    fn ranks_on_other_hosts_are_listed_unmatched() {
        let a = vec![place(0, "n0", None), place(1, "n1", None)];
        let b = vec![
            place(0, "n0", None),
            place(1, "n2", None),
            place(2, "n2", None),
        ];
        let m = match_ranks(&a, &b);
        assert_eq!(m.by, MatchedBy::HostAndLocalRank);
        assert_eq!(m.pairs, vec![(0, 0)]);
        assert_eq!(m.only_a, vec![1]);
        assert_eq!(m.only_b, vec![1, 2]);
    }

    #[test]
    fn without_host_names_ranks_match_by_number() {
        let a: Vec<RankPlace> = (0..3)
            .map(|rank| RankPlace {
                rank,
                host: None,
                bound_cpu: None,
            })
            .collect();
        let m = match_ranks(&a, &a[..2]);
        assert_eq!(m.by, MatchedBy::Rank);
        assert_eq!(m.pairs, vec![(0, 0), (1, 1)]);
        assert_eq!(m.only_a, vec![2]);
    }

    #[test]
    fn shared_cpus_fall_back_to_local_ranks() {
        // Two ranks started on one CPU: host and CPU is no key.
        let a = vec![place(0, "n0", Some(1)), place(1, "n0", Some(1))];
        let b = vec![place(0, "n0", Some(0)), place(1, "n0", Some(1))];
        let m = match_ranks(&a, &b);
        assert_eq!(m.by, MatchedBy::HostAndLocalRank);
        assert_eq!(m.pairs, vec![(0, 0), (1, 1)]);
    }
}
