//! What `diff --format json` writes, typed: two runs compared ([`DiffJson`]) and a run checked
//! against a declared topology ([`DeclaredJson`]). Each object's fields are declared in the
//! order of their names, the order the output has always had.

use serde::Serialize;

/// A number JSON can hold: NaN as null, infinities (a z where no noise was seen) as +-1e300.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finite(pub f64);

impl Serialize for Finite {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_nan() {
            s.serialize_none()
        } else {
            s.serialize_f64(self.0.clamp(-1e300, 1e300))
        }
    }
}

/// A value JSON holds as a number when finite, as null otherwise.
pub(crate) fn finite_or_null(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct DiffJson {
    /// Run A (before).
    pub a: String,
    /// Run B (after).
    pub b: String,
    /// Whether anything changed beyond the noise.
    pub changed: bool,
    /// The changes, worst first (at most 100).
    pub changes: Vec<UnitJson>,
    /// How many changes there are.
    pub changes_count: usize,
    /// Hosts, host pairs and ranks beyond the bar in one matrix alone of three or more that
    /// decide: listed, not counted as changes (noise at one size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_matrix_only: Vec<UnitJson>,
    /// Host pairs (at most 100).
    pub host_pairs: Vec<UnitJson>,
    /// Every host.
    pub hosts: Vec<UnitJson>,
    /// Per matrix, the machine's shift.
    pub machine: Vec<MachineJson>,
    /// The least change of the whole machine that counts.
    pub machine_change: f64,
    /// Per compared matrix, its medians.
    pub matrices: Vec<MatrixJson>,
    /// The least change of a unit that counts.
    pub min_change: f64,
    /// The pairs that changed most (at most 100).
    pub pairs: Vec<PairJson>,
    /// How many pairs changed beyond the threshold.
    pub pairs_beyond_threshold: usize,
    /// Which ranks stand for which.
    pub ranks: RanksJson,
    /// Noise that changed.
    pub spread_changes: Vec<SpreadChangeJson>,
    /// The factor of a noise change that counts.
    pub spread_factor: f64,
    /// The least z that counts.
    pub threshold: f64,
    /// The topology compared level by level, when asked for.
    pub topology: Option<Vec<LevelJson>>,
}

/// Which ranks of A stand for which of B.
#[derive(Debug, Clone, Serialize)]
pub struct RanksJson {
    /// Ranks matched.
    pub matched: usize,
    /// What they were matched by.
    pub matched_by: String,
    /// Ranks only A has.
    pub only_a: Vec<usize>,
    /// Ranks only B has.
    pub only_b: Vec<usize>,
    /// Matched ranks one of the runs did not test.
    pub untested: Vec<usize>,
}

/// One compared matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixJson {
    /// Its name (`t:1KiB`).
    pub matrix: String,
    /// The median relative change of its pairs.
    pub median_change: f64,
    /// The median z of its pairs.
    pub median_z: Finite,
    /// Where run A's noise came from.
    pub noise_a: &'static str,
    /// Where run B's noise came from.
    pub noise_b: &'static str,
    /// Its pairs compared.
    pub pairs: usize,
    /// The median ratio of the pairs' spreads.
    pub spread_ratio: Finite,
}

/// The machine's shift in one matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MachineJson {
    /// The hosts, host pairs and ranks that carry it.
    pub carried_by: Vec<UnitJson>,
    /// Whether the whole machine changed.
    pub changed: bool,
    /// The matrix.
    pub matrix: String,
    /// The median relative change.
    pub median_change: f64,
    /// Its z.
    pub median_z: Finite,
    /// The pairs judged.
    pub pairs: usize,
}

/// A host, host pair, rank or pair that changed.
#[derive(Debug, Clone, Serialize)]
pub struct UnitJson {
    /// The relative change.
    pub change: f64,
    /// Its hosts.
    pub hosts: Vec<String>,
    /// `host`, `host pair`, `rank` or `pair`.
    pub kind: &'static str,
    /// The matrix it changed most in.
    pub matrix: String,
    /// Its name.
    pub name: String,
    /// The pairs it was judged on.
    pub pairs: usize,
    /// Its ranks.
    pub ranks: Vec<usize>,
    /// How much its pairs' spread changed.
    pub spread_ratio: Finite,
    /// Its change over its standard error.
    pub z: Finite,
}

