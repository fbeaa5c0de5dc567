//! Reads a host's facts (CPU, caches, memory, frequency policy) from `/proc` and `/sys`, once
//! per host, outside timed code.
//!
//! The files are read under a root folder, `/` on a real host; tests give a fake tree, and
//! `LGATE_HOST_ROOT` points a run at one. A missing or unreadable file leaves its fact unknown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lgate_rundir::{parse_cpu_list, CacheFacts, FrequencyFacts, HostFacts};
use lgate_topology::RankList;

/// The variable that points the reading of host facts at another root folder (a fake tree).
pub const HOST_ROOT_VAR: &str = "LGATE_HOST_ROOT";

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn number(root: &Path, path: &str) -> Option<u64> {
    read(root, path)?.parse().ok()
}

/// A CPU list compressed as the kernel writes it.
fn cpu_text(cpus: &BTreeSet<usize>) -> String {
    let v: Vec<usize> = cpus.iter().copied().collect();
    RankList(&v).to_string()
}

/// A cache size as sysfs gives it (`32K`, `1M`, `1024`) in KiB.
fn size_kib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().ok()?;
    match unit.trim() {
        "K" | "KB" | "KiB" => Some(n),
        "M" | "MB" | "MiB" => Some(n * 1024),
        "G" | "GB" | "GiB" => Some(n * 1024 * 1024),
        "" => Some(n / 1024),
        _ => None,
    }
}

/// The CPU model: `model name` (x86), `Model` or `cpu model` (ARM boards, MIPS).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "cpu model", "Processor"] {
        let found = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The kernel release (`uname -r`) of the host under `root`.
pub fn kernel(root: &Path) -> Option<String> {
    read(root, "proc/sys/kernel/osrelease")
}

/// The operating system's name (`PRETTY_NAME` of os-release) of the host under `root`.
pub fn os_name(root: &Path) -> Option<String> {
    read(root, "etc/os-release").and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    })
}

/// The facts of the host whose `/proc` and `/sys` are under `root`, named `host`.
pub fn read_host_facts(root: &Path, host: &str) -> HostFacts {
    let cpu_dir = "sys/devices/system/cpu";
    let online: Option<Vec<usize>> = read(root, &format!("{cpu_dir}/online"))
        .and_then(|l| parse_cpu_list(&l))
        .or_else(|| {
            // Without `online`, the cpuN folders.
            let mut v: Vec<usize> = std::fs::read_dir(root.join(cpu_dir))
                .ok()?
                .filter_map(|e| {
                    let name = e.ok()?.file_name();
                    name.to_str()?.strip_prefix("cpu")?.parse().ok()
                })
                .collect();
            v.sort_unstable();
            (!v.is_empty()).then_some(v)
        });
    let cpus = online.clone().unwrap_or_default();

    let mut packages: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    let mut cores: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut topology_known = !cpus.is_empty();
    // (level, type) -> (size, the sharing lists).
    let mut caches: BTreeMap<(u32, String), (Option<u64>, BTreeSet<String>)> = BTreeMap::new();
    for &c in &cpus {
        let t = |f: &str| number(root, &format!("{cpu_dir}/cpu{c}/topology/{f}"));
        match (t("physical_package_id"), t("core_id")) {
            (Some(p), Some(core)) => {
                packages.entry(p as usize).or_default().insert(c);
                cores.insert((p as usize, core as usize));
            }
            _ => topology_known = false,
        }
        let Ok(entries) = std::fs::read_dir(root.join(format!("{cpu_dir}/cpu{c}/cache"))) else {
            continue;
        };
        let mut indices: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("index"))
            .collect();
        indices.sort();
        for index in indices {
            let base = format!("{cpu_dir}/cpu{c}/cache/{index}");
            let (Some(level), Some(kind)) = (
                number(root, &format!("{base}/level")),
                read(root, &format!("{base}/type")),
            ) else {
                continue;
            };
            let entry = caches.entry((level as u32, kind)).or_default();
            if entry.0.is_none() {
                entry.0 = read(root, &format!("{base}/size")).and_then(|s| size_kib(&s));
            }
            if let Some(shared) = read(root, &format!("{base}/shared_cpu_list")) {
                entry.1.insert(shared);
            }
        }
    }

    let mut numa_cpus = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(root.join("sys/devices/system/node")) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(n) = name
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if let Some(list) = read(root, &format!("sys/devices/system/node/node{n}/cpulist")) {
                numa_cpus.insert(n, list);
            }
        }
    }

    let smt = match read(root, &format!("{cpu_dir}/smt/active")).as_deref() {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => (topology_known && !cores.is_empty()).then_some(cpus.len() > cores.len()),
    };
    let memory_kib = read(root, "proc/meminfo").and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    });

    HostFacts {
        host: host.to_string(),
        kernel: kernel(root),
        os: os_name(root),
        cpu_model: read(root, "proc/cpuinfo").and_then(|t| cpu_model(&t)),
        sockets: (topology_known && !packages.is_empty()).then_some(packages.len()),
        cores: (topology_known && !cores.is_empty()).then_some(cores.len()),
        threads: online.as_ref().map(Vec::len),
        smt,
        online_cpus: online.map(|v| cpu_text(&v.into_iter().collect())),
        socket_cpus: if topology_known {
            packages.iter().map(|(&p, c)| (p, cpu_text(c))).collect()
        } else {
            BTreeMap::new()
        },
        numa_cpus,
        memory_kib,
        caches: caches
            .into_iter()
            .map(|((level, kind), (size_kib, shared))| CacheFacts {
                level,
                kind,
                size_kib,
                shared_by: shared.into_iter().collect(),
            })
            .collect(),
        frequency: frequency(root),
    }
}

