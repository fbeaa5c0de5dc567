//! Where a rank runs, and how the job was launched, read from /proc and /sys outside timed code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use lgate_rundir::{LauncherInfo, RankInfo, SystemInfo};

use lgate_transport::Transport;

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_number(path: impl AsRef<Path>) -> Option<usize> {
    read_trimmed(path)?.parse().ok()
}

/// The CPU this process last ran on (field 39 of /proc/self/stat).
fn current_cpu() -> Option<usize> {
    let stat = read_trimmed("/proc/self/stat")?;
    // The command name may hold spaces; fields are counted after its closing parenthesis.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(36)?.parse().ok()
}

/// The CPUs this process may run on, as the kernel lists them (`0-3,8`).
fn allowed_cpus() -> Option<String> {
    let status = read_trimmed("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// The NUMA node of a CPU: the `nodeN` entry in its sysfs folder.
fn numa_node(cpu_dir: &Path) -> Option<usize> {
    std::fs::read_dir(cpu_dir).ok()?.find_map(|e| {
        let name = e.ok()?.file_name();
        name.to_str()?.strip_prefix("node")?.parse().ok()
    })
}

/// The CPUs of a CPU list (`0-3,8`, as `Cpus_allowed_list` gives it); `None` when it does
/// not parse.
pub fn cpu_list(cpuset: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in cpuset.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 1 << 20 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The one CPU a rank is bound to, if its CPU list holds exactly one.
pub fn single_cpu(cpuset: &str) -> Option<usize> {
    match cpu_list(cpuset)?.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// Per rank, whether its host may have more ranks in pair tests at once than CPUs to run them
/// on: then every MPI wait there must yield. At most two ranks of a host are in one group's
/// test, and groups test side by side, so the busiest moment has, per host, the sum over the
/// leaf `groups` of the least of 2 and the group's ranks on that host (higher levels merge
/// groups, never adding tests); the CPUs are those the host's ranks may use. Ranks whose CPUs
/// are unknown count as overcommitted only if the count of active ranks exceeds 1.
pub fn overcommitted(infos: &[RankInfo], groups: &[&[usize]]) -> Vec<bool> {
    let mut hosts: Vec<&str> = Vec::new();
    let host_of: Vec<usize> = infos
        .iter()
        .map(|i| match hosts.iter().position(|h| *h == i.host) {
            Some(k) => k,
            None => {
                hosts.push(&i.host);
                hosts.len() - 1
            }
        })
        .collect();
    let mut cpus = vec![std::collections::BTreeSet::new(); hosts.len()];
    for (i, info) in infos.iter().enumerate() {
        if let Some(list) = info.cpuset.as_deref().and_then(cpu_list) {
            cpus[host_of[i]].extend(list);
        }
    }
    let mut active = vec![0usize; hosts.len()];
    for g in groups {
        let mut per_host = vec![0usize; hosts.len()];
        for &r in g.iter().filter(|&&r| r < infos.len()) {
            per_host[host_of[r]] += 1;
        }
        for (h, n) in per_host.into_iter().enumerate() {
            active[h] += n.min(2);
        }
    }
    let over: Vec<bool> = (0..hosts.len())
        .map(|h| active[h] > cpus[h].len().max(1))
        .collect();
    host_of.iter().map(|&h| over[h]).collect()
}

/// The groups, CPUs and host names seen on one machine.
type MachineShare<'a> = (Vec<usize>, BTreeSet<usize>, BTreeSet<&'a str>);

/// When groups that a staged plan tests side by side share one machine's CPUs (hosts that are
/// containers or network namespaces of one machine, known by its boot id): the most pair
/// tests to run at once, half the CPUs of the smallest such machine (at least 1), and why.
pub fn shared_machine_concurrency(
    infos: &[RankInfo],
    groups: &[Vec<usize>],
) -> Option<(usize, String)> {
    let mut machines: BTreeMap<&str, MachineShare> = BTreeMap::new();
    for (g, members) in groups.iter().enumerate() {
        for &r in members {
            let Some(info) = infos.get(r) else { continue };
            let Some(machine) = info.machine.as_deref() else {
                continue;
            };
            let entry = machines.entry(machine).or_default();
            if entry.0.last() != Some(&g) {
                entry.0.push(g);
            }
            entry.2.insert(&info.host);
            if let Some(list) = info.cpuset.as_deref().and_then(cpu_list) {
                entry.1.extend(list);
            }
        }
    }
    machines
        .values()
        .filter(|(groups, _, _)| groups.len() > 1)
        .map(|(groups, cpus, hosts)| {
            let n = (cpus.len() / 2).max(1);
            let why = format!(
                "{} groups on {} host name(s) share one machine with {} CPUs: at most {n} pair \
                 test(s) at once",
                groups.len(),
                hosts.len(),
                cpus.len()
            );
            (n, why)
        })
        .min_by_key(|(n, _)| *n)
}

/// Per rank, its host (as an index) and the one CPU it is bound to, when it is bound to one:
/// two ranks with the same value can only run by turns.
pub fn bound_cpus(infos: &[RankInfo]) -> Vec<Option<(usize, usize)>> {
    let mut hosts: Vec<&str> = Vec::new();
    infos
        .iter()
        .map(|i| {
            let host = match hosts.iter().position(|h| *h == i.host) {
                Some(k) => k,
                None => {
                    hosts.push(&i.host);
                    hosts.len() - 1
                }
            };
            Some((host, i.cpuset.as_deref().and_then(single_cpu)?))
        })
        .collect()
}

/// The placement of the calling rank.
pub fn this_rank(transport: &dyn Transport) -> RankInfo {
    let cpu = current_cpu();
    let cpu_dir = cpu.map(|c| Path::new("/sys/devices/system/cpu").join(format!("cpu{c}")));
    let topo = |file: &str| {
        cpu_dir
            .as_ref()
            .and_then(|d| read_number(d.join("topology").join(file)))
    };
    RankInfo {
        rank: transport.rank(),
        host: transport.processor_name(),
        pid: Some(std::process::id()),
        cpu,
        cpuset: allowed_cpus(),
        core: topo("core_id"),
        socket: topo("physical_package_id"),
        numa: cpu_dir.as_deref().and_then(numa_node),
        governor: cpu_dir
            .as_ref()
            .and_then(|d| read_trimmed(d.join("cpufreq/scaling_governor"))),
        machine: read_trimmed(Path::new("/proc/sys/kernel/random/boot_id")),
        extra: BTreeMap::new(),
    }
}

/// Variables that describe the launch, and only those (never the whole environment).
const LAUNCH_PREFIXES: &[&str] = &[
    "SLURM_",
    "OMPI_COMM_WORLD_",
    "OMPI_UNIVERSE_SIZE",
    "OMPI_MCA_",
    "PMIX_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALNRANKS",
    "MPI_LOCALRANKID",
    "HYDI_CONTROL_FD",
];

/// How the job was launched, seen from the calling rank.
pub fn launcher() -> LauncherInfo {
    let environment: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| LAUNCH_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect();
    let kind =
        if environment.contains_key("SLURM_STEP_ID") || environment.contains_key("SLURM_JOB_ID") {
            "slurm"
        } else if environment
            .keys()
            .any(|k| k.starts_with("OMPI_") || k.starts_with("PMI"))
        {
            "mpirun"
        } else {
            "unknown"
        };
    LauncherInfo {
        kind: kind.into(),
        command_line: launcher_command_line(),
        environment,
    }
}

/// The command line of the nearest ancestor that is a launcher (mpirun, mpiexec, srun, ...).
fn launcher_command_line() -> Option<String> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..4 {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<String> = raw
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let program = args
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string());
        if let Some(p) = program {
            if [
                "mpirun",
                "mpiexec",
                "orterun",
                "prterun",
                "srun",
                "mpiexec.hydra",
            ]
            .contains(&p.as_str())
            {
                return Some(args.join(" "));
            }
        }
        let stat = read_trimmed(format!("/proc/{pid}/stat"))?;
        let after = &stat[stat.rfind(')')? + 1..];
        pid = after.split_whitespace().nth(1)?.parse().ok()?;
        if pid <= 1 {
            return None;
        }
    }
    None
}

/// The operating system of the calling rank's host.
pub fn system() -> SystemInfo {
    let os = read_trimmed("/etc/os-release").and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
    SystemInfo {
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        os,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lgate_transport::InProcessWorld;

    #[test]
    fn single_cpus_are_told_from_lists() {
        assert_eq!(single_cpu("3"), Some(3));
        assert_eq!(single_cpu("5-5"), Some(5));
        assert_eq!(single_cpu("0-1"), None);
        assert_eq!(single_cpu("0,4"), None);
        assert_eq!(single_cpu(""), None);
        let info = |host: &str, cpuset: &str| RankInfo {
            rank: 0,
            host: host.into(),
            pid: None,
            cpu: None,
            cpuset: Some(cpuset.into()),
            core: None,
            socket: None,
            numa: None,
            governor: None,
            machine: None,
            extra: BTreeMap::new(),
        };
        let bound = bound_cpus(&[
            info("a", "0"),
            info("a", "0-1"),
            info("b", "0"),
            info("a", "0"),
        ]);
        assert_eq!(bound, [Some((0, 0)), None, Some((1, 0)), Some((0, 0))]);
    }

    #[test]
    fn reads_this_machine() {
        let t = InProcessWorld::new(1).endpoint(0);
        let info = this_rank(&t);
        assert_eq!(info.host, "localhost");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(info.cpu.is_some_and(|c| c < 4096), "{info:?} of {cpus}");
        assert!(info.cpuset.is_some());
        assert!(system().kernel.is_some());
    }
}
