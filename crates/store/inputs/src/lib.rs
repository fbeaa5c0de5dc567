//! Every file format lgate-plogp reads, as one function of bytes each.
//!
//! Each [`InputFormat`] in [`FORMATS`] feeds arbitrary bytes to the reader the tool uses for
//! that file and, when the reader accepts them, checks what it gives back: a topology written
//! in each format reads back the same, a matrix written as CSV reads back bit for bit, a run's
//! meta.json written again reads again. A reader may refuse anything with an error; it may
//! never panic, abort, or stop. The fuzz targets in `fuzz/` call these functions, and the
//! corpus replay (`tests/corpus_replay.rs`) runs every seed and every input that once failed
//! in the ordinary test suite.
//!
//! ```
//! let lgate = lgate_inputs::format("topology_lgate").unwrap();
//! (lgate.check)(b"cluster { group { 0-3 } group { 4-7 } }\n");
//! (lgate.check)(b"cluster { group { 4-"); // refused, quietly
//! ```
#![deny(missing_docs)]

use std::path::Path;

use lgate_bcast::BroadcastTable;
use lgate_topology::export::{ExportContext, WRITERS};
use lgate_topology::{format as topology_format, Topology, TopologyFormat, TopologyNode};

/// One file format the tool reads, and the check that feeds it bytes.
#[derive(Clone, Copy)]
pub struct InputFormat {
    /// The name of its fuzz target and of its corpus folder.
    pub name: &'static str,
    /// Which files these are, in one line.
    pub description: &'static str,
    /// Reads `bytes` as such a file and checks what is accepted; panics only on a defect.
    pub check: fn(&[u8]),
}

/// Every format, in the order the README lists them.
pub static FORMATS: &[InputFormat] = &[
    InputFormat {
        name: "topology_lgate",
        description: "LGate topology files (`cluster { group { 0-7 } }`)",
        check: topology_lgate,
    },
    InputFormat {
        name: "topology_json",
        description: "lgate-plogp-topology JSON documents",
        check: topology_json,
    },
    InputFormat {
        name: "topology_newick",
        description: "Newick trees of ranks",
        check: topology_newick,
    },
    InputFormat {
        name: "topology_any",
        description: "a topology file of any format, told by its content (what a command given a topology reads)",
        check: topology_any,
    },
    InputFormat {
        name: "slurm_topology_conf",
        description: "Slurm topology.conf, tree or block, as `diff RUN DECLARED` reads it",
        check: slurm_topology_conf,
    },
    InputFormat {
        name: "slurm_topology_yaml",
        description: "Slurm topology.yaml (24.11+), as `diff RUN DECLARED` reads it",
        check: slurm_topology_yaml,
    },
    InputFormat {
        name: "k8s_nodes",
        description: "Kubernetes nodes with topograph's labels (`kubectl get nodes -o json`)",
        check: k8s_nodes,
    },
    InputFormat {
        name: "kube_topology",
        description: "a Kueue or KAI Scheduler Topology with its nodes' labels",
        check: kube_topology,
    },
    InputFormat {
        name: "volcano_hypernodes",
        description: "Volcano HyperNodes (`kubectl get hypernodes -o yaml`)",
        check: volcano_hypernodes,
    },
    InputFormat {
        name: "topograph_model",
        description:
            "topograph's model file (switches and blocks), as `diff RUN DECLARED` reads it",
        check: topograph_model,
    },
    InputFormat {
        name: "screen_table",
        description: "a staged run's screening table (`screen.csv`)",
        check: screen_table,
    },
    InputFormat {
        name: "matrix_csv",
        description: "CSV distance matrices: square, labelled or not, or a lower triangle",
        check: matrix_csv,
    },
    InputFormat {
        name: "matrix_npy",
        description: "NumPy .npy distance matrices (float64 or float32, 2-D)",
        check: matrix_npy,
    },
    InputFormat {
        name: "pair_list",
        description: "pair lists for `import pairs`: CSV with i, j, value columns, or mmpi's .dat",
        check: pair_list,
    },
    InputFormat {
        name: "pair_list_parquet",
        description: "Parquet pair lists for `import pairs` (i, j, value columns)",
        check: pair_list_parquet,
    },
    InputFormat {
        name: "mpigraph_output",
        description: "mpiGraph's output for `import mpigraph`",
        check: mpigraph_output,
    },
    InputFormat {
        name: "run_meta",
        description: "a run directory's meta.json",
        check: run_meta,
    },
    InputFormat {
        name: "run_journal",
        description: "a run directory's journal (journal.bin or journal.jsonl: tests so far)",
        check: run_journal,
    },
    InputFormat {
        name: "matrix_index",
        description: "a run directory's matrices/index.json",
        check: matrix_index,
    },
    InputFormat {
        name: "known_placement",
        description: "known placement that `score` compares a topology with (levels of labels, or a meta.json)",
        check: known_placement,
    },
    InputFormat {
        name: "machine_model",
        description: "machine models that `simulate` takes",
        check: machine_model,
    },
    InputFormat {
        name: "bcast_tuning",
        description: "bcast-tuning.json written by `bcast bench`",
        check: bcast_tuning,
    },
];

