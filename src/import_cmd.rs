//! `lgate-plogp import pairs`: a run directory from a pair list measured by another tool.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lgate_matrix::{read_pairs, DistanceMatrix};
use lgate_plogp_bench::MessageSize;
use lgate_rundir::{MatrixEntry, RankInfo, RunDir, RunMeta, RunStatus, ScheduleInfo, TestInfo};

/// What `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A pair list (CSV with a header naming i, j, value and optionally host_i, host_j, size;
    /// or mmpi's .dat): one matrix per size, the median of each pair's repeats.
    Pairs(PairsArgs),
}

/// Options of `import pairs`.
#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The pair list.
    file: PathBuf,
    /// The run directory to create.
    #[arg(long = "output", short, alias = "out", value_name = "DIR")]
    out: PathBuf,
    /// Replace an existing run in --output.
    #[arg(long)]
    force: bool,
    /// No summary on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `import`.
pub fn run(command: ImportCommand) -> Result<()> {
    match command {
        ImportCommand::Pairs(args) => pairs(args),
    }
}

fn pairs(args: PairsArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("{}: cannot read", args.file.display()))?;
    let table = read_pairs(&args.file, &text)?;
    crate::output::refuse_inputs(&args.out, &[args.file.as_path()])?;
    let name = |kind: &str, size: Option<usize>| match size {
        Some(s) => format!("{kind}:{}", MessageSize(s)),
        None => kind.to_string(),
    };
    let file = |kind: &str, size: Option<usize>| match size {
        Some(s) => format!("{kind}_{s}.csv"),
        None => format!("{kind}.csv"),
    };
    // In a run, matrices are labelled by rank; meta.json names the hosts.
    let medians: Vec<DistanceMatrix> = table
        .sizes
        .iter()
        .map(|m| DistanceMatrix::new(m.median.values().clone(), None))
        .collect::<Result<_, _>>()?;
    let spreads: Vec<DistanceMatrix> = table
        .sizes
        .iter()
        .map(|m| DistanceMatrix::new(m.spread.clone(), None))
        .collect::<Result<_, _>>()?;
    let mut entries: Vec<(MatrixEntry, &DistanceMatrix)> = Vec::new();
    for ((m, median), spread) in table.sizes.iter().zip(&medians).zip(&spreads) {
        let what = match m.size_bytes {
            Some(s) => format!("the imported value at {}", MessageSize(s)),
            None => "the imported value".to_string(),
        };
        entries.push((
            MatrixEntry::in_us(
                &name("imported", m.size_bytes),
                &file("imported", m.size_bytes),
                &format!("{what}: the median of each pair's repeats"),
                m.size_bytes,
            ),
            median,
        ));
        entries.push((
            MatrixEntry::in_us(
                &name("spread", m.size_bytes),
                &file("spread", m.size_bytes),
                &format!("{what}: the robust standard deviation of each pair's repeats"),
                m.size_bytes,
            ),
            spread,
        ));
    }
    let default = Some(name("imported", table.sizes[0].size_bytes));
    let n = table.ranks;
    let ranks: Vec<RankInfo> = (0..n)
        .map(|r| RankInfo {
            rank: r,
            host: table
                .hosts
                .as_ref()
                .map_or_else(|| format!("rank{r}"), |h| h[r].clone()),
            pid: None,
            cpu: None,
            cpuset: None,
            core: None,
            socket: None,
            numa: None,
            governor: None,
            machine: None,
            extra: Default::default(),
        })
        .collect();
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let repeats = table.sizes.iter().map(|m| m.repeats).max().unwrap_or(0);
    let test = TestInfo {
        name: "imported".into(),
        parameters: serde_json::json!({
            "source": args.file.display().to_string(),
            "layout": table.layout,
            "ranks": n,
            "sizes": table.sizes.iter().map(|m| m.size_bytes).collect::<Vec<_>>(),
            "most_repeats_of_a_pair": repeats,
            "hosts_named": table.hosts.is_some(),
        }),
    };
    let schedule = ScheduleInfo {
        topology_source: "none: imported".into(),
        topology: serde_json::json!({}),
        sweeps: 1,
        seed: 0,
        fast_fraction: None,
        tested_ranks: (0..n).collect(),
        pairs_per_sweep: n * (n - 1) / 2,
        plan: None,
        pinned_hosts: Vec::new(),
    };
    let mut meta = RunMeta::started(
        format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")),
        std::env::args().collect(),
        test,
        schedule,
        ranks,
        now.clone(),
    );
    meta.status = RunStatus::Complete;
    meta.end = Some(now);
    meta.launcher.kind = "imported".into();
    let run = RunDir::create(&args.out, args.force)?;
    run.write_meta(&meta)?;
    lgate_plogp_bench::write_matrix_set_with(&run, "median", &entries, default, Vec::new(), None)?;
    if !args.quiet {
        eprintln!(
            "imported {} ({}): {n} ranks{}, {} size(s), at most {repeats} repeat(s) of a pair",
            args.file.display(),
            table.layout,
            table.hosts.as_ref().map_or(String::new(), |h| {
                let mut hosts = h.clone();
                hosts.sort();
                hosts.dedup();
                format!(" on {} host(s)", hosts.len())
            }),
            table.sizes.len()
        );
        eprintln!("wrote {}/ (meta.json, matrices/)", args.out.display());
    }
    Ok(())
}
