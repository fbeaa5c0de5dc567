//! Host facts read from fake `/proc` and `/sys` trees: a host with cpufreq, a host without
//! (as virtual machines are), and a host with SMT off. Every recorded field is checked.

use std::path::Path;

use lgate_harness::host_facts::read_host_facts;
use lgate_rundir::{odd_hosts, CacheFacts, FrequencyFacts, HostFacts};

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{text}\n")).unwrap();
}

/// A host of `sockets` x `cores` cores with `threads` threads each, CPUs numbered as Linux
/// does on x86 (the second thread of every core after all first threads), one NUMA node per
/// socket, an L1d and L2 per core and an L3 per socket.
fn host_tree(root: &Path, sockets: usize, cores: usize, threads: usize, smt_active: Option<&str>) {
    let per_thread = sockets * cores;
    let n = per_thread * threads;
    write(root, "proc/sys/kernel/osrelease", "6.1.0-test");
    write(
        root,
        "etc/os-release",
        "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"",
    );
    write(
        root,
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n",
    );
    write(
        root,
        "proc/meminfo",
        "MemTotal:       196608000 kB\nMemFree: 1 kB",
    );
    write(
        root,
        "sys/devices/system/cpu/online",
        &format!("0-{}", n - 1),
    );
    if let Some(a) = smt_active {
        write(root, "sys/devices/system/cpu/smt/active", a);
    }
    for cpu in 0..n {
        let core_index = cpu % per_thread;
        let (socket, core) = (core_index / cores, core_index % cores);
        let base = format!("sys/devices/system/cpu/cpu{cpu}");
        write(
            root,
            &format!("{base}/topology/physical_package_id"),
            &socket.to_string(),
        );
        write(root, &format!("{base}/topology/core_id"), &core.to_string());
        let siblings: Vec<String> = (0..threads)
            .map(|t| (core_index + t * per_thread).to_string())
            .collect();
        let socket_cpus = if threads == 1 {
            format!("{}-{}", socket * cores, socket * cores + cores - 1)
        } else {
            format!(
                "{}-{},{}-{}",
                socket * cores,
                socket * cores + cores - 1,
                per_thread + socket * cores,
                per_thread + socket * cores + cores - 1
            )
        };
        for (index, level, kind, size, shared) in [
            (0, 1, "Data", "48K", siblings.join(",")),
            (1, 2, "Unified", "1024K", siblings.join(",")),
            (2, 3, "Unified", "28M", socket_cpus.clone()),
        ] {
            let c = format!("{base}/cache/index{index}");
            write(root, &format!("{c}/level"), &level.to_string());
            write(root, &format!("{c}/type"), kind);
            write(root, &format!("{c}/size"), size);
            write(root, &format!("{c}/shared_cpu_list"), &shared);
        }
        if socket == 0 && cpu == 0 {
            write(root, "sys/devices/system/node/node0/cpulist", &socket_cpus);
        }
        if socket == 1 && core == 0 && cpu < per_thread {
            write(root, "sys/devices/system/node/node1/cpulist", &socket_cpus);
        }
    }
}

fn with_cpufreq(root: &Path, n: usize, governor: &str) {
    for p in 0..n {
        let base = format!("sys/devices/system/cpu/cpufreq/policy{p}");
        write(root, &format!("{base}/scaling_driver"), "intel_pstate");
        write(root, &format!("{base}/scaling_governor"), governor);
        write(root, &format!("{base}/scaling_min_freq"), "1000000");
        write(root, &format!("{base}/scaling_max_freq"), "3700000");
        write(root, &format!("{base}/scaling_cur_freq"), "2400123");
    }
    write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0");
}