/// The format called `name`.
pub fn format(name: &str) -> Option<&'static InputFormat> {
    FORMATS.iter().find(|f| f.name == name)
}

/// The path errors name; never opened.
fn path() -> &'static Path {
    Path::new("fuzz-input")
}

/// The bytes as text, as the tool reads text files: refused unless UTF-8.
fn text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// Checks that a topology the readers accepted is written by every writer, and that each
/// topology format reads back what it wrote with the same groups, and after one round trip
/// (which drops what the format cannot hold) writes it again the same.
///
/// The checks cost several reads and writes, each in proportion to the ranks (a few bytes
/// can name rank 815 409, and every rank a file leaves out is a group of its own): above
/// [`LARGE`] ranks only one LGate round trip is checked, so that one input stays within the
/// fuzzer's 1 s with its instrumentation (55 510 ranks took 1.3 s with every check, a group
/// of 1 125 133 ranks 1.9 s with two LGate round trips beside a build).
fn check_topology(topology: &Topology) {
    let large = topology.ranks() > LARGE;
    for format in TopologyFormat::ALL {
        if large && format != TopologyFormat::Lgate {
            continue;
        }
        let written = topology_format::to_string(topology, format);
        let again = topology_format::parse(&written, Some(format), Some(topology.ranks()))
            .unwrap_or_else(|e| {
                panic!(
                    "{} writes what it cannot read: {e}\n{written}",
                    format.name()
                )
            });
        assert_eq!(again.1, format);
        assert_eq!(
            again.0.ranks(),
            topology.ranks(),
            "{} loses ranks:\n{written}",
            format.name()
        );
        assert!(
            same_groups(topology.ranks(), again.0.tree(), topology.tree()),
            "{} changes the groups:\n{written}",
            format.name()
        );
        if large {
            // One round trip of a large topology costs what a read does; the second is checked
            // on the small ones.
            continue;
        }
        // What a format cannot hold (LGate keeps no host labels) is lost once, then stays.
        let second = topology_format::to_string(&again.0, format);
        let third = topology_format::parse(&second, Some(format), Some(topology.ranks()))
            .map(|(t, _)| topology_format::to_string(&t, format))
            .unwrap_or_else(|e| {
                panic!(
                    "{} writes what it cannot read: {e}\n{second}",
                    format.name()
                )
            });
        assert_eq!(
            third,
            second,
            "{} writes a topology read from its own output differently",
            format.name()
        );
    }
    if large {
        return;
    }
    // Host names made up for the writers that need them.
    let hosts: Vec<String> = match topology.labels() {
        Some(labels) => labels.to_vec(),
        None => (0..topology.ranks())
            .map(|r| format!("n{}", r / 2))
            .collect(),
    };
    for writer in WRITERS {
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "fuzz",
        };
        // Refusals (a format that needs what the topology lacks) are fine; panics are not.
        let _ = writer.write(topology, &context);
    }
    let _ = lgate_topology::outline(topology, lgate_topology::OutlineOptions::default());
}

/// Whether two trees hold the same groups of ranks below `ranks`, in any order: one pass over
/// the ranks, no sort (sorting the groups of a 2-million-rank topology took 1.2 s of one
/// input in the fuzz build).
fn same_groups(ranks: usize, a: &TopologyNode, b: &TopologyNode) -> bool {
    fn labels(ranks: usize, tree: &TopologyNode) -> Option<Vec<usize>> {
        let mut labels = vec![usize::MAX; ranks];
        for (g, group) in tree.groups().iter().enumerate() {
            for &r in *group {
                *labels.get_mut(r)? = g;
            }
        }
        Some(labels)
    }
    let (Some(la), Some(lb)) = (labels(ranks, a), labels(ranks, b)) else {
        return false;
    };
    let (na, nb) = (a.groups().len(), b.groups().len());
    if na != nb {
        return false;
    }
    // Equal partitions: the group of a rank in one names its group in the other, both ways.
    let (mut forward, mut backward) = (vec![usize::MAX; na], vec![usize::MAX; nb]);
    la.iter().zip(&lb).all(|(&x, &y)| {
        if x == usize::MAX || y == usize::MAX {
            return x == y;
        }
        if forward[x] == usize::MAX {
            forward[x] = y;
        }
        if backward[y] == usize::MAX {
            backward[y] = x;
        }
        forward[x] == y && backward[y] == x
    })
}

