//! Every clustering algorithm on synthetic machines of P = 512, 2048 and 4096 ranks (switches
//! of 1024 ranks, nodes of 64, sockets of 32, with 3 % noise), the matrix already in memory.
//! Whole-process times against the Python peers: `benches/python-peer.sh` at the root.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lgate_cluster::algorithms::{agglomerative, kmedoids};
use lgate_cluster::spectral::{kmeans, spectral, SpectralParams};
use lgate_cluster::{auto, hdbscan, AutoParams, HdbscanParams, Linkage};
use linfa::ParamGuard;
use ndarray::Array2;
use rand::{Rng, SeedableRng};

fn machine(n: usize) -> Array2<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
    let mut d = Array2::zeros((n, n));
    for i in 0..n {
        for j in i + 1..n {
            let base = if i / 1024 != j / 1024 {
                3.0
            } else if i / 64 != j / 64 {
                1.8
            } else if i / 32 != j / 32 {
                0.8
            } else {
                0.4
            };
            let x = base * rng.random_range(-0.03f64..0.03).exp();
            d[[i, j]] = x;
            d[[j, i]] = x;
        }
    }
    d
}

fn algorithms(c: &mut Criterion) {
    let mut group = c.benchmark_group("cluster");
    group.sample_size(10);
    for n in [512, 2048, 4096] {
        let d = machine(n);
        group.bench_with_input(BenchmarkId::new("auto", n), &d, |b, d| {
            b.iter(|| auto(black_box(d), &AutoParams::default()))
        });
        group.bench_with_input(BenchmarkId::new("hdbscan", n), &d, |b, d| {
            b.iter(|| {
                hdbscan(
                    black_box(d),
                    HdbscanParams {
                        min_cluster_size: 16,
                        min_samples: 4,
                    },
                )
            })
        });
        group.bench_with_input(BenchmarkId::new("agglomerative-average", n), &d, |b, d| {
            b.iter(|| agglomerative(black_box(d), Linkage::Average, Some(n / 64), None))
        });
        group.bench_with_input(BenchmarkId::new("kmedoids", n), &d, |b, d| {
            b.iter(|| kmedoids(black_box(d), Some(n / 64), 0))
        });
        let given_k = SpectralParams::new()
            .k(Some(n / 64))
            .check()
            .expect("valid parameters");
        group.bench_with_input(BenchmarkId::new("spectral", n), &d, |b, d| {
            b.iter(|| spectral(black_box(d), &given_k))
        });
        group.bench_with_input(BenchmarkId::new("kmeans", n), &d, |b, d| {
            b.iter(|| kmeans(black_box(d), d, true, &given_k))
        });
    }
    group.finish();
}

criterion_group!(benches, algorithms);
criterion_main!(benches);
