//! Random trees survive print -> parse unchanged in every format, and levels -> tree -> levels.

use lgate_topology::{format, Topology, TopologyFormat, TopologyNode};
use proptest::prelude::*;

/// The shape of a tree before ranks are dealt out.
#[derive(Debug, Clone)]
enum Shape {
    Group(usize, Option<f64>),
    Cluster(Vec<Shape>, Option<f64>),
}

impl Shape {
    fn size(&self) -> usize {
        match self {
            Shape::Group(n, _) => *n,
            Shape::Cluster(children, _) => children.iter().map(Shape::size).sum(),
        }
    }

    fn deal(&self, ranks: &mut impl Iterator<Item = usize>) -> TopologyNode {
        match self {
            Shape::Group(n, h) => TopologyNode::group(ranks.take(*n).collect()).with_height(*h),
            Shape::Cluster(children, h) => {
                TopologyNode::cluster(children.iter().map(|c| c.deal(ranks)).collect())
                    .with_height(*h)
            }
        }
    }
}

fn height() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        (-1e9..1e9f64).prop_map(Some),
        prop::num::f64::NORMAL.prop_map(Some),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    let group = (1usize..6, height()).prop_map(|(n, h)| Shape::Group(n, h));
    group.prop_recursive(4, 48, 5, |inner| {
        (prop::collection::vec(inner, 1..5), height()).prop_map(|(c, h)| Shape::Cluster(c, h))
    })
}

/// A random tree over a shuffled `0..n`, with `extra` unlisted ranks and maybe labels.
fn topology() -> impl Strategy<Value = Topology> {
    (shape(), 0usize..3, any::<bool>()).prop_flat_map(|(shape, extra, labelled)| {
        let n = shape.size();
        Just((0..n).collect::<Vec<_>>())
            .prop_shuffle()
            .prop_map(move |ranks| {
                let tree = shape.deal(&mut ranks.into_iter());
                let t = Topology::from_tree(tree, Some(n + extra)).expect("valid by construction");
                if labelled {
                    let labels = (0..n + extra).map(|r| format!("host-{}", r / 3)).collect();
                    t.with_labels(labels).expect("one label per rank")
                } else {
                    t
                }
            })
    })
}

proptest! {
    #[test]
    fn json_round_trip_is_exact(t in topology()) {
        let text = format::to_string(&t, TopologyFormat::Json);
        let (back, found) = format::parse(&text, None, None).unwrap();
        prop_assert_eq!(found, TopologyFormat::Json);
        prop_assert_eq!(back, t);
    }

    #[test]
    fn lgate_round_trip_keeps_the_tree(t in topology()) {
        let text = format::to_string(&t, TopologyFormat::Lgate);
        let (back, found) = format::parse(&text, None, Some(t.ranks())).unwrap();
        prop_assert_eq!(found, TopologyFormat::Lgate);
        prop_assert_eq!(back.tree(), &t.tree().without_heights());
        // The file lists no rank count; ranks beyond the largest listed one are not in it.
        let back = Topology::from_tree(back.tree().clone(), Some(t.ranks())).unwrap();
        prop_assert_eq!(back.levels(), t.levels());
    }

    #[test]
    fn newick_round_trip_keeps_the_tree(t in topology()) {
        let text = format::to_string(&t, TopologyFormat::Newick);
        let (back, found) = format::parse(&text, None, Some(t.ranks())).unwrap();
        prop_assert_eq!(found, TopologyFormat::Newick);
        prop_assert_eq!(back.tree(), &t.tree().without_heights());
    }

    #[test]
    fn levels_give_back_a_tree_with_the_same_levels(t in topology()) {
        let rebuilt = Topology::from_levels(t.ranks(), t.levels().to_vec()).unwrap();
        prop_assert_eq!(rebuilt.levels(), t.levels());
        let again = Topology::from_tree(rebuilt.tree().clone(), Some(t.ranks())).unwrap();
        prop_assert_eq!(again.levels(), t.levels());
        // Every level is a partition of all ranks, and each nests in the one above it.
        for (k, level) in t.levels().iter().enumerate() {
            let mut all: Vec<usize> = level.groups.iter().flatten().copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..t.ranks()).collect::<Vec<_>>());
            if k > 0 {
                let coarser = t.levels()[k - 1].labels(t.ranks());
                for g in &level.groups {
                    prop_assert!(g.iter().all(|&r| coarser[r] == coarser[g[0]]));
                }
                prop_assert!(level.groups.len() > t.levels()[k - 1].groups.len());
            }
        }
    }
}
