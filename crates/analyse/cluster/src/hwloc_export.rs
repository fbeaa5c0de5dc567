//! `cluster --format hwloc-distances`: a run's matrix between the ranks of one host, in the
//! distances file `hwloc-annotate` reads, each rank named by the PU it ran on.

use std::path::Path;

use lgate_knobs::Knob;

use crate::input::{load, InputError};

/// The distances of one host's ranks, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct HostDistances {
    /// The file's text.
    pub text: String,
    /// The host.
    pub host: String,
    /// How many of its ranks the file holds.
    pub ranks: usize,
    /// What was read (the run and the matrix).
    pub source: String,
    /// Ranks that could run on several CPUs (not bound): their PU is the CPU each started on.
    pub floating: Vec<usize>,
}

/// The distances between the ranks of `host` (or of the run's only host) in the run `run`,
/// from its matrix `matrix` (default: the usual one) and the host's `lstopo --of xml` text
/// `xml` (read from `xml_path`), which gives each CPU's logical index.
pub fn host_distances(
    run: &Path,
    matrix: Option<&str>,
    xml: &str,
    xml_path: &Path,
    host: Option<&str>,
) -> Result<HostDistances, InputError> {
    let invalid = |path: &Path, message: String| InputError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let pus = lgate_matrix::hwloc::pus_in_logical_order(xml)
        .map_err(|e| invalid(xml_path, e.to_string()))?;
    let input = load(run, matrix)?;
    let meta = lgate_rundir::RunMeta::read(&run.join(lgate_rundir::META_FILE))?;
    let host_of = |rank: usize| meta.ranks.get(rank).map(|r| r.host.as_str());
    let mut hosts: Vec<&str> = input.ranks.iter().filter_map(|&r| host_of(r)).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let host = match (host, hosts.as_slice()) {
        (Some(h), _) if hosts.contains(&h) => h,
        (Some(h), _) => {
            let known = hosts.join(", ");
            return Err(invalid(
                run,
                format!("no rank ran on host {h} (the run's hosts: {known})"),
            ));
        }
        (None, [only]) => only,
        (None, _) => {
            let message = format!(
                "the run spans {} hosts ({}); choose one with {}",
                hosts.len(),
                hosts.join(", "),
                Knob::Host
            );
            return Err(invalid(run, message));
        }
    };
    let items: Vec<usize> = (0..input.ranks.len())
        .filter(|&i| host_of(input.ranks[i]) == Some(host))
        .collect();
    let mut floating = Vec::new();
    let cpus = items
        .iter()
        .map(|&i| {
            let rank = input.ranks[i];
            let info = meta.ranks.get(rank);
            if info
                .and_then(|x| x.cpuset.as_deref())
                .is_some_and(|set| set.contains([',', '-']))
            {
                floating.push(rank);
            }
            info.and_then(|x| x.cpu)
                .ok_or_else(|| invalid(run, format!("meta.json has no CPU for rank {rank}")))
        })
        .collect::<Result<Vec<usize>, InputError>>()?;
    let matrix_name = input
        .source
        .rsplit_once(" (")
        .map_or(input.source.as_str(), |(_, name)| {
            name.trim_end_matches(')')
        });
    // Host blocks hold the host's pairs as a block of their own.
    let block;
    let (matrix, items) = match &input.distances {
        crate::Distances::Dense(m) => (m, items),
        crate::Distances::ByHosts { blocks, k, .. } => {
            let ranks: Vec<usize> = items.iter().map(|&i| input.ranks[i]).collect();
            let x = (blocks.index.hosts.iter())
                .position(|h| h.ranks == ranks)
                .ok_or_else(|| {
                    invalid(
                        run,
                        format!(
                            "the host blocks group the ranks of {host} otherwise (a {} whose \
                             leaves are not hosts)",
                            Knob::MeasureTopology
                        ),
                    )
                })?;
            let labels = ranks.iter().map(|r| r.to_string()).collect();
            let values = crate::by_hosts::filled_block(&blocks.blocks[x].values[*k]);
            block = lgate_matrix::DistanceMatrix::new(values, Some(labels))
                .map_err(|e| invalid(run, format!("host {host}: {e}")))?;
            (&block, (0..ranks.len()).collect())
        }
    };
    let text = lgate_matrix::hwloc::distances_file(
        &format!("lgate-plogp {matrix_name}"),
        matrix,
        &items,
        &cpus,
        &pus,
    )
    .map_err(|e| invalid(run, format!("host {host}: {e}")))?;
    Ok(HostDistances {
        text,
        host: host.to_string(),
        ranks: items.len(),
        source: input.source.clone(),
        floating,
    })
}
