//! Checks of a topology tree and of levels: ranks listed once, sizes within bounds, levels
//! that nest and say something.

use super::*;

pub(super) fn validate_tree(
    tree: &TopologyNode,
    ranks: Option<usize>,
) -> Result<(), TopologyError> {
    check_rank_count(ranks)?;
    // One bit a rank: listed already. A repeated rank is rare, so where it was listed first is
    // looked up again only then.
    let mut seen: Vec<u64> = Vec::new();
    validate_node(tree, &mut || "tree".to_string(), ranks, &mut seen, tree)
}

/// Refuses a rank count of 0, or past [`MAX_RANKS`] before anything of that size is allocated.
pub(crate) fn check_rank_count(ranks: Option<usize>) -> Result<(), TopologyError> {
    match ranks {
        Some(0) => Err(TopologyError::at(
            Location::Path("ranks".into()),
            Problem::NoRanks,
        )),
        Some(n) if n > MAX_RANKS => Err(TopologyError::at(
            Location::Path("ranks".into()),
            Problem::TooManyRanks {
                what: "rank count",
                value: n.to_string(),
                limit: MAX_RANKS,
            },
        )),
        _ => Ok(()),
    }
}

/// Refuses a topology whose ranks times levels pass [`MAX_RANK_LEVELS`].
pub(super) fn check_size(ranks: usize, levels: usize, path: &str) -> Result<(), TopologyError> {
    if ranks.saturating_mul(levels) > MAX_RANK_LEVELS {
        return Err(TopologyError::at(
            Location::Path(path.into()),
            Problem::TooLarge {
                ranks,
                levels,
                limit: MAX_RANK_LEVELS,
            },
        ));
    }
    Ok(())
}

/// Refuses a topology whose left-out ranks, times the levels they fill, pass
/// [`MAX_UNLISTED_RANK_LEVELS`].
pub(super) fn check_unlisted(
    unlisted: usize,
    ranks: usize,
    levels: usize,
    path: &str,
) -> Result<(), TopologyError> {
    if unlisted.saturating_mul(levels) > MAX_UNLISTED_RANK_LEVELS {
        return Err(TopologyError::at(
            Location::Path(path.into()),
            Problem::TooManyUnlisted {
                unlisted,
                ranks,
                levels,
                limit: MAX_UNLISTED_RANK_LEVELS,
            },
        ));
    }
    Ok(())
}

/// The path of the first place `rank` is listed in `tree`.
fn first_place(node: &TopologyNode, path: String, rank: Rank) -> Option<String> {
    match node {
        TopologyNode::Cluster { children, .. } => children
            .iter()
            .enumerate()
            .find_map(|(i, c)| first_place(c, format!("{path}.children[{i}]"), rank)),
        TopologyNode::Group { ranks, .. } => ranks
            .iter()
            .position(|&r| r == rank)
            .map(|i| format!("{path}.ranks[{i}]")),
    }
}

