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

#[test]
fn a_level_is_judged_where_its_groups_stand_apart_most_not_where_its_z_happens_to_be_highest() {
    // The testbed's two leaves of four hosts, l1h3 declared alone on a third leaf: at 0 B the
    // leaves are 39 % apart and l1h3's pairs with its leaf-mates 9 % above theirs inside (the
    // noise of 0-byte round trips), at 64 KiB 11 times apart with one slow sample inside (so
    // its z is a little lower). Judged at 0 B, l1h3 would be a leaf of its own; at 64 KiB, where
    // the leaves stand apart most, it is one with its leaf-mates.
    let group = |name: &str, hosts: &[&str]| DeclaredGroup {
        name: name.into(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let level = DeclaredLevel {
        name: "tier1".into(),
        groups: vec![
            group("leaf0", &["h0", "h1", "h2", "h3"]),
            group("leaf1", &["h4", "h5", "h6"]),
            group("leaf2", &["h7"]),
        ],
    };
    let leaf = |h: usize| (h / 4).min(1);
    let matrix = |inside: f64, apart: f64, alone: f64, slow: bool| {
        let mut by = HashMap::new();
        for a in 0..8 {
            for b in a + 1..8 {
                let base = if leaf(a) != leaf(b) {
                    apart
                } else if b == 7 {
                    alone
                } else {
                    inside
                };
                let v: Vec<f64> = (0..4)
                    .map(|k| base * (0.94 + 0.04 * k as f64 + 0.002 * (a + b) as f64))
                    .collect();
                by.insert((format!("h{a}"), format!("h{b}")), v);
            }
        }
        if slow {
            by.get_mut(&("h0".to_string(), "h1".to_string())).unwrap()[0] = 3.0 * apart;
        }
        by
    };
    let zero = ("rtt:0".to_string(), matrix(18.5, 25.7, 18.5 * 1.09, false));
    let wide = ("rtt:64KiB".to_string(), matrix(230.0, 2530.0, 225.0, true));
    let none = HashSet::new();
    let at_zero = judge::check_level(&level, &vec![zero.clone()], &none);
    let at_wide = judge::check_level(&level, &vec![wide.clone()], &none);
    assert!(at_zero.seen && at_wide.seen, "{at_zero:?} {at_wide:?}");
    assert!(at_zero.z > at_wide.z, "{} {}", at_zero.z, at_wide.z);
    assert!(at_zero.together.is_empty(), "{:?}", at_zero.together);
    for values in [vec![zero.clone(), wide.clone()], vec![wide, zero]] {
        let check = judge::check_level(&level, &values, &none);
        assert_eq!(check.matrix, "rtt:64KiB");
        let joined: Vec<_> = check.together.iter().map(|t| t.groups.clone()).collect();
        assert_eq!(joined, [("leaf1".to_string(), "leaf2".to_string())]);
    }
}