/// Ranks above which a topology gets only the checks of one read's cost (see
/// [`check_topology`]): every check costs about 25 us a rank in the fuzz build (55 510 ranks
/// 1.3 s, 8 932 ranks mostly left out of a JSON level 0.3-0.95 s), so 4 096 ranks stay near
/// 0.1 s, well within 1 s on a busy machine.
const LARGE: usize = 1 << 12;

fn topology_in(bytes: &[u8], format: Option<TopologyFormat>) {
    let Some(text) = text(bytes) else { return };
    if let Ok((topology, _)) = topology_format::parse(text, format, None) {
        check_topology(&topology);
        // Read as a job of its own rank count, and of one rank more.
        let ranks = topology.ranks();
        if ranks > LARGE {
            return;
        }
        if let Ok((again, _)) = topology_format::parse(text, format, Some(ranks)) {
            assert_eq!(again.ranks(), ranks);
        }
        let _ = topology_format::parse(text, format, Some(ranks + 1));
    }
}

/// Reads bytes as an LGate topology file.
pub fn topology_lgate(bytes: &[u8]) {
    topology_in(bytes, Some(TopologyFormat::Lgate));
}

/// Reads bytes as a JSON topology document.
pub fn topology_json(bytes: &[u8]) {
    topology_in(bytes, Some(TopologyFormat::Json));
}

/// Reads bytes as a Newick topology.
pub fn topology_newick(bytes: &[u8]) {
    topology_in(bytes, Some(TopologyFormat::Newick));
}

/// Reads bytes as a topology file of any format.
pub fn topology_any(bytes: &[u8]) {
    topology_in(bytes, None);
}

/// Reads bytes as a Slurm topology.conf and checks what it declares: each level a partition
/// of the same hosts, groups named and not empty.
pub fn slurm_topology_conf(bytes: &[u8]) {
    declared_in(bytes, lgate_topology::declared::parse_slurm_conf, true);
}

/// Reads bytes as a Slurm topology.yaml and checks what it declares: no host twice in a level,
/// groups named and not empty (its topologies may cover different hosts).
pub fn slurm_topology_yaml(bytes: &[u8]) {
    declared_in(bytes, lgate_topology::declared::parse_slurm_yaml, false);
}

/// Reads bytes as Kubernetes nodes (JSON or YAML) and checks the levels their labels declare:
/// no host twice in a level, groups named and not empty.
pub fn k8s_nodes(bytes: &[u8]) {
    declared_in(bytes, lgate_topology::declared::parse_k8s_nodes, false);
}

/// Reads bytes as a Kueue or KAI Scheduler Topology with its nodes and checks the levels its
/// node labels declare: no host twice in a level, groups named and not empty.
pub fn kube_topology(bytes: &[u8]) {
    declared_in(bytes, lgate_topology::declared::parse_kube_topology, false);
}

/// Reads bytes as Volcano HyperNodes and checks the levels their tiers declare: no host twice
/// in a level, groups named and not empty.
pub fn volcano_hypernodes(bytes: &[u8]) {
    declared_in(
        bytes,
        lgate_topology::declared::parse_volcano_hypernodes,
        false,
    );
}

/// Reads bytes as a topograph model and checks the levels its switches and blocks declare: no
/// host twice in a level, groups named and not empty.
pub fn topograph_model(bytes: &[u8]) {
    declared_in(
        bytes,
        lgate_topology::declared::parse_topograph_model,
        false,
    );
}

