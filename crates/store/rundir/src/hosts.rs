//! Host facts: what each host of a run is (CPU, caches, memory, frequency policy), recorded
//! once per host, and the hosts whose facts differ from the rest.
//!
//! The studies of run-time variability this project follows found that a node with frequency
//! scaling off ran 8.5 % slower and looked like topology when nobody had recorded why. So every
//! run records these facts, and the hosts that differ from the majority are named next to the
//! slow hosts the measurements find. A fact that could not be read (virtual machines often
//! expose no cpufreq) is `None`: unknown, never an error. Size: one entry per host, a few
//! hundred bytes plus a cache sharing list per cache instance (about 2 KiB for a 64-core host).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::RankInfo;

/// What one host is, read once per host outside timed code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// The host name, as the ranks' placement names it.
    pub host: String,
    /// Kernel release (`uname -r`).
    #[serde(default)]
    pub kernel: Option<String>,
    /// Operating system name.
    #[serde(default)]
    pub os: Option<String>,
    /// CPU model name (`/proc/cpuinfo`).
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// Sockets (physical packages) with online CPUs.
    #[serde(default)]
    pub sockets: Option<usize>,
    /// Physical cores online.
    #[serde(default)]
    pub cores: Option<usize>,
    /// Hardware threads (logical CPUs) online.
    #[serde(default)]
    pub threads: Option<usize>,
    /// Whether simultaneous multithreading is active.
    #[serde(default)]
    pub smt: Option<bool>,
    /// The online CPUs (`0-63`).
    #[serde(default)]
    pub online_cpus: Option<String>,
    /// Per socket id, its CPUs (`0-15,32-47`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub socket_cpus: BTreeMap<usize, String>,
    /// Per NUMA node, its CPUs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub numa_cpus: BTreeMap<usize, String>,
    /// Memory, KiB (`MemTotal`).
    #[serde(default)]
    pub memory_kib: Option<u64>,
    /// The caches, one entry per level and type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<CacheFacts>,
    /// The frequency policy.
    #[serde(default)]
    pub frequency: FrequencyFacts,
}

/// One level and type of cache on a host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheFacts {
    /// 1, 2, 3, ...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size of one instance, KiB.
    #[serde(default)]
    pub size_kib: Option<u64>,
    /// The CPUs sharing each instance (`0-7`, `8-15`, ...).
    #[serde(default)]
    pub shared_by: Vec<String>,
}

/// A host's CPU frequency policy, as `/sys/devices/system/cpu/cpufreq` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrequencyFacts {
    /// The scaling driver (`intel_pstate`, `acpi-cpufreq`, `amd-pstate`, ...).
    #[serde(default)]
    pub driver: Option<String>,
    /// The governor of every policy, or the distinct ones joined by `,` when they differ.
    #[serde(default)]
    pub governor: Option<String>,
    /// The lowest frequency the policy allows, kHz.
    #[serde(default)]
    pub min_khz: Option<u64>,
    /// The highest frequency the policy allows, kHz.
    #[serde(default)]
    pub max_khz: Option<u64>,
    /// The frequency of the first CPU when read, kHz.
    #[serde(default)]
    pub current_khz: Option<u64>,
    /// Whether turbo or boost is allowed.
    #[serde(default)]
    pub boost: Option<bool>,
}

/// A fact of one host that differs from what most hosts have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OddFact {
    /// The fact, as [`HostFacts::fields`] names it (`governor`, `smt`, ...).
    pub fact: String,
    /// The host.
    pub host: String,
    /// Its value on most hosts.
    pub usual: String,
    /// How many hosts have the usual value, of how many.
    pub usual_hosts: usize,
    /// Its value on this host (`unknown` when not read).
    pub value: String,
}

/// The names [`HostFacts::set`] takes and [`odd_hosts`] compares.
pub const FACT_NAMES: [&str; 15] = [
    "cpu_model",
    "sockets",
    "cores",
    "threads",
    "smt",
    "numa_nodes",
    "memory_kib",
    "caches",
    "driver",
    "governor",
    "min_khz",
    "max_khz",
    "boost",
    "kernel",
    "os",
];

fn text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unknown".to_string(), |x| x.to_string())
}

