//! What the ranks of a run exchange outside the pair tests: the results sent to rank 0,
//! the plan and host facts gathered and broadcast.

use super::*;

/// Rank 0's work between polls of a wait: the results that have arrived, received and
/// journalled, charged to collecting (the wait before them to waiting).
pub(super) fn collect(
    t: &dyn Transport,
    collector: Option<&mut Collector>,
    clock: &mut RankClock,
) -> Result<(), HarnessError> {
    match collector {
        Some(c) if t.probe_any(Tag::RESULT)?.is_some() => {
            clock.charge(Activity::Waiting);
            c.drain(t)?;
            clock.charge(Activity::Collecting);
            Ok(())
        }
        _ => Ok(()),
    }
}

pub(super) fn drain(
    t: &dyn Transport,
    collector: Option<&mut Collector>,
) -> Result<(), HarnessError> {
    match collector {
        Some(c) => c.drain(t),
        None => Ok(()),
    }
}

/// Sends every rank's placement to rank 0, which returns them in rank order.
pub(crate) fn gather(
    t: &dyn Transport,
    info: &lgate_rundir::RankInfo,
) -> Result<Option<Vec<lgate_rundir::RankInfo>>, HarnessError> {
    if t.rank() != 0 {
        let bytes = serde_json::to_vec(info).expect("placement serialises");
        t.send_polite(0, Tag::GATHER, &bytes)?;
        return Ok(None);
    }
    let mut out = vec![info.clone()];
    for r in 1..t.size() {
        let bytes = t.recv_vec(r, Tag::GATHER)?;
        let theirs = serde_json::from_slice(&bytes).map_err(|e| TransportError::Protocol {
            rank: 0,
            message: format!("rank {r} sent a placement that does not parse: {e}"),
        })?;
        out.push(theirs);
    }
    Ok(Some(out))
}

/// The facts of every host, read by its first rank and sent to rank 0, which returns them in
/// host order of first rank (the others an empty list). Rank 0 names the first rank of each
/// host in one broadcast; every rank calls this. Files are read under `LGATE_HOST_ROOT` when
/// it is set (a fake tree), else under `/`.
pub(crate) fn gather_host_facts(
    t: &dyn Transport,
    host: &str,
    infos: Option<&[lgate_rundir::RankInfo]>,
) -> Result<Vec<lgate_rundir::HostFacts>, HarnessError> {
    let leaders: Vec<Rank> = match infos {
        Some(infos) => {
            let mut seen = HashSet::new();
            let leaders: Vec<Rank> = infos
                .iter()
                .filter(|i| seen.insert(i.host.as_str()))
                .map(|i| i.rank)
                .collect();
            broadcast(t, Some(&leaders))?
        }
        None => broadcast(t, None)?,
    };
    let rank = t.rank();
    if !leaders.contains(&rank) {
        return Ok(Vec::new());
    }
    let root = std::env::var_os(crate::host_facts::HOST_ROOT_VAR)
        .map_or_else(|| std::path::PathBuf::from("/"), std::path::PathBuf::from);
    let mine = crate::host_facts::read_host_facts(&root, host);
    if rank != 0 {
        let bytes = serde_json::to_vec(&mine).expect("host facts serialise");
        t.send_polite(0, Tag::FACTS, &bytes)?;
        return Ok(Vec::new());
    }
    let mut out = vec![mine];
    for &r in leaders.iter().filter(|&&r| r != 0) {
        let bytes = t.recv_vec(r, Tag::FACTS)?;
        let theirs = serde_json::from_slice(&bytes).map_err(|e| TransportError::Protocol {
            rank: 0,
            message: format!("rank {r} sent host facts that do not parse: {e}"),
        })?;
        out.push(theirs);
    }
    Ok(out)
}

/// Sends rank 0's `plan` (a plan, a follow-up, a resumed run's flags) to every rank along a
/// binomial tree (log2 P rounds); every rank calls it, rank 0 with `Some`.
pub fn broadcast<P: Serialize + DeserializeOwned>(
    t: &dyn Transport,
    plan: Option<&P>,
) -> Result<P, HarnessError> {
    let (rank, size) = (t.rank(), t.size());
    let (bytes, mut mask) = if rank == 0 {
        let plan = plan.expect("rank 0 has the plan");
        (serde_json::to_vec(plan).expect("plans serialise"), 1)
    } else {
        let high = 1 << (usize::BITS - 1 - rank.leading_zeros());
        (t.recv_vec(rank - high, Tag::PLAN)?, high << 1)
    };
    while mask < size {
        if rank + mask < size {
            t.send_polite(rank + mask, Tag::PLAN, &bytes)?;
        }
        mask <<= 1;
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        TransportError::Protocol {
            rank,
            message: format!("the run plan does not parse: {e}"),
        }
        .into()
    })
}
