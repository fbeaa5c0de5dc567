//! How well a found partition matches a known one.

use std::collections::HashMap;

/// Counts of the pairs (a label, b label).
fn contingency(a: &[usize], b: &[usize]) -> HashMap<(usize, usize), usize> {
    let mut c = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *c.entry((x, y)).or_insert(0) += 1;
    }
    c
}

fn pairs(n: usize) -> f64 {
    (n * n.saturating_sub(1)) as f64 / 2.0
}

/// The adjusted Rand index of two labelings of the same items: 1 when they are the same
/// partition, about 0 for unrelated ones. Two labelings that each put everything in one group
/// (or everything apart) agree and score 1.
pub fn adjusted_rand_index(a: &[usize], b: &[usize]) -> f64 {
    assert_eq!(a.len(), b.len(), "labelings of the same items");
    let n = a.len();
    let c = contingency(a, b);
    let mut rows: HashMap<usize, usize> = HashMap::new();
    let mut cols: HashMap<usize, usize> = HashMap::new();
    for (&(x, y), &k) in &c {
        *rows.entry(x).or_insert(0) += k;
        *cols.entry(y).or_insert(0) += k;
    }
    let index: f64 = c.values().map(|&k| pairs(k)).sum();
    let sum_a: f64 = rows.values().map(|&k| pairs(k)).sum();
    let sum_b: f64 = cols.values().map(|&k| pairs(k)).sum();
    let expected = sum_a * sum_b / pairs(n).max(1.0);
    let max = (sum_a + sum_b) / 2.0;
    if (max - expected).abs() < 1e-12 {
        return if (index - expected).abs() < 1e-12 {
            1.0
        } else {
            0.0
        };
    }
    (index - expected) / (max - expected)
}

/// The thesis's accuracy (equations 3.7-3.9): the share of ranks mapped to the correct group.
/// Found groups are matched one to one with true groups, largest overlaps first; a rank is
/// correct when its found group is matched with its true group.
pub fn accuracy(truth: &[usize], found: &[usize]) -> f64 {
    assert_eq!(truth.len(), found.len(), "labelings of the same items");
    if truth.is_empty() {
        return 1.0;
    }
    let mut overlaps: Vec<((usize, usize), usize)> =
        contingency(found, truth).into_iter().collect();
    overlaps.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut used_found, mut used_true) = (HashMap::new(), HashMap::new());
    let mut correct = 0;
    for ((f, t), k) in overlaps {
        if used_found.contains_key(&f) || used_true.contains_key(&t) {
            continue;
        }
        used_found.insert(f, ());
        used_true.insert(t, ());
        correct += k;
    }
    correct as f64 / truth.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ari_of_known_cases() {
        assert_eq!(adjusted_rand_index(&[0, 0, 1, 1], &[5, 5, 3, 3]), 1.0);
        assert!(adjusted_rand_index(&[0, 0, 1, 1], &[0, 1, 0, 1]) < 0.0);
        assert_eq!(adjusted_rand_index(&[0, 0, 0], &[1, 1, 1]), 1.0);
        // sklearn: adjusted_rand_score([0,0,0,1,1,1],[0,0,1,1,2,2]) = 0.24242424...
        let x = adjusted_rand_index(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 2, 2]);
        assert!((x - 0.242424242424).abs() < 1e-9, "{x}");
    }

    #[test]
    fn accuracy_matches_groups_one_to_one() {
        assert_eq!(accuracy(&[0, 0, 1, 1], &[1, 1, 0, 0]), 1.0);
        assert_eq!(accuracy(&[0, 0, 1, 1], &[0, 0, 0, 0]), 0.5);
        assert_eq!(accuracy(&[0, 0, 1, 1], &[0, 1, 2, 3]), 0.5);
        assert_eq!(accuracy(&[0, 0, 0, 1], &[0, 0, 1, 1]), 0.75);
    }
}
