//! Reading a run's host blocks back: the index, each host's block, the host x host summary and
//! the pairs between hosts.

use super::*;

impl HostBlocks {
    /// Reads the index, the blocks and the host x host summary of `run`.
    pub fn read(run: &RunDir) -> Result<Self, RunDirError> {
        let index = HostIndex::read(run)?;
        let blocks = read_blocks(run, &index)?;
        let links = read_links(run, &index)?;
        Ok(HostBlocks {
            index,
            blocks,
            links,
        })
    }

    /// Every pair of ranks measured between hosts, from `between.parquet`.
    pub fn read_between(run: &RunDir, index: &HostIndex) -> Result<BetweenPairs, RunDirError> {
        let table = TableReader::open(&run.file(BETWEEN_FILE))?;
        let what = "a table of the pairs between hosts";
        let host_of = index.host_of();
        let mut out = BetweenPairs {
            rtt_us: vec![Vec::new(); index.sizes.len()],
            p10_us: vec![Vec::new(); index.sizes.len()],
            p90_us: vec![Vec::new(); index.sizes.len()],
            ..BetweenPairs::default()
        };
        for g in 0..table.row_groups() {
            let i = table.indices(g, col::I, what)?;
            let j = table.indices(g, col::J, what)?;
            let size = table.indices(g, col::SIZE_BYTES, what)?;
            let sweeps = table.indices(g, col::SWEEPS, what)?;
            let rtt = table.floats(g, col::RTT_US, what)?;
            let p10 = table.floats(g, col::P10_US, what)?;
            let p90 = table.floats(g, col::P90_US, what)?;
            for r in 0..i.len() {
                let k = index.size_index(size[r]).ok_or_else(|| {
                    table.error(format!("row {r}: size {} is not in the index", size[r]))
                })?;
                if i[r] >= j[r] || j[r] >= index.ranks {
                    return Err(table.error(format!(
                        "row {r}: {}-{} is not a pair of the run's {} ranks",
                        i[r], j[r], index.ranks
                    )));
                }
                if k == 0 {
                    out.host_i.push(host_of[i[r]]);
                    out.host_j.push(host_of[j[r]]);
                    out.i.push(i[r] as u32);
                    out.j.push(j[r] as u32);
                    out.sweeps.push(sweeps[r] as u32);
                }
                out.rtt_us[k].push(rtt[r]);
                out.p10_us[k].push(p10[r]);
                out.p90_us[k].push(p90[r]);
            }
        }
        if out.rtt_us.iter().any(|v| v.len() != out.i.len()) {
            return Err(table.error("not every pair has a row per size".into()));
        }
        Ok(out)
    }
}

fn read_blocks(run: &RunDir, index: &HostIndex) -> Result<Vec<HostBlock>, RunDirError> {
    let mut blocks: Vec<HostBlock> = index
        .hosts
        .iter()
        .map(|h| {
            let g = h.ranks.len();
            HostBlock {
                values: (0..index.sizes.len())
                    .map(|_| {
                        let mut m = Array2::from_elem((g, g), f64::NAN);
                        m.diag_mut().fill(0.0);
                        m
                    })
                    .collect(),
            }
        })
        .collect();
    // Each rank's position in its host's block.
    let mut at = vec![usize::MAX; index.ranks];
    for h in &index.hosts {
        for (a, &r) in h.ranks.iter().enumerate() {
            at[r] = a;
        }
    }
    let host_of = index.host_of();
    let table = TableReader::open(&run.file(BLOCKS_FILE))?;
    let what = "a table of host blocks";
    for g in 0..table.row_groups() {
        let read = table.read(
            g,
            &[col::HOST, col::I, col::J, col::SIZE_BYTES, col::RTT_US],
            what,
        )?;
        let [ColumnValues::Int(host), ColumnValues::Int(i), ColumnValues::Int(j), ColumnValues::Int(size), ColumnValues::Float(rtt)] =
            <[ColumnValues; 5]>::try_from(read).map_err(|_| table.error("five columns".into()))?
        else {
            return Err(table.error(
                "host, i, j and size_bytes must be integers and rtt_us floating point".into(),
            ));
        };
        for r in 0..host.len() {
            let bad = || {
                table.error(format!(
                    "row {r} of row group {g}: host {} pair {}-{} size {} is not a pair inside \
                     one host of the index",
                    host[r], i[r], j[r], size[r]
                ))
            };
            let (Ok(h), Ok(i), Ok(j), Ok(size)) = (
                usize::try_from(host[r]),
                usize::try_from(i[r]),
                usize::try_from(j[r]),
                usize::try_from(size[r]),
            ) else {
                return Err(bad());
            };
            let k = index.size_index(size).ok_or_else(bad)?;
            if h >= index.hosts.len()
                || i >= index.ranks
                || j >= index.ranks
                || i == j
                || host_of[i] as usize != h
                || host_of[j] as usize != h
                || !(rtt[r].is_finite() && rtt[r] >= 0.0)
            {
                return Err(bad());
            }
            let m = &mut blocks[h].values[k];
            m[[at[i], at[j]]] = rtt[r];
            m[[at[j], at[i]]] = rtt[r];
        }
    }
    Ok(blocks)
}

fn read_links(run: &RunDir, index: &HostIndex) -> Result<HostLinks, RunDirError> {
    let table = TableReader::open(&run.file(HOST_MATRIX_FILE))?;
    let what = "a host x host table";
    let sizes = index.sizes.len();
    let mut links = HostLinks {
        median_us: vec![Vec::new(); sizes],
        p25_us: vec![Vec::new(); sizes],
        p75_us: vec![Vec::new(); sizes],
        ..HostLinks::default()
    };
    let hosts = index.hosts.len();
    for g in 0..table.row_groups() {
        let a = table.indices(g, col::HOST_I, what)?;
        let b = table.indices(g, col::HOST_J, what)?;
        let size = table.indices(g, col::SIZE_BYTES, what)?;
        let pairs = table.indices(g, col::PAIRS, what)?;
        let median = table.floats(g, col::MEDIAN_US, what)?;
        let p25 = table.floats(g, col::P25_US, what)?;
        let p75 = table.floats(g, col::P75_US, what)?;
        for r in 0..a.len() {
            let k = index.size_index(size[r]).ok_or_else(|| {
                table.error(format!("row {r}: size {} is not in the index", size[r]))
            })?;
            if a[r] > b[r] || b[r] >= hosts || !(median[r].is_finite() && median[r] >= 0.0) {
                return Err(table.error(format!(
                    "row {r} of row group {g}: hosts {}-{} of {hosts} with median {}",
                    a[r], b[r], median[r]
                )));
            }
            if k == 0 {
                links.host_i.push(a[r] as u32);
                links.host_j.push(b[r] as u32);
                links.pairs.push(pairs[r].min(u32::MAX as usize) as u32);
            }
            links.median_us[k].push(median[r]);
            links.p25_us[k].push(p25[r]);
            links.p75_us[k].push(p75[r]);
        }
    }
    if links.median_us.iter().any(|v| v.len() != links.len()) {
        return Err(table.error("not every pair of hosts has a row per size".into()));
    }
    Ok(links)
}