/// The frequency policy: the first policy's driver and limits, every policy's governor, and
/// the boost switch of whichever driver exposes one.
fn frequency(root: &Path) -> FrequencyFacts {
    let base = "sys/devices/system/cpu/cpufreq";
    let mut policies: Vec<(usize, String)> = std::fs::read_dir(root.join(base))
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.to_string();
                    Some((name.strip_prefix("policy")?.parse().ok()?, name))
                })
                .collect()
        })
        .unwrap_or_default();
    policies.sort();
    let first = policies.first().map(|(_, p)| format!("{base}/{p}"));
    let of_first = |f: &str| first.as_ref().and_then(|p| read(root, &format!("{p}/{f}")));
    let governors: BTreeSet<String> = policies
        .iter()
        .filter_map(|(_, p)| read(root, &format!("{base}/{p}/scaling_governor")))
        .collect();
    let boost = match (
        read(root, &format!("{base}/boost")),
        read(root, "sys/devices/system/cpu/intel_pstate/no_turbo"),
    ) {
        (Some(b), _) => Some(b == "1"),
        (None, Some(no_turbo)) => Some(no_turbo == "0"),
        (None, None) => None,
    };
    FrequencyFacts {
        driver: of_first("scaling_driver"),
        governor: (!governors.is_empty())
            .then(|| governors.into_iter().collect::<Vec<_>>().join(",")),
        min_khz: of_first("scaling_min_freq").and_then(|v| v.parse().ok()),
        max_khz: of_first("scaling_max_freq").and_then(|v| v.parse().ok()),
        current_khz: of_first("scaling_cur_freq").and_then(|v| v.parse().ok()),
        boost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_in_every_unit_sysfs_uses() {
        assert_eq!(size_kib("32K"), Some(32));
        assert_eq!(size_kib("1M"), Some(1024));
        assert_eq!(size_kib("2048"), Some(2));
        assert_eq!(size_kib("lots"), None);
    }

    #[test]
    fn the_model_name_of_x86_and_arm_cpuinfo() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7763\n").as_deref(),
            Some("AMD EPYC 7763")
        );
        assert_eq!(
            cpu_model("CPU part\t: 0xd0c\nModel\t: Raspberry Pi 4\n").as_deref(),
            Some("Raspberry Pi 4")
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
    }
}