/// A noise that changed.
#[derive(Debug, Clone, Serialize)]
pub struct SpreadChangeJson {
    /// The matrix.
    pub matrix: String,
    /// What changed.
    pub name: String,
    /// B's spread over A's.
    pub ratio: f64,
}

/// A pair that changed.
#[derive(Debug, Clone, Serialize)]
pub struct PairJson {
    /// Its value in A, us.
    pub a_us: f64,
    /// Its value in B, us.
    pub b_us: f64,
    /// The relative change.
    pub change: f64,
    /// The first rank.
    pub i: usize,
    /// The second rank.
    pub j: usize,
    /// The matrix.
    pub matrix: String,
    /// Its change over its noise.
    pub z: Finite,
}

/// One level of the topology compared.
#[derive(Debug, Clone, Serialize)]
pub struct LevelJson {
    /// The adjusted Rand index of A's groups and B's.
    pub ari: Option<f64>,
    /// Whether it changed.
    pub changed: bool,
    /// Its groups in A.
    pub groups_a: Option<usize>,
    /// Its groups in B.
    pub groups_b: Option<usize>,
    /// The level.
    pub level: String,
    /// Groups of A merged in B.
    pub merged: usize,
    /// Ranks moved (at most 100).
    pub moved: Vec<usize>,
    /// How many ranks moved.
    pub moved_count: usize,
    /// Groups of A split in B.
    pub split: usize,
}

/// A run checked against a declared topology.
#[derive(Debug, Clone, Serialize)]
pub struct DeclaredJson {
    /// The declared topology's file.
    pub declared: String,
    /// Whether the run disagrees.
    pub differs: bool,
    /// The file's format.
    pub format: String,
    /// Each declared level checked.
    pub levels: Vec<DeclaredLevelJson>,
    /// The run's hosts the file does not place.
    pub not_declared: Vec<String>,
    /// Levels of one host a group, not judged.
    pub one_host_a_group: Vec<String>,
    /// The run.
    pub run: String,
}

/// One declared level checked.
#[derive(Debug, Clone, Serialize)]
pub struct DeclaredLevelJson {
    /// The median of the pairs between groups, us.
    pub between_us: Option<f64>,
    /// Its groups.
    pub groups: Vec<String>,
    /// The median of the pairs inside groups, us.
    pub inside_us: Option<f64>,
    /// The level.
    pub level: String,
    /// The matrix it was judged in.
    pub matrix: String,
    /// Hosts measured nearer another group.
    pub misplaced: Vec<MisplacedJson>,
    /// Whether the pairs show it.
    pub seen: bool,
    /// Groups declared apart measured as one.
    pub together: Vec<TogetherJson>,
    /// The Mann-Whitney z of the pairs between groups being longer.
    pub z: Option<f64>,
}

/// A host measured nearer another group than its own.
#[derive(Debug, Clone, Serialize)]
pub struct MisplacedJson {
    /// The group the file puts it in.
    pub declared: String,
    /// The host.
    pub host: String,
    /// The group it was measured nearer.
    pub nearer: String,
    /// Its pairs with both groups.
    pub pairs: usize,
    /// The median of its pairs with its declared group, us.
    pub to_declared_us: Option<f64>,
    /// The median of its pairs with the nearer group, us.
    pub to_nearer_us: Option<f64>,
    /// The Mann-Whitney z.
    pub z: Option<f64>,
}

/// Two groups declared apart and measured as one.
#[derive(Debug, Clone, Serialize)]
pub struct TogetherJson {
    /// The median of the pairs between them, us.
    pub between_us: Option<f64>,
    /// The two groups.
    pub groups: [String; 2],
    /// The median of the pairs inside them, us.
    pub inside_us: Option<f64>,
    /// The pairs compared.
    pub pairs: usize,
    /// The Mann-Whitney z of the pairs between them being longer.
    pub z: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_json_cannot_hold_are_written_as_before() {
        let text =
            serde_json::to_string(&[Finite(f64::NAN), Finite(f64::INFINITY), Finite(1.5)]).unwrap();
        assert_eq!(text, "[null,1e+300,1.5]");
        assert_eq!(
            (finite_or_null(f64::INFINITY), finite_or_null(2.0)),
            (None, Some(2.0))
        );
    }
}