/// Checks a declared topology's levels: two groups or more, none empty, no host in two groups
/// of one level, and with `every_host` every level over every host.
fn declared_in(
    bytes: &[u8],
    parse: fn(
        &str,
    ) -> Result<
        lgate_topology::declared::Declared,
        lgate_topology::declared::DeclaredError,
    >,
    every_host: bool,
) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(declared) = parse(text) else {
        return;
    };
    let hosts = declared.hosts();
    for level in &declared.levels {
        assert!(level.groups.len() >= 2, "a level of one group is left out");
        let mut seen: Vec<&String> = level.groups.iter().flat_map(|g| &g.hosts).collect();
        assert!(level
            .groups
            .iter()
            .all(|g| !g.hosts.is_empty() && !g.name.is_empty()));
        seen.sort();
        let before = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), before, "a host in two groups of one level");
        if every_host {
            assert_eq!(seen.len(), hosts.len(), "every level holds every host");
        }
    }
}

/// Reads bytes as a staged run's screening table: every row's pair in order.
pub fn screen_table(bytes: &[u8]) {
    if let Ok(rows) = lgate_rundir::parse_screen_table(bytes) {
        assert!(rows.iter().all(|r| r.i <= r.j));
    }
}

/// Reads bytes as a matrix file and checks that its CSV reads back bit for bit.
fn matrix_in(bytes: &[u8]) {
    let Ok(read) = lgate_matrix::read_matrix_bytes(path(), bytes) else {
        return;
    };
    let matrix = read.matrix;
    let n = matrix.len();
    assert_eq!(matrix.labels().len(), n);
    let csv = matrix.to_csv();
    let again = lgate_matrix::read_matrix_bytes(path(), csv.as_bytes())
        .unwrap_or_else(|e| panic!("the CSV of a matrix read does not read: {e}\n{csv}"))
        .matrix;
    assert_eq!(again.len(), n);
    assert_eq!(again.labels(), matrix.labels(), "labels change through CSV");
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                again.get(i, j).to_bits(),
                matrix.get(i, j).to_bits(),
                "cell ({i}, {j}) changes through CSV"
            );
        }
    }
    let (symmetric, _) = matrix.symmetrized();
    assert_eq!(symmetric.len(), n);
}

/// Reads bytes as a pair list and checks what it gives: every rank named, one host per rank
/// when hosts are named, symmetric matrices with a zero diagonal and spreads of the same shape.
pub fn pair_list(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(table) = lgate_matrix::read_pairs(path(), &text) {
        check_pair_table(&table);
    }
}

/// Reads bytes as a Parquet pair list (the magic bytes put in front of whatever comes).
pub fn pair_list_parquet(bytes: &[u8]) {
    let bytes = if bytes.starts_with(b"PAR1") {
        bytes.to_vec()
    } else {
        [b"PAR1".as_slice(), bytes].concat()
    };
    if let Ok(table) = lgate_matrix::read_pairs_bytes(path(), bytes) {
        check_pair_table(&table);
    }
}

/// Reads bytes as mpiGraph's output: what is accepted has a host per rank, square tables, a
/// zero diagonal and positive, finite bandwidths off it.
pub fn mpigraph_output(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let Ok(run) = lgate_matrix::mpigraph::read_mpigraph(path(), &text) else {
        return;
    };
    let n = run.hosts.len();
    assert!(n >= 2);
    for table in [&run.send, &run.recv] {
        assert_eq!(table.dim(), (n, n));
        for ((i, j), v) in table.indexed_iter() {
            assert!(v.is_finite());
            assert!(if i == j { *v == 0.0 } else { *v > 0.0 });
        }
    }
}

/// What every pair list the readers accept must hold.
fn check_pair_table(table: &lgate_matrix::PairTable) {
    let n = table.ranks;
    assert!(n >= 2);
    assert!(!table.sizes.is_empty());
    if let Some(hosts) = &table.hosts {
        assert_eq!(hosts.len(), n);
    }
    for m in &table.sizes {
        assert_eq!(m.median.len(), n);
        assert_eq!(m.spread.dim(), (n, n));
        assert!(m.repeats >= 1);
        for i in 0..n {
            assert_eq!(m.median.get(i, i), 0.0);
            for j in 0..n {
                assert_eq!(m.median.get(i, j).to_bits(), m.median.get(j, i).to_bits());
            }
        }
    }
}

/// Reads bytes as a CSV matrix file.
pub fn matrix_csv(bytes: &[u8]) {
    matrix_in(bytes);
}

/// Reads bytes as a `.npy` matrix file (the magic bytes put in front of whatever comes).
pub fn matrix_npy(bytes: &[u8]) {
    if bytes.starts_with(b"\x93NUMPY") {
        matrix_in(bytes);
    } else {
        let mut file = b"\x93NUMPY".to_vec();
        file.extend_from_slice(bytes);
        matrix_in(&file);
    }
}

