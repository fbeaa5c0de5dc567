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
    lgate_rundir::parse_cpu_list(cpuset)
}

/// The one CPU a rank is bound to, if its CPU list holds exactly one.
pub fn single_cpu(cpuset: &str) -> Option<usize> {
    match cpu_list(cpuset)?.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The distinct hosts in order of first appearance, and per rank the index of its host.
fn host_indices(infos: &[RankInfo]) -> (Vec<&str>, Vec<usize>) {
    let mut hosts: Vec<&str> = Vec::new();
    let host_of = infos
        .iter()
        .map(|i| match hosts.iter().position(|h| *h == i.host) {
            Some(k) => k,
            None => {
                hosts.push(&i.host);
                hosts.len() - 1
            }
        })
        .collect();
    (hosts, host_of)
}

/// Per rank, whether its host may have more ranks in pair tests at once than CPUs to run them
/// on: then every MPI wait there must yield. At most two ranks of a host are in one group's
/// test, and groups test side by side, so the busiest moment has, per host, the sum over the
/// leaf `groups` of the least of 2 and the group's ranks on that host (higher levels merge
/// groups, never adding tests); the CPUs are those the host's ranks may use. Ranks whose CPUs
/// are unknown count as overcommitted only if the count of active ranks exceeds 1.
pub fn overcommitted(infos: &[RankInfo], groups: &[&[usize]]) -> Vec<bool> {
    let (hosts, host_of) = host_indices(infos);
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

/// Per rank, when its host's ranks may float over more than one CPU and outnumber the host's
/// CPUs: its host (as an index) and the two CPUs that the tests this rank sends run on (the
/// sender's, then the receiver's).
///
/// Ranks free to float are stacked by the scheduler as it likes: beside busy processes it may put
/// the two ranks of a test on one CPU, where they run by turns and each round trip waits out two
/// time slices (8 ms instead of a microsecond, here). Pinned to two CPUs for the test, each
/// shares its CPU only with what else runs there. Each leaf group on a host gets its own two
/// CPUs (counted from the host's lowest, wrapping round), so groups tested side by side do not
/// pin onto each other; a test across groups runs on its sender's group's CPUs. Hosts whose
/// groups may keep more ranks busy than CPUs ([`overcommitted`]) and hosts of one CPU get none.
pub fn test_cpus(infos: &[RankInfo], groups: &[&[usize]]) -> Vec<Option<(usize, usize, usize)>> {
    let (hosts, host_of) = host_indices(infos);
    let mut cpus = vec![BTreeSet::new(); hosts.len()];
    let mut floating = vec![true; hosts.len()];
    let mut ranks = vec![0usize; hosts.len()];
    for (i, info) in infos.iter().enumerate() {
        let h = host_of[i];
        ranks[h] += 1;
        match info.cpuset.as_deref().and_then(cpu_list) {
            Some(list) if list.len() > 1 => cpus[h].extend(list),
            _ => floating[h] = false,
        }
    }
    let over = overcommitted(infos, groups);
    let eligible: Vec<bool> = (0..hosts.len())
        .map(|h| floating[h] && cpus[h].len() >= 2 && ranks[h] > cpus[h].len())
        .collect();
    let cpus: Vec<Vec<usize>> = cpus.into_iter().map(|c| c.into_iter().collect()).collect();
    let mut out = vec![None; infos.len()];
    let mut slots = vec![0usize; hosts.len()];
    for g in groups {
        let mut seen = BTreeSet::new();
        for &r in g.iter().filter(|&&r| r < infos.len()) {
            let h = host_of[r];
            if !eligible[h] || over[r] {
                continue;
            }
            if seen.insert(h) {
                slots[h] += 1;
            }
            let (list, slot) = (&cpus[h], slots[h] - 1);
            out[r] = Some((
                h,
                list[(2 * slot) % list.len()],
                list[(2 * slot + 1) % list.len()],
            ));
        }
    }
    out
}

/// The CPUs the calling thread may run on, to put back after [`CpuMask::pin`].
pub struct CpuMask(libc::cpu_set_t);

impl CpuMask {
    /// The calling thread's CPUs now; `None` where the system does not tell.
    pub fn current() -> Option<CpuMask> {
        // SAFETY: cpu_set_t is plain bits; sched_getaffinity fills at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
                .then_some(CpuMask(set))
        }
    }

    /// Whether `cpu` is one of these CPUs.
    pub fn contains(&self, cpu: usize) -> bool {
        // SAFETY: CPU_ISSET reads the set's bits; cpus past its size are refused first.
        cpu < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(cpu, &self.0) }
    }

    /// Binds the calling thread to `cpu` alone; false when the system refuses.
    pub fn pin(cpu: usize) -> bool {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: a zeroed cpu_set_t with one bit set, passed with its own size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }

    /// Lets the calling thread run on these CPUs again.
    pub fn restore(&self) {
        // SAFETY: a set read by sched_getaffinity, passed with its own size.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0);
        }
    }
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
    let (_, host_of) = host_indices(infos);
    infos
        .iter()
        .zip(host_of)
        .map(|(i, host)| Some((host, i.cpuset.as_deref().and_then(single_cpu)?)))
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
                "mpirun.mpich",
                "mpiexec.mpich",
                "mpirun.openmpi",
                "mpiexec.openmpi",
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
    let root = Path::new("/");
    SystemInfo {
        kernel: crate::host_facts::kernel(root),
        os: crate::host_facts::os_name(root),
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
        let info = floating;
        let bound = bound_cpus(&[
            info("a", "0"),
            info("a", "0-1"),
            info("b", "0"),
            info("a", "0"),
        ]);
        assert_eq!(bound, [Some((0, 0)), None, Some((1, 0)), Some((0, 0))]);
    }

    fn floating(host: &str, cpuset: &str) -> RankInfo {
        RankInfo {
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
        }
    }

    #[test]
    fn floating_ranks_that_outnumber_cpus_test_on_two_cpus_per_group() {
        // Four ranks floating over two CPUs, one group: every test on CPUs 0 and 1.
        let four: Vec<RankInfo> = (0..4).map(|_| floating("a", "0-1")).collect();
        let all: &[usize] = &[0, 1, 2, 3];
        assert_eq!(test_cpus(&four, &[all]), vec![Some((0, 0, 1)); 4]);
        // Six ranks over four CPUs in two groups tested side by side: a pair of CPUs each.
        let six: Vec<RankInfo> = (0..6).map(|_| floating("a", "0-3")).collect();
        let (g1, g2): (&[usize], &[usize]) = (&[0, 1, 2], &[3, 4, 5]);
        let cpus = test_cpus(&six, &[g1, g2]);
        assert_eq!(cpus[..3], [Some((0, 0, 1)); 3]);
        assert_eq!(cpus[3..], [Some((0, 2, 3)); 3]);
        // As many CPUs as ranks: the scheduler has room, nothing pinned.
        let roomy: Vec<RankInfo> = (0..4).map(|_| floating("a", "0-3")).collect();
        assert_eq!(test_cpus(&roomy, &[all]), vec![None; 4]);
        // Bound ranks stay as the launcher bound them; so does a host with a bound rank.
        let mut mixed = four.clone();
        mixed[2] = floating("a", "1");
        assert_eq!(test_cpus(&mixed, &[all]), vec![None; 4]);
        // Three groups of two on two CPUs keep more ranks busy than CPUs: they yield instead.
        let (a, b, c): (&[usize], &[usize], &[usize]) = (&[0, 1], &[2, 3], &[4, 5]);
        let crowded: Vec<RankInfo> = (0..6).map(|_| floating("a", "0-1")).collect();
        assert_eq!(test_cpus(&crowded, &[a, b, c]), vec![None; 6]);
        // Hosts are counted apart.
        let two_hosts: Vec<RankInfo> = (0..6)
            .map(|r| floating(if r < 3 { "a" } else { "b" }, "0-1"))
            .collect();
        let cpus = test_cpus(&two_hosts, &[&[0, 1, 2, 3, 4, 5]]);
        assert_eq!(cpus[..3], [Some((0, 0, 1)); 3]);
        assert_eq!(cpus[3..], [Some((1, 0, 1)); 3]);
    }

    fn current_thread_cpu() -> Option<usize> {
        // SAFETY: sched_getcpu takes nothing and returns a number.
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).ok()
    }

    #[test]
    fn a_pinned_thread_runs_where_pinned_and_is_let_go() {
        let mask = CpuMask::current().expect("Linux tells a thread's CPUs");
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .find(|&c| mask.contains(c))
            .expect("a CPU");
        std::thread::spawn(move || {
            assert!(CpuMask::pin(cpu));
            assert_eq!(current_thread_cpu(), Some(cpu));
            mask.restore();
            let again = CpuMask::current().unwrap();
            let allowed = |m: &CpuMask| (0..1024).filter(|&c| m.contains(c)).count();
            assert_eq!(allowed(&again), allowed(&mask));
        })
        .join()
        .unwrap();
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