#[test]
fn a_host_with_cpufreq_records_every_fact() {
    let dir = tempfile::tempdir().unwrap();
    host_tree(dir.path(), 2, 4, 2, Some("1"));
    with_cpufreq(dir.path(), 16, "performance");
    let f = read_host_facts(dir.path(), "c1");
    assert_eq!(f.host, "c1");
    assert_eq!(f.kernel.as_deref(), Some("6.1.0-test"));
    assert_eq!(f.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    assert_eq!(
        f.cpu_model.as_deref(),
        Some("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz")
    );
    assert_eq!(
        (f.sockets, f.cores, f.threads),
        (Some(2), Some(8), Some(16))
    );
    assert_eq!(f.smt, Some(true));
    assert_eq!(f.online_cpus.as_deref(), Some("0-15"));
    assert_eq!(f.socket_cpus[&0], "0-3,8-11");
    assert_eq!(f.socket_cpus[&1], "4-7,12-15");
    assert_eq!(f.numa_cpus.len(), 2);
    assert_eq!(f.numa_cpus[&1], "4-7,12-15");
    assert_eq!(f.memory_kib, Some(196_608_000));
    assert_eq!(f.caches.len(), 3);
    assert_eq!(
        f.caches[0],
        CacheFacts {
            level: 1,
            kind: "Data".into(),
            size_kib: Some(48),
            shared_by: {
                let mut v: Vec<String> = (0..8).map(|c| format!("{c},{}", c + 8)).collect();
                v.sort();
                v
            },
        }
    );
    assert_eq!(f.caches[2].size_kib, Some(28 * 1024));
    assert_eq!(f.caches[2].shared_by, ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(
        f.frequency,
        FrequencyFacts {
            driver: Some("intel_pstate".into()),
            governor: Some("performance".into()),
            min_khz: Some(1_000_000),
            max_khz: Some(3_700_000),
            current_khz: Some(2_400_123),
            boost: Some(true),
        }
    );
}

#[test]
fn a_host_without_cpufreq_has_its_frequency_unknown() {
    let dir = tempfile::tempdir().unwrap();
    host_tree(dir.path(), 1, 4, 1, None);
    let f = read_host_facts(dir.path(), "vm");
    assert_eq!((f.sockets, f.cores, f.threads), (Some(1), Some(4), Some(4)));
    // No smt/active file: told from the threads per core.
    assert_eq!(f.smt, Some(false));
    assert_eq!(f.frequency, FrequencyFacts::default());
    assert_eq!(f.caches.len(), 3);
    assert_eq!(f.caches[2].shared_by, ["0-3"]);
}

#[test]
fn a_host_with_smt_off_and_an_empty_tree() {
    let dir = tempfile::tempdir().unwrap();
    host_tree(dir.path(), 2, 4, 1, Some("0"));
    with_cpufreq(dir.path(), 8, "powersave");
    write(
        dir.path(),
        "sys/devices/system/cpu/intel_pstate/no_turbo",
        "1",
    );
    let f = read_host_facts(dir.path(), "c2");
    assert_eq!(f.smt, Some(false));
    assert_eq!((f.cores, f.threads), (Some(8), Some(8)));
    assert_eq!(f.frequency.governor.as_deref(), Some("powersave"));
    assert_eq!(f.frequency.boost, Some(false));
    // Nothing to read: every fact unknown, no error.
    let empty = tempfile::tempdir().unwrap();
    let none = read_host_facts(empty.path(), "x");
    assert_eq!(
        none,
        HostFacts {
            host: "x".into(),
            ..Default::default()
        }
    );
}

#[test]
fn one_host_of_four_with_another_governor_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut hosts = Vec::new();
    for (k, governor) in ["performance", "performance", "performance", "powersave"]
        .iter()
        .enumerate()
    {
        let root = dir.path().join(format!("h{k}"));
        host_tree(&root, 2, 4, 2, Some("1"));
        with_cpufreq(&root, 16, governor);
        hosts.push(read_host_facts(&root, &format!("h{k}")));
    }
    let odd = odd_hosts(&hosts);
    assert_eq!(odd.len(), 1, "{odd:?}");
    assert_eq!(
        (
            odd[0].host.as_str(),
            odd[0].fact.as_str(),
            odd[0].value.as_str()
        ),
        ("h3", "governor", "powersave")
    );
}