/// Reads bytes as a run's meta.json and checks that it writes and reads again.
pub fn run_meta(bytes: &[u8]) {
    let Some(text) = text(bytes) else { return };
    let Ok(meta) = lgate_rundir::RunMeta::parse(text, path()) else {
        return;
    };
    let _ = meta.known_placement();
    let _ = meta.plan_differences(&meta);
    let json = meta.to_json();
    let again = std::str::from_utf8(&json).expect("meta.json is UTF-8");
    lgate_rundir::RunMeta::parse(again, path())
        .unwrap_or_else(|e| panic!("meta.json written does not read: {e}\n{again}"));
}

/// Reads bytes as a run's journal, either format; every entry read is written again in each
/// format and must read back.
pub fn run_journal(bytes: &[u8]) {
    if let Ok(read) = lgate_rundir::parse_journal(bytes, path()) {
        assert!(read.complete_len as usize <= bytes.len());
        assert_eq!(read.torn_tail, read.complete_len as usize != bytes.len());
        for format in lgate_rundir::JournalFormat::ALL {
            let mut again = match format {
                lgate_rundir::JournalFormat::Binary => lgate_rundir::journal_binary::MAGIC.to_vec(),
                lgate_rundir::JournalFormat::Json => Vec::new(),
            };
            for e in &read.entries {
                format.encode(e, &mut again);
            }
            let back = lgate_rundir::parse_journal(&again[..], path())
                .unwrap_or_else(|e| panic!("a journal written does not read: {e}"));
            assert_eq!(back.entries.len(), read.entries.len());
            assert!(!back.torn_tail);
        }
    }
}

/// Reads bytes as a run's matrices/index.json.
pub fn matrix_index(bytes: &[u8]) {
    let Some(text) = text(bytes) else { return };
    if let Ok(index) = lgate_rundir::MatrixIndex::parse(text, path()) {
        let _ = index.default_candidates();
        let _ = index.default_matrix();
        if let Some(mask) = &index.measured {
            assert!((0.0..=1.0).contains(&mask.filled_share()));
        }
        for name in index.names() {
            assert!(
                index.find(name).is_some(),
                "`{name}` is listed but not found"
            );
        }
    }
}

/// Reads bytes as known placement.
pub fn known_placement(bytes: &[u8]) {
    let Some(text) = text(bytes) else { return };
    if let Ok(placement) = lgate_rundir::KnownPlacement::parse(text, path()) {
        let _ = format!("{placement:?}");
    }
}

/// Reads bytes as a machine model and checks that it writes and reads again.
pub fn machine_model(bytes: &[u8]) {
    let Some(text) = text(bytes) else { return };
    let Ok(model) = lgate_simulate::model::MachineModel::parse(text, path()) else {
        return;
    };
    let _ = model.ranks();
    let json = model.to_json();
    let again = lgate_simulate::model::MachineModel::parse(&json, path())
        .unwrap_or_else(|e| panic!("a model written does not read: {e}\n{json}"));
    assert_eq!(again, model);
}

/// Reads bytes as a broadcast tuning file.
pub fn bcast_tuning(bytes: &[u8]) {
    let Some(text) = text(bytes) else { return };
    if let Ok(tuning) = <lgate_bcast::Tuning as BroadcastTable>::parse(text) {
        let _ = tuning.table(|b| b.to_string());
        let _ = tuning.wrong_bytes();
        for len in [0, 1, 4096, usize::MAX] {
            let _ = tuning.range_for(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for f in FORMATS {
            assert_eq!(format(f.name).map(|g| g.name), Some(f.name));
        }
        let mut names: Vec<_> = FORMATS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
    }

    #[test]
    fn same_groups_ignores_order_and_tells_other_groups() {
        let g = |r: &[usize]| TopologyNode::group(r.to_vec());
        let a = TopologyNode::cluster(vec![g(&[0, 1]), g(&[2, 3])]);
        let b = TopologyNode::cluster(vec![g(&[3, 2]), g(&[1, 0])]);
        let c = TopologyNode::cluster(vec![g(&[0, 2]), g(&[1, 3])]);
        let d = TopologyNode::cluster(vec![g(&[0, 1]), g(&[2])]);
        assert!(same_groups(4, &a, &b));
        assert!(!same_groups(4, &a, &c));
        assert!(!same_groups(4, &a, &d));
        assert!(!same_groups(3, &a, &a), "a rank past the count");
    }
}
