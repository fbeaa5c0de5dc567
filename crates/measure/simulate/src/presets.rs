//! Machines named after the systems of the reference thesis (chapter 4), with the figures it
//! reports for them (chapter 5), and kinds of node its systems lack (a hybrid CPU, a chiplet part with 3 cores per CCD, SMT
//! siblings barely nearer than the other cores of their CCD).

use std::collections::BTreeMap;

use crate::model::{
    parse_levels, Artifacts, Link, MachineModel, Noise, Placement, MODEL_FORMAT, MODEL_VERSION,
};

/// The preset names.
pub const PRESETS: [&str; 7] = [
    "fram", "betzy", "arm1", "hpclab", "hybrid", "chiplet", "zen4",
];

/// The artifacts the presets measure with: what section 5.1 saw on every system, and one node
/// slower than the others, as real clusters almost always have.
fn usual_artifacts() -> Artifacts {
    Artifacts::all()
}

fn model(
    name: &str,
    description: &str,
    machine: &str,
    placement: Placement,
    links: &[(&str, Link)],
    sigma: f64,
    reps: usize,
) -> MachineModel {
    MachineModel {
        format: MODEL_FORMAT.into(),
        version: MODEL_VERSION,
        name: name.into(),
        description: description.into(),
        levels: parse_levels(machine).expect("preset machines parse"),
        placement,
        eager_limit_bytes: 16 << 10,
        links: links
            .iter()
            .map(|(n, l)| (n.to_string(), l.clone()))
            .collect::<BTreeMap<_, _>>(),
        noise: Noise {
            sigma,
            batch_jitter_us: 1.0,
        },
        artifacts: usual_artifacts(),
        reps,
    }
}

