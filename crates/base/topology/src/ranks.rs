//! Rank lists in the compressed form topology files use (`0-7`, `0,2,4-6`).

use std::fmt;

/// An MPI rank: a process's index in the communicator, `0..P`.
pub type Rank = usize;

/// A list of ranks shown compressed: ascending runs of consecutive ranks become `a-b`.
///
/// The order of the list is kept, so printing and parsing give back the same list.
#[derive(Debug, Clone, Copy)]
pub struct RankList<'a>(pub &'a [Rank]);

impl fmt::Display for RankList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranks = self.0;
        let mut i = 0;
        let mut first = true;
        while i < ranks.len() {
            let start = ranks[i];
            let mut end = i;
            while end + 1 < ranks.len() && ranks[end + 1] == ranks[end].wrapping_add(1) {
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match end - i {
                0 => write!(f, "{start}")?,
                // Two neighbours read better as a pair than as a range.
                1 => write!(f, "{start},{}", ranks[end])?,
                _ => write!(f, "{start}-{}", ranks[end])?,
            }
            i = end + 1;
        }
        Ok(())
    }
}

/// Ranks sorted ascending and shown compressed, for people reading a set of ranks.
pub fn sorted_rank_list(ranks: &[Rank]) -> String {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    RankList(&sorted).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compresses_runs_and_keeps_order() {
        assert_eq!(RankList(&[0, 1, 2, 3, 4, 5, 6, 7]).to_string(), "0-7");
        assert_eq!(RankList(&[0, 2, 4, 5, 6]).to_string(), "0,2,4-6");
        assert_eq!(RankList(&[3, 4]).to_string(), "3,4");
        assert_eq!(RankList(&[9]).to_string(), "9");
        assert_eq!(RankList(&[7, 6, 5]).to_string(), "7,6,5");
        assert_eq!(RankList(&[4, 5, 6, 0, 1, 2]).to_string(), "4-6,0-2");
        assert_eq!(RankList(&[]).to_string(), "");
    }

    #[test]
    fn sorted_list_sorts_first() {
        assert_eq!(sorted_rank_list(&[6, 4, 5, 0, 2]), "0,2,4-6");
    }
}
