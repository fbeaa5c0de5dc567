//! Prints a topology's levels as a table: one row per rank, one column per level, each cell the
//! rank's group at that level. Handy for loading into pandas or R next to measurements.
//!
//! ```text
//! cargo run --example level_labels -- fixtures/topology/four-groups.lgate
//! ```

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use lgate_topology::format;

fn main() -> Result<()> {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        bail!("usage: level_labels TOPOLOGY_FILE");
    };
    let (topology, _) = format::read_file(&path, None).context("reading the topology")?;
    let ranks = topology.ranks();
    let labels: Vec<Vec<usize>> = topology.levels().iter().map(|l| l.labels(ranks)).collect();

    let names: Vec<&str> = topology.levels().iter().map(|l| l.name.as_str()).collect();
    println!("rank,{}", names.join(","));
    for rank in 0..ranks {
        let row: Vec<String> = labels.iter().map(|l| l[rank].to_string()).collect();
        println!("{rank},{}", row.join(","));
    }
    Ok(())
}
