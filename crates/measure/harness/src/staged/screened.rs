//! What rank 0 keeps of the screening to choose stages 3-5: a screened pair, and the values
//! of stages 1-2 in 24 bytes a test.

use super::*;

/// A screened pair as rank 0 keeps it to choose stages 3-4: its stage and distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScreenedPair {
    /// The stage it was screened in.
    pub stage: Stage,
    /// The pair.
    pub pair: Pair,
    /// The screening distance (round trip at the largest screening size, seconds).
    pub value: f64,
    /// The round trip at the smallest screening size (seconds), NaN when the test had one.
    pub smallest: f64,
    /// The least repetition at the largest screening size (seconds), NaN when not known.
    pub floor: f64,
    /// The least repetition at the smallest screening size (seconds), NaN when the test had
    /// one size or it is not known.
    pub smallest_floor: f64,
}

impl ScreenedPair {
    /// A screening test's pair as rank 0 keeps it, if the test has a value.
    pub fn of(stage: Stage, pair: Pair, result: &PingPongResult) -> Option<ScreenedPair> {
        Some(ScreenedPair {
            stage,
            pair,
            value: result.screening_value()?,
            smallest: result.smallest_screening_value().unwrap_or(f64::NAN),
            floor: result.sizes.last().map_or(f64::NAN, |s| s.rtt.min),
            smallest_floor: match result.sizes.as_slice() {
                [first, _, ..] => first.rtt.min,
                _ => f64::NAN,
            },
        })
    }
}

/// One screening value as [`ScreenedValues`] holds it, in seconds: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Screened {
    pub(super) value: f32,
    pub(super) smallest: f32,
    pub(super) floor: f32,
    pub(super) smallest_floor: f32,
    pub(super) i: u32,
    pub(super) j: u32,
}

impl Screened {
    pub(super) fn pair(&self) -> Pair {
        Pair::new(self.i as usize, self.j as usize)
    }

    /// By value, ties by pair: the order does not depend on the order results came in.
    pub(super) fn order(&self, other: &Self) -> std::cmp::Ordering {
        (self.value.total_cmp(&other.value)).then((self.i, self.j).cmp(&(other.i, other.j)))
    }
}

/// The screening values rank 0 keeps to choose stages 3-5: 24 bytes per test of stages 1-2
/// (200 million tests at 1 048 576 ranks), tests of other stages left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScreenedValues {
    pub(super) hosts: Vec<Screened>,
    pub(super) between: Vec<Screened>,
}

impl ScreenedValues {
    /// Room for `hosts` tests inside groups and `between` tests between them.
    pub fn with_capacity(hosts: usize, between: usize) -> Self {
        ScreenedValues {
            hosts: Vec::with_capacity(hosts),
            between: Vec::with_capacity(between),
        }
    }

    /// Keeps one screened pair (of stage 1 or 2; others are left out).
    pub fn push(&mut self, s: ScreenedPair) {
        let (Ok(i), Ok(j)) = (u32::try_from(s.pair.i), u32::try_from(s.pair.j)) else {
            return;
        };
        let kept = Screened {
            value: s.value as f32,
            smallest: s.smallest as f32,
            floor: s.floor as f32,
            smallest_floor: s.smallest_floor as f32,
            i,
            j,
        };
        match s.stage {
            Stage::Hosts => self.hosts.push(kept),
            Stage::Between => self.between.push(kept),
            _ => {}
        }
    }

    /// The values kept.
    pub fn len(&self) -> usize {
        self.hosts.len() + self.between.len()
    }

    /// Whether none are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn of_stage(&mut self, stage: Stage) -> &mut [Screened] {
        match stage {
            Stage::Between => &mut self.between,
            _ => &mut self.hosts,
        }
    }
}

impl Extend<ScreenedPair> for ScreenedValues {
    fn extend<T: IntoIterator<Item = ScreenedPair>>(&mut self, iter: T) {
        iter.into_iter().for_each(|s| self.push(s));
    }
}

impl FromIterator<ScreenedPair> for ScreenedValues {
    fn from_iter<T: IntoIterator<Item = ScreenedPair>>(iter: T) -> Self {
        let mut v = ScreenedValues::default();
        v.extend(iter);
        v
    }
}

/// The elements at `positions` (ascending, into `v` counted from `offset`) of `v` in
/// [`Screened::order`], by selection, not sorting: `v` is reordered.
pub(super) fn select_at(
    v: &mut [Screened],
    positions: &[usize],
    offset: usize,
    out: &mut Vec<(usize, Screened)>,
) {
    if positions.is_empty() || v.is_empty() {
        return;
    }
    let mid = positions.len() / 2;
    let at = positions[mid];
    let (left, nth, right) = v.select_nth_unstable_by(at - offset, Screened::order);
    out.push((at, *nth));
    select_at(left, &positions[..mid], offset, out);
    let after: Vec<usize> = positions[mid + 1..]
        .iter()
        .copied()
        .filter(|&p| p > at)
        .collect();
    select_at(right, &after, at + 1, out);
}
