//! What the ranks of a broadcast command agree on before broadcasting: every rank's host, the
//! topology (read on rank 0 alone, which reports a bad file), and results every rank computes
//! alike but rank 0 settles, so that one line is printed when something is wrong.

use lgate_knobs::Knob;
use lgate_topology::{format, Topology, TopologyError, TopologyNode};
use lgate_transport::{Tag, Transport};

use crate::bench::share_from_rank0;
use crate::BcastError;

/// An error of agreeing between ranks: a broadcast failed, or rank 0 found the input wrong.
#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    /// Messaging failed.
    #[error(transparent)]
    Bcast(#[from] BcastError),
    /// The topology file is unusable (reported by rank 0).
    #[error("{knob} {flag}: {error}", knob = Knob::BcastTopology)]
    Topology {
        /// The flag as given.
        flag: String,
        /// What is wrong.
        error: Box<TopologyError>,
    },
    /// The arguments cannot make the broadcasts asked for (reported by rank 0).
    #[error("{0}")]
    Invalid(String),
    /// The tuning file is unusable (reported by rank 0).
    #[error("{path}: {message}")]
    Tuning {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A message that does not parse: the ranks run different binaries.
    #[error("rank {rank}: {message}")]
    Protocol {
        /// This rank.
        rank: usize,
        /// What did not parse.
        message: String,
    },
}

impl From<lgate_transport::TransportError> for ShareError {
    fn from(e: lgate_transport::TransportError) -> Self {
        ShareError::Bcast(e.into())
    }
}

/// The host of every rank, on every rank.
pub fn hosts(t: &dyn Transport) -> Result<Vec<String>, ShareError> {
    let mine = t.processor_name();
    if t.rank() != 0 {
        t.send(0, Tag::HOSTS, mine.as_bytes())?;
        t.notify(0);
    }
    let all = if t.rank() == 0 {
        let mut all = vec![mine];
        for from in 1..t.size() {
            all.push(String::from_utf8_lossy(&t.recv_vec(from, Tag::HOSTS)?).into_owned());
        }
        Some(serde_json::to_vec(&all).expect("host names serialise"))
    } else {
        None
    };
    let bytes = share_from_rank0(t, all)?.ok_or_else(|| ShareError::Protocol {
        rank: t.rank(),
        message: "rank 0 could not list the hosts".into(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| ShareError::Protocol {
        rank: t.rank(),
        message: format!("the host list does not parse: {e}"),
    })
}

/// The topology tree a `--topology` flag names (a file, or `auto` for one group per host) on
/// every rank, read on rank 0 alone: `None` inside when there is no flag. When the file is
/// unusable rank 0 returns the error and the others [`Agreed::No`].
pub fn topology(
    t: &dyn Transport,
    flag: Option<&str>,
    hosts: &[String],
) -> Result<Agreed<Option<TopologyNode>>, ShareError> {
    let Some(flag) = flag else {
        return Ok(Agreed::Yes(None));
    };
    let (text, failure) = if t.rank() == 0 {
        let resolved = match flag {
            "auto" => Topology::one_group_per_host(hosts),
            path => format::read_file(std::path::Path::new(path), Some(t.size())).map(|(t, _)| t),
        };
        match resolved {
            Ok(top) => (
                Some(lgate_topology::lgate::to_string(&top).into_bytes()),
                None,
            ),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    match share_from_rank0(t, text)? {
        Some(bytes) => {
            let text = String::from_utf8(bytes).map_err(|e| ShareError::Protocol {
                rank: t.rank(),
                message: format!("the topology is not UTF-8: {e}"),
            })?;
            let top = lgate_topology::lgate::parse(&text, Some(t.size())).map_err(|error| {
                ShareError::Topology {
                    flag: flag.to_string(),
                    error: Box::new(error),
                }
            })?;
            Ok(Agreed::Yes(Some(top.tree().clone())))
        }
        None => match failure {
            Some(error) => Err(ShareError::Topology {
                flag: flag.to_string(),
                error: Box::new(error),
            }),
            None => Ok(Agreed::No),
        },
    }
}

/// The decision table `bcast bench` wrote, read on rank 0 and checked against this job; when
/// the file is unusable rank 0 returns the error and the others [`Agreed::No`].
pub fn tuning_file(
    t: &dyn Transport,
    path: &std::path::Path,
) -> Result<Agreed<crate::Tuning>, ShareError> {
    let bad = |message: String| ShareError::Tuning {
        path: path.display().to_string(),
        message,
    };
    let text = if t.rank() == 0 {
        match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) => {
                share_from_rank0(t, None)?;
                return Err(bad(e.to_string()));
            }
        }
    } else {
        None
    };
    let Some(bytes) = share_from_rank0(t, text.map(String::into_bytes))? else {
        return Ok(Agreed::No);
    };
    let parsed = String::from_utf8(bytes)
        .map_err(|e| bad(e.to_string()))
        .and_then(|text| {
            <crate::Tuning as crate::BroadcastTable>::parse(&text).map_err(|e| bad(e.to_string()))
        })
        .and_then(|tuning| {
            if tuning.ranks == t.size() {
                Ok(tuning)
            } else {
                Err(bad(format!(
                    "the tuning was measured on {} ranks, this job has {}",
                    tuning.ranks,
                    t.size()
                )))
            }
        });
    agreed(t, parsed)
}

/// Every rank's host, and the topology tree of `--topology` if given.
pub type HostsAndTree = (Vec<String>, Option<TopologyNode>);

/// Every rank's host and the topology tree a `--topology` flag names, on every rank (see
/// [`topology`]).
pub fn hosts_and_topology(
    t: &dyn Transport,
    flag: Option<&str>,
) -> Result<Agreed<HostsAndTree>, ShareError> {
    let hosts = hosts(t)?;
    Ok(match topology(t, flag, &hosts)? {
        Agreed::Yes(tree) => Agreed::Yes((hosts, tree)),
        Agreed::No => Agreed::No,
    })
}

/// A value every rank holds once rank 0 has settled it.
#[derive(Debug, Clone, PartialEq)]
pub enum Agreed<T> {
    /// Rank 0's verdict was good; the value.
    Yes(T),
    /// Rank 0 failed and reports why; this rank stops quietly.
    No,
}

/// A result every rank computes alike (from the same arguments and files), settled by rank 0's:
/// when rank 0 failed it returns its error, and the others [`Agreed::No`] to stop quietly, so
/// that one line is printed.
pub fn agreed<T, E: From<BcastError>>(
    t: &dyn Transport,
    result: Result<T, E>,
) -> Result<Agreed<T>, E> {
    let ok = if t.rank() == 0 {
        Some(vec![u8::from(result.is_ok())])
    } else {
        None
    };
    let ok = share_from_rank0(t, ok)?.is_some_and(|b| b == [1]);
    match (ok, result) {
        (true, r) => r.map(Agreed::Yes),
        (false, Err(e)) if t.rank() == 0 => Err(e),
        (false, _) => Ok(Agreed::No),
    }
}

/// Rank 0 learns every rank's list of problems (its own first, each line prefixed with the
/// rank); the other ranks get an empty list.
pub fn gather_verdicts(t: &dyn Transport, wrong: &[String]) -> Result<Vec<String>, ShareError> {
    let mine = serde_json::to_vec(wrong).expect("verdicts serialise");
    if t.rank() != 0 {
        t.send(0, Tag::VERDICTS, &mine)?;
        t.notify(0);
        return Ok(Vec::new());
    }
    let mut all: Vec<String> = wrong.iter().map(|w| format!("rank 0: {w}")).collect();
    for from in 1..t.size() {
        let theirs: Vec<String> = serde_json::from_slice(&t.recv_vec(from, Tag::VERDICTS)?)
            .map_err(|e| ShareError::Protocol {
                rank: 0,
                message: format!("rank {from} sent verdicts that do not parse: {e}"),
            })?;
        all.extend(theirs.into_iter().map(|w| format!("rank {from}: {w}")));
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use lgate_transport::InProcessWorld;

    use super::*;

    #[test]
    fn every_rank_gets_the_hosts_the_topology_and_rank_0s_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("two.lgate");
        std::fs::write(&file, "cluster { group { 0-1 } group { 2-3 } }\n").unwrap();
        let flag = file.to_str().unwrap().to_string();
        let results = InProcessWorld::new(4).run(|t| {
            let hosts = hosts(&t).unwrap();
            let tree = topology(&t, Some(&flag), &hosts).unwrap();
            let auto = topology(&t, Some("auto"), &hosts).unwrap();
            let none = topology(&t, None, &hosts).unwrap();
            let settled = agreed::<u32, BcastError>(&t, Ok(7)).unwrap();
            let verdicts = gather_verdicts(&t, &[format!("odd {}", t.rank())]).unwrap();
            (hosts, tree, auto, none, settled, verdicts)
        });
        for (rank, (hosts, tree, auto, none, settled, verdicts)) in results.into_iter().enumerate()
        {
            assert_eq!(hosts.len(), 4);
            let Agreed::Yes(Some(tree)) = tree else {
                panic!("rank {rank}: no tree")
            };
            assert_eq!(tree.groups().len(), 2);
            // In-process ranks share one host: `auto` is one group.
            assert!(matches!(auto, Agreed::Yes(Some(t)) if t.groups().len() == 1));
            assert_eq!(none, Agreed::Yes(None));
            assert_eq!(settled, Agreed::Yes(7));
            if rank == 0 {
                assert_eq!(verdicts.len(), 4);
                assert_eq!(verdicts[3], "rank 3: odd 3");
            } else {
                assert!(verdicts.is_empty());
            }
        }
    }

    #[test]
    fn a_bad_topology_is_reported_by_rank_0_alone() {
        let results = InProcessWorld::new(3).run(|t| {
            let hosts = hosts(&t).unwrap();
            topology(&t, Some("/no/such/file.lgate"), &hosts)
        });
        let err = results[0].as_ref().unwrap_err().to_string();
        let named = format!("{} /no/such/file.lgate", Knob::BcastTopology);
        assert!(err.contains(&named), "{err}");
        for r in &results[1..] {
            assert!(matches!(r, Ok(Agreed::No)), "{r:?}");
        }
        let settled = InProcessWorld::new(3).run(|t| {
            let mine: Result<u32, BcastError> = if t.rank() == 0 {
                Err(BcastError::ZeroSegment)
            } else {
                Ok(1)
            };
            agreed(&t, mine).map_err(|e| e.to_string())
        });
        assert!(settled[0].is_err());
        assert!(settled[1..].iter().all(|r| matches!(r, Ok(Agreed::No))));
    }
}
