//! The declared check: tests.

use super::judge::together;
use super::*;
use lgate_topology::declared::DeclaredGroup;

#[test]
fn two_leaves_of_one_switch_a_few_percent_apart_are_one_where_the_level_stands_far_apart() {
    // The testbed at 64 KiB: a leaf declared as two (l0a, l0b), its pairs inside 248-275
    // us, between the two halves 215-275 us (median 4.6 % higher), the other leaf 11
    // times away.
    let group = |name: &str, hosts: &[&str]| DeclaredGroup {
        name: name.into(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let level = DeclaredLevel {
        name: "tier1".into(),
        groups: vec![group("l0a", &["h0", "h1"]), group("l0b", &["h2", "h3"])],
    };
    let inside = [151.9, 247.9, 252.0, 259.8, 262.1, 272.6, 274.2, 275.3];
    let between = [
        214.5, 219.3, 231.3, 232.4, 242.2, 262.0, 266.4, 267.8, 272.8, 273.0, 273.9, 273.9, 274.2,
        274.5, 274.7, 275.4,
    ];
    let key = |a: &str, b: &str| (a.to_string(), b.to_string());
    let mut by = HashMap::new();
    by.insert(key("h0", "h1"), inside[..4].to_vec());
    by.insert(key("h2", "h3"), inside[4..].to_vec());
    for (k, (a, b)) in [("h0", "h2"), ("h0", "h3"), ("h1", "h2"), ("h1", "h3")]
        .into_iter()
        .enumerate()
    {
        by.insert(key(a, b), between[4 * k..4 * k + 4].to_vec());
    }
    let group_of: HashMap<&str, usize> = [("h0", 0), ("h1", 0), ("h2", 1), ("h3", 1)].into();
    let none = HashSet::new();
    // The 3 % alone does not take them (4.6 % apart) ...
    assert!(together(&level, &by, &group_of, &none, 0.0).is_empty());
    // ... against a level 11 times apart, they are one group.
    let found = together(&level, &by, &group_of, &none, 11f64.ln());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].groups, ("l0a".to_string(), "l0b".to_string()));
    // Groups as far apart as the level are not.
    let far: HashMap<_, _> = (by.iter())
        .map(|(k, v)| {
            let apart = group_of[k.0.as_str()] != group_of[k.1.as_str()];
            (
                k.clone(),
                v.iter()
                    .map(|x| x * if apart { 11.0 } else { 1.0 })
                    .collect(),
            )
        })
        .collect();
    assert!(together(&level, &far, &group_of, &none, 11f64.ln()).is_empty());
}
