//! Reading and writing a P = 4096 topology (4 switches x 16 nodes x 2 sockets x 32 cores) in
//! every format, and deriving its levels.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use lgate_topology::{format, Level, Topology, TopologyFormat};

const RANKS: usize = 4096;

fn machine() -> Topology {
    let level = |name: &str, size: usize| {
        Level::new(
            name,
            (0..RANKS / size)
                .map(|g| (g * size..(g + 1) * size).collect())
                .collect(),
        )
    };
    let levels = vec![
        level("switch", 1024),
        level("node", 64),
        level("socket", 32),
    ];
    Topology::from_levels(RANKS, levels).expect("nested levels")
}

fn formats(c: &mut Criterion) {
    let topology = machine();
    for f in TopologyFormat::ALL {
        let text = format::to_string(&topology, f);
        c.bench_function(&format!("write {f} P=4096"), |b| {
            b.iter(|| format::to_string(black_box(&topology), f))
        });
        c.bench_function(&format!("read {f} P=4096"), |b| {
            b.iter(|| format::parse(black_box(&text), Some(f), None).expect("valid"))
        });
    }
    c.bench_function("levels of tree P=4096", |b| {
        b.iter(|| Topology::from_tree(black_box(topology.tree().clone()), Some(RANKS)))
    });
}

criterion_group!(benches, formats);
criterion_main!(benches);