impl HostFacts {
    /// The comparable facts as text, in [`FACT_NAMES`] order (`unknown` when not read); the
    /// current frequency is left out (it moves with load).
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let caches = if self.caches.is_empty() {
            "unknown".to_string()
        } else {
            self.caches
                .iter()
                .map(|c| {
                    format!(
                        "L{}{} {}",
                        c.level,
                        match c.kind.as_str() {
                            "Data" => "d",
                            "Instruction" => "i",
                            _ => "",
                        },
                        c.size_kib
                            .map_or_else(|| "?".to_string(), |k| format!("{k}K")),
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let numa = (!self.numa_cpus.is_empty()).then_some(self.numa_cpus.len());
        let f = &self.frequency;
        vec![
            ("cpu_model", text(&self.cpu_model)),
            ("sockets", text(&self.sockets)),
            ("cores", text(&self.cores)),
            ("threads", text(&self.threads)),
            (
                "smt",
                self.smt
                    .map_or("unknown".into(), |s| if s { "on" } else { "off" }.into()),
            ),
            ("numa_nodes", text(&numa)),
            ("memory_kib", text(&self.memory_kib)),
            ("caches", caches),
            ("driver", text(&f.driver)),
            ("governor", text(&f.governor)),
            ("min_khz", text(&f.min_khz)),
            ("max_khz", text(&f.max_khz)),
            (
                "boost",
                f.boost
                    .map_or("unknown".into(), |s| if s { "on" } else { "off" }.into()),
            ),
            ("kernel", text(&self.kernel)),
            ("os", text(&self.os)),
        ]
    }

    /// Sets one fact from text, as `simulate --odd-host` gives it: `governor=powersave`,
    /// `smt=off`, `max_khz=2000000`, ... (`caches` and `numa_nodes` are read, not set).
    pub fn set(&mut self, fact: &str, value: &str) -> Result<(), FactError> {
        let bad = |kind| FactError::Value {
            fact: fact.to_string(),
            value: value.to_string(),
            kind,
        };
        let number = |v: &str| v.parse::<u64>().map_err(|_| bad("not a whole number"));
        let on_off = |v: &str| match v {
            "on" | "1" | "true" | "yes" => Ok(true),
            "off" | "0" | "false" | "no" => Ok(false),
            _ => Err(bad("not on or off")),
        };
        let f = &mut self.frequency;
        match fact {
            "cpu_model" => self.cpu_model = Some(value.into()),
            "sockets" => self.sockets = Some(number(value)? as usize),
            "cores" => self.cores = Some(number(value)? as usize),
            "threads" => self.threads = Some(number(value)? as usize),
            "smt" => self.smt = Some(on_off(value)?),
            "memory_kib" => self.memory_kib = Some(number(value)?),
            "driver" => f.driver = Some(value.into()),
            "governor" => f.governor = Some(value.into()),
            "min_khz" => f.min_khz = Some(number(value)?),
            "max_khz" => f.max_khz = Some(number(value)?),
            "boost" => f.boost = Some(on_off(value)?),
            "kernel" => self.kernel = Some(value.into()),
            "os" => self.os = Some(value.into()),
            _ => return Err(FactError::Unknown(fact.to_string())),
        }
        Ok(())
    }
}

/// A host fact that cannot be set as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactError {
    /// The value does not fit the fact.
    #[error("{fact}={value}: {kind}")]
    Value {
        /// The fact.
        fact: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        kind: &'static str,
    },
    /// No such fact can be set.
    #[error(
        "{0}: not a fact that can be set; one of cpu_model, sockets, cores, threads, smt, \
         memory_kib, driver, governor, min_khz, max_khz, boost, kernel, os"
    )]
    Unknown(String),
}

/// The facts in which some hosts differ from most: for each fact that more than half of the
/// hosts share, every host with another value (an unknown value counts: a host without
/// cpufreq among hosts with it is odd). Facts that no majority shares are not reported per
/// host (every host would be odd). Hosts in name order, facts in [`FACT_NAMES`] order.
pub fn odd_hosts(hosts: &[HostFacts]) -> Vec<OddFact> {
    if hosts.len() < 2 {
        return Vec::new();
    }
    let fields: Vec<Vec<(&'static str, String)>> = hosts.iter().map(HostFacts::fields).collect();
    let mut odd = Vec::new();
    for (k, name) in FACT_NAMES.iter().enumerate() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &fields {
            *counts.entry(f[k].1.as_str()).or_default() += 1;
        }
        let Some((usual, &n)) = counts.iter().max_by_key(|(_, &n)| n) else {
            continue;
        };
        if 2 * n <= hosts.len() || n == hosts.len() {
            continue;
        }
        for (h, f) in hosts.iter().zip(&fields) {
            if f[k].1 != *usual {
                odd.push(OddFact {
                    host: h.host.clone(),
                    fact: (*name).to_string(),
                    value: f[k].1.clone(),
                    usual: (*usual).to_string(),
                    usual_hosts: n,
                });
            }
        }
    }
    odd.sort_by(|a, b| a.host.cmp(&b.host));
    odd
}

/// One line per odd host: `n3: governor powersave (performance on 3 of 4 hosts)`.
pub fn odd_host_lines(odd: &[OddFact], hosts: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut last: Option<&str> = None;
    for o in odd {
        let part = format!(
            "{} {} ({} on {} of {hosts} hosts)",
            o.fact, o.value, o.usual, o.usual_hosts
        );
        match last {
            Some(h) if h == o.host => {
                let line = lines.last_mut().expect("a line per host");
                line.push_str("; ");
                line.push_str(&part);
            }
            _ => lines.push(format!("{}: {part}", o.host)),
        }
        last = Some(&o.host);
    }
    lines
}

/// The CPUs of a list as the kernel writes them (`0-3,8`); `None` when it does not parse.
pub fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
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