/// A preset by name.
pub fn preset(name: &str) -> Option<MachineModel> {
    // Link::linear(L, (g(0), g bandwidth), (o_s(0), o_s bandwidth), (o_r(0), o_r bandwidth),
    // rendezvous); times in microseconds, bandwidths in bytes per microsecond (MB/s).
    Some(match name {
        "betzy" => model(
            "betzy",
            "BETZY (section 5.6): 4 nodes of 2 AMD EPYC 7742 sockets x 64 cores, InfiniBand HDR100; \
             RTT(0) about 1.8 us between nodes, 0.8 us between sockets, 0.6 us core to core; \
             block placement; R = 8",
            "node=4,socket=2,core=64",
            Placement::Block,
            &[
                ("core", Link::linear(0.25, (0.05, 16000.0), (0.15, 20000.0), (0.10, 20000.0), 0.6)),
                ("socket", Link::linear(0.33, (0.07, 10000.0), (0.20, 12000.0), (0.15, 12000.0), 0.8)),
                ("node", Link::linear(0.75, (0.15, 9000.0), (0.30, 50000.0), (0.20, 50000.0), 1.8)),
            ],
            0.04,
            8,
        ),
        "fram" => model(
            "fram",
            "FRAM (sections 5.1-5.4): nodes of 2 Intel E5-2683v4 sockets x 16 cores in islands, \
             InfiniBand EDR; intra-socket latency about half the inter-socket one, inter-node \
             two to three times intra-node, nodes in one island 0.45 us apart and 0.65 us across \
             islands; Intel MPI's round-robin placement over sockets; R = 64",
            "switch=2,node=2,socket=2,core=16",
            Placement::RoundRobin,
            &[
                ("core", Link::linear(0.12, (0.05, 8000.0), (0.12, 10000.0), (0.08, 10000.0), 0.34)),
                ("socket", Link::linear(0.22, (0.06, 5500.0), (0.18, 7000.0), (0.12, 7000.0), 0.56)),
                ("node", Link::linear(0.45, (0.12, 4800.0), (0.15, 40000.0), (0.10, 40000.0), 1.14)),
                ("switch", Link::linear(0.65, (0.12, 4200.0), (0.15, 40000.0), (0.10, 40000.0), 1.54)),
            ],
            0.05,
            64,
        ),
        "arm1" => model(
            "arm1",
            "IDUN-ARM1 (section 5.5): one node of 96 ARM64 cores in 2 sockets of 2 groups of 24; \
             Open MPI's placement deals consecutive ranks to different sockets, giving 2 groups \
             of 48 and 4 of 24 ranks; R = 128",
            "socket=2,numa=2,core=24",
            Placement::RoundRobin,
            &[
                ("core", Link::linear(0.20, (0.04, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48)),
                ("numa", Link::linear(0.30, (0.05, 7000.0), (0.15, 9000.0), (0.10, 9000.0), 0.70)),
                ("socket", Link::linear(0.55, (0.08, 4000.0), (0.25, 5000.0), (0.15, 5000.0), 1.26)),
            ],
            0.05,
            128,
        ),
        "hpclab" => model(
            "hpclab",
            "HPCLAB (section 5.7): one Intel Core i7-6700K, 4 cores, 1 socket; latencies of \
             15-70 ns with no structure, the first pair an outlier; R = 1024",
            "core=4",
            Placement::Block,
            &[(
                "core",
                Link::linear(0.04, (0.01, 20000.0), (0.03, 25000.0), (0.02, 25000.0), 0.1),
            )],
            0.3,
            1024,
        ),
        "hybrid" => model(
            "hybrid",
            "A hybrid CPU as Intel's 12th-14th generation desktop parts have it: 8 P-cores of two \
             threads and 2 modules of 4 E-cores without SMT sharing an L2, one socket; SMT \
             siblings 0.48 us apart at RTT(0), E-cores of one module 0.78 us, other cores \
             1.26 us (ARM1's core and socket links); the core level is 8 pairs beside 8 \
             singletons, the module level the same 8 pairs beside 2 groups of 4; block \
             placement; R = 128",
            "module=10,core=1x8/4x2,thread=2x8/1x8",
            Placement::Block,
            &[
                ("thread", Link::linear(0.20, (0.04, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48)),
                ("core", Link::linear(0.35, (0.04, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48)),
                ("module", Link::linear(0.55, (0.08, 4000.0), (0.25, 5000.0), (0.15, 5000.0), 1.26)),
            ],
            0.05,
            128,
        ),
        "chiplet" => model(
            "chiplet",
            "A chiplet part with few active cores, as a 12-core EPYC built from 4 CCDs of 3 \
             cores has it, one thread per core: cores of one CCD 0.48 us apart at RTT(0), of \
             two CCDs 1.26 us spread 3 % by the CCDs' places on the I/O die; block placement; \
             R = 128",
            "ccd=4,core=3",
            Placement::Block,
            &[
                ("core", Link::linear(0.20, (0.04, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48)),
                ("ccd", Link::linear(0.55, (0.08, 4000.0), (0.25, 5000.0), (0.15, 5000.0), 1.26).spread(0.03)),
            ],
            0.05,
            128,
        ),
        "zen4" => model(
            "zen4",
            "A 16-core Zen 4 desktop part: 2 CCDs of 8 cores of two threads; SMT siblings 0.40 us \
             apart at RTT(0), other cores of one CCD 0.62 us spread 3 % by their places on the \
             CCD's ring, cores of two CCDs 1.26 us; at t(0) the siblings' 0.30 us is 1.1-1.2x \
             below the nearest other pair of their CCD, a gap narrow against the CCD's spread; \
             block placement, siblings on consecutive ranks; R = 128",
            "ccd=2,core=8,thread=2",
            Placement::Block,
            &[
                ("thread", Link::linear(0.16, (0.04, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48)),
                ("core", Link::linear(0.26, (0.05, 9000.0), (0.12, 12000.0), (0.08, 12000.0), 0.48).spread(0.03)),
                ("ccd", Link::linear(0.55, (0.08, 4000.0), (0.25, 5000.0), (0.15, 5000.0), 1.26)),
            ],
            0.05,
            128,
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{parse_levels, MachineModel};

    #[test]
    fn fan_outs_may_differ_between_items() {
        // A hybrid CPU: 8 P-cores of two threads, then 2 clusters of 4 E-cores.
        let l = parse_levels("cluster=10,cpu=2x8/4x2").unwrap();
        assert_eq!(l[1].fanout.of(7), 2);
        assert_eq!(l[1].fanout.of(8), 4);
        assert_eq!(l[1].fanout.of(18), 4, "taken in turn over the items above");
        let m = preset("arm1").unwrap();
        let mut hybrid = m.clone();
        hybrid.links = [("cluster", "core"), ("cpu", "core")]
            .iter()
            .map(|(n, from)| (n.to_string(), m.links[*from].clone()))
            .collect();
        hybrid.levels = l;
        hybrid.check().unwrap();
        assert_eq!(hybrid.ranks(), 24);
        assert_eq!(hybrid.to_string(), "cluster=10,cpu=2x8/4x2");
        let json = hybrid.to_json();
        assert!(json.contains("\"fanout\": 10"), "one number stays a number");
        assert_eq!(serde_json::from_str::<MachineModel>(&json).unwrap(), hybrid);
        // A node with fewer cores.
        let small = preset("betzy")
            .unwrap()
            .with_machine("node=2,socket=2,core=64/64/64/32")
            .unwrap();
        assert_eq!(small.ranks(), 224);
        assert_eq!(small.node_count(), 2);
    }

    #[test]
    fn presets_are_valid_and_match_the_thesis() {
        for name in PRESETS {
            let m = preset(name).unwrap();
            m.check().unwrap_or_else(|e| panic!("{name}: {e}"));
            let json = m.to_json();
            assert_eq!(serde_json::from_str::<MachineModel>(&json).unwrap(), m);
        }
        let b = preset("betzy").unwrap();
        let rtt0 = |level: &str| b.links[level].at(0, b.eager_limit_bytes).rtt;
        assert!((rtt0("node") - 1.8).abs() < 1e-9);
        assert!((rtt0("socket") - 0.8).abs() < 1e-9);
        assert!((rtt0("core") - 0.6).abs() < 1e-9);
        assert_eq!(b.ranks(), 512);
        let f = preset("fram").unwrap();
        assert_eq!(
            (f.links["node"].latency_us, f.links["switch"].latency_us),
            (0.45, 0.65)
        );
        assert!(preset("cray").is_none());
    }
}
