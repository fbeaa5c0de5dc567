//! What `measure` asks of a judge of the levels above its groups while it measures: the pairs
//! screened so far go in, the groupings of the groups that they nearly decide come out. The
//! clustering crate fills it (`lgate_cluster::ScreenedJudge`, `cluster`'s own judge), so that
//! the measuring side links no clustering.

/// Pairs of ranks with their values at each screening size, as `measure` screened them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScreenedRankPairs {
    /// The first rank of each pair.
    pub i: Vec<u32>,
    /// The second rank.
    pub j: Vec<u32>,
    /// Per size (ascending), each pair's value in microseconds (NaN: none at that size).
    pub values: Vec<Vec<f64>>,
    /// Per size, each pair's floor in microseconds: its least repetition (NaN: not known).
    pub floors: Vec<Vec<f64>>,
}

impl ScreenedRankPairs {
    /// No pairs, at `sizes` sizes.
    pub fn with_sizes(sizes: usize) -> Self {
        ScreenedRankPairs {
            values: vec![Vec::new(); sizes],
            floors: vec![Vec::new(); sizes],
            ..Default::default()
        }
    }

    /// Adds pair `(i, j)` with its value and floor at each size (in the order of the sizes).
    pub fn push(&mut self, i: u32, j: u32, values: &[f64], floors: &[f64]) {
        self.i.push(i);
        self.j.push(j);
        for (k, column) in self.values.iter_mut().enumerate() {
            column.push(values.get(k).copied().unwrap_or(f64::NAN));
        }
        for (k, column) in self.floors.iter_mut().enumerate() {
            column.push(floors.get(k).copied().unwrap_or(f64::NAN));
        }
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.i.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.i.is_empty()
    }
}

/// A grouping of hosts (or of any groups of ranks) that the pairs nearly decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Doubt {
    /// The groups.
    pub groups: usize,
    /// The hosts grouped.
    pub hosts: usize,
    /// Which hosts (their positions in the host x host matrix).
    pub members: Vec<usize>,
    /// The group of each of `members`, from 0.
    pub labels: Vec<usize>,
    /// The test's z.
    pub z: f64,
    /// The pairs now measured between two hosts (the median over the hosts compared).
    pub pairs: usize,
    /// The pairs between two hosts that would bring z to the bar that decides if the
    /// difference holds.
    pub pairs_needed: usize,
    /// Whether every pair between two of the hosts compared was measured already (more pairs
    /// cannot be had; repetitions sharpen those there are).
    pub every_pair: bool,
    /// The most z the pairs there are can give (every pair inside a group shorter than every
    /// pair across): below the bar that decides, this group cannot decide alone.
    pub z_most: f64,
    /// The tests a pair now has (the mean over the pairs compared; 1 where tests were not
    /// kept apart).
    pub tests: f64,
    /// The tests a pair would need for z to reach the bar that decides if each counted alone
    /// and the difference held (one more than now at least, the judge's most at most).
    pub tests_needed: usize,
}

impl Doubt {
    /// Its groups: the hosts of each (positions in the host x host matrix).
    pub fn groups_of(&self) -> Vec<Vec<usize>> {
        let mut groups = vec![Vec::new(); self.groups];
        for (&host, &l) in self.members.iter().zip(&self.labels) {
            if let Some(g) = groups.get_mut(l) {
                g.push(host);
            }
        }
        groups
    }
}

/// Why a judge could not judge the pairs given (two groups with no pair between them).
pub type JudgeError = Box<dyn std::error::Error + Send + Sync>;

/// A judge of the levels above groups of ranks on the pairs screened between them.
pub trait LevelJudge: std::fmt::Debug + Sync {
    /// The most groups whose levels it judges.
    fn max_groups(&self) -> usize;
    /// The least Mann-Whitney z that decides a level.
    fn z_decide(&self) -> f64;
    /// The least z of a level decided that needs no more pairs to stand.
    fn z_firm(&self) -> f64;
    /// The most tests it asks of one pair.
    fn most_tests(&self) -> usize;
    /// The groupings of `groups` (each its ranks; `ranks` ranks in all) that `pairs` nearly
    /// decide, or decide below [`LevelJudge::z_firm`]; their members are positions in `groups`.
    fn doubts(
        &self,
        groups: &[Vec<usize>],
        ranks: usize,
        pairs: ScreenedRankPairs,
    ) -> Result<Vec<Doubt>, JudgeError>;
}