/// Where the ranks' recorded placement disagrees with their host's facts: a CPU not online,
/// a CPU not on the rank's recorded socket or NUMA node. One line each, at most `limit`
/// (the count of all is the length of the second value).
pub fn placement_mismatches(
    ranks: &[RankInfo],
    hosts: &[HostFacts],
    limit: usize,
) -> (Vec<String>, usize) {
    let by_host: BTreeMap<&str, &HostFacts> = hosts.iter().map(|h| (h.host.as_str(), h)).collect();
    let contains = |list: Option<&String>, cpu: usize| {
        list.and_then(|l| parse_cpu_list(l))
            .map(|cpus| cpus.contains(&cpu))
    };
    let mut lines = Vec::new();
    let mut count = 0;
    for r in ranks {
        let (Some(facts), Some(cpu)) = (by_host.get(r.host.as_str()), r.cpu) else {
            continue;
        };
        let mut wrong = Vec::new();
        if contains(facts.online_cpus.as_ref(), cpu) == Some(false) {
            wrong.push(format!("CPU {cpu} is not online on {}", r.host));
        }
        if let Some(s) = r.socket {
            if !facts.socket_cpus.is_empty()
                && contains(facts.socket_cpus.get(&s), cpu) != Some(true)
            {
                wrong.push(format!("CPU {cpu} is not on socket {s}"));
            }
        }
        if let Some(n) = r.numa {
            if !facts.numa_cpus.is_empty() && contains(facts.numa_cpus.get(&n), cpu) != Some(true) {
                wrong.push(format!("CPU {cpu} is not on NUMA node {n}"));
            }
        }
        if !wrong.is_empty() {
            count += 1;
            if lines.len() < limit {
                lines.push(format!(
                    "rank {} on {}: {}",
                    r.rank,
                    r.host,
                    wrong.join(", ")
                ));
            }
        }
    }
    (lines, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, governor: &str) -> HostFacts {
        let mut h = HostFacts {
            host: name.into(),
            cpu_model: Some("EPYC".into()),
            threads: Some(8),
            ..Default::default()
        };
        h.set("governor", governor).unwrap();
        h
    }

    #[test]
    fn the_host_that_differs_from_most_is_named_with_the_usual_value() {
        let hosts = vec![
            host("n0", "performance"),
            host("n1", "performance"),
            host("n2", "powersave"),
            host("n3", "performance"),
        ];
        let odd = odd_hosts(&hosts);
        assert_eq!(odd.len(), 1, "{odd:?}");
        assert_eq!(odd[0].host, "n2");
        assert_eq!(odd[0].fact, "governor");
        assert_eq!(odd[0].value, "powersave");
        assert_eq!(odd[0].usual, "performance");
        assert_eq!(
            odd_host_lines(&odd, 4),
            ["n2: governor powersave (performance on 3 of 4 hosts)"]
        );
        // No majority (two against two): no host is odd.
        assert!(odd_hosts(&hosts[1..3]).is_empty());
        // A host without the fact among hosts with it is odd.
        let mut unknown = hosts.clone();
        unknown[1].frequency.governor = None;
        unknown[2].frequency.governor = Some("performance".into());
        let odd = odd_hosts(&unknown);
        assert_eq!(
            (odd[0].host.as_str(), odd[0].value.as_str()),
            ("n1", "unknown")
        );
    }

    #[test]
    fn facts_are_set_from_text_and_bad_values_say_why() {
        let mut h = HostFacts::default();
        h.set("smt", "off").unwrap();
        h.set("max_khz", "2000000").unwrap();
        assert_eq!(h.smt, Some(false));
        assert_eq!(h.frequency.max_khz, Some(2_000_000));
        assert!(h
            .set("max_khz", "fast")
            .unwrap_err()
            .to_string()
            .contains("max_khz=fast"));
        assert!(matches!(h.set("colour", "red"), Err(FactError::Unknown(f)) if f == "colour"));
    }

    #[test]
    fn placement_that_contradicts_the_host_is_listed() {
        let facts = HostFacts {
            host: "h".into(),
            online_cpus: Some("0-7".into()),
            socket_cpus: [(0, "0-3".to_string()), (1, "4-7".to_string())].into(),
            ..Default::default()
        };
        let rank = |rank, cpu, socket| RankInfo {
            rank,
            host: "h".into(),
            pid: None,
            cpu: Some(cpu),
            cpuset: None,
            core: None,
            socket: Some(socket),
            numa: None,
            governor: None,
            machine: None,
            extra: Default::default(),
        };
        let ranks = [rank(0, 1, 0), rank(1, 5, 0), rank(2, 9, 1)];
        let (lines, count) = placement_mismatches(&ranks, &[facts], 10);
        assert_eq!(count, 2);
        assert_eq!(lines[0], "rank 1 on h: CPU 5 is not on socket 0");
        assert!(lines[1].contains("CPU 9 is not online on h"), "{lines:?}");
    }
}