fn validate_node(
    node: &TopologyNode,
    path: &mut dyn FnMut() -> String,
    count: Option<usize>,
    seen: &mut Vec<u64>,
    root: &TopologyNode,
) -> Result<(), TopologyError> {
    let fail = |path: String, problem| Err(TopologyError::at(Location::Path(path), problem));
    if let Some(h) = node.height() {
        if !h.is_finite() {
            return fail(format!("{}.height", path()), Problem::NonFiniteHeight(h));
        }
    }
    match node {
        TopologyNode::Cluster { children, .. } => {
            if children.is_empty() {
                return fail(path(), Problem::EmptyCluster);
            }
            for (i, child) in children.iter().enumerate() {
                let mut here = || format!("{}.children[{i}]", path());
                validate_node(child, &mut here, count, seen, root)?;
            }
        }
        TopologyNode::Group { ranks, .. } => {
            if ranks.is_empty() {
                return fail(path(), Problem::EmptyGroup);
            }
            // Bounds once a group, then one bit test a rank: a group of a million ranks is
            // read in a few passes (the fuzzer's instrumentation times every comparison).
            let here =
                |i: usize, path: &mut dyn FnMut() -> String| format!("{}.ranks[{i}]", path());
            let limit = count.unwrap_or(MAX_RANKS);
            let largest = ranks.iter().copied().max().unwrap_or(0);
            if largest >= limit {
                let (i, rank) = ranks
                    .iter()
                    .copied()
                    .enumerate()
                    .find(|&(_, r)| r >= limit)
                    .unwrap_or((0, largest));
                let problem = match count {
                    Some(n) => Problem::RankOutOfRange { rank, ranks: n },
                    None => Problem::TooManyRanks {
                        what: "rank",
                        value: rank.to_string(),
                        limit: MAX_RANKS,
                    },
                };
                return fail(here(i, path), problem);
            }
            if seen.len() <= largest / 64 {
                seen.resize(largest / 64 + 1, 0);
            }
            for (i, &rank) in ranks.iter().enumerate() {
                let (word, bit) = (rank / 64, 1u64 << (rank % 64));
                if seen[word] & bit != 0 {
                    let first = first_place(root, "tree".into(), rank).unwrap_or_default();
                    let first = Location::Path(first);
                    return fail(here(i, path), Problem::DuplicateRank { rank, first });
                }
                seen[word] |= bit;
            }
        }
    }
    Ok(())
}

/// Checks levels are partitions that nest, fills in singletons and sorts ranks inside groups.
pub(super) fn validate_levels(
    ranks: usize,
    levels: Vec<Level>,
) -> Result<Vec<Level>, TopologyError> {
    check_rank_count(Some(ranks))?;
    let mut out: Vec<Level> = Vec::with_capacity(levels.len());
    for (i, mut level) in levels.into_iter().enumerate() {
        let mut seen: Vec<Option<usize>> = vec![None; ranks];
        for (g, group) in level.groups.iter_mut().enumerate() {
            let at = |p: String| Location::Path(p);
            if group.is_empty() {
                return Err(TopologyError::at(
                    at(format!("levels[{i}].groups[{g}]")),
                    Problem::EmptyGroup,
                ));
            }
            for (k, &rank) in group.iter().enumerate() {
                let here = at(format!("levels[{i}].groups[{g}][{k}]"));
                if rank >= ranks {
                    return Err(TopologyError::at(
                        here,
                        Problem::RankOutOfRange { rank, ranks },
                    ));
                }
                if let Some(first) = seen[rank] {
                    let first = at(format!("levels[{i}].groups[{first}]"));
                    return Err(TopologyError::at(
                        here,
                        Problem::DuplicateRank { rank, first },
                    ));
                }
                seen[rank] = Some(g);
            }
            group.sort_unstable();
        }
        for (rank, s) in seen.iter().enumerate() {
            if s.is_none() {
                level.groups.push(vec![rank]);
            }
        }
        if let Some(s) = level.separation {
            if !s.is_finite() {
                return Err(TopologyError::at(
                    Location::Path(format!("levels[{i}].separation")),
                    Problem::NonFiniteHeight(s),
                ));
            }
        }
        let here = Location::Path(format!("levels[{i}]"));
        if level.groups.len() == 1 {
            return Err(TopologyError::at(here, Problem::TrivialLevel(level.name)));
        }
        if let Some(coarser) = out.last() {
            let labels = coarser.labels(ranks);
            for group in &level.groups {
                if group.iter().any(|&r| labels[r] != labels[group[0]]) {
                    return Err(TopologyError::at(
                        here,
                        Problem::LevelsNotNested {
                            level: level.name,
                            coarser: coarser.name.clone(),
                            group: sorted_rank_list(group),
                        },
                    ));
                }
            }
            if level.groups.len() == coarser.groups.len() {
                return Err(TopologyError::at(
                    here,
                    Problem::RepeatedLevel {
                        level: level.name,
                        previous: coarser.name.clone(),
                    },
                ));
            }
        }
        out.push(level);
    }
    Ok(out)
}
