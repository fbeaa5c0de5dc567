//! `lgate-plogp import`: a run directory from measurements made by another tool (a pair list,
//! mmpi's `.dat`, mpiGraph's output), so that `cluster`, `plot`, `report`, the exports and
//! `diff` work on it as on a measured run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use lgate_matrix::mpigraph::{read_mpigraph, MpiGraphRun};
use lgate_matrix::{read_pairs_file, DistanceMatrix};
use lgate_rundir::MessageSize;
use lgate_rundir::{MatrixEntry, RankInfo, RunDir, RunMeta, RunStatus, ScheduleInfo, TestInfo};
use ndarray::Array2;

/// What `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A pair list (CSV with a header naming i, j, value and optionally host_i, host_j, size;
    /// Parquet with those columns; or mmpi's .dat): one matrix per size, the median of each
    /// pair's repeats.
    Pairs(PairsArgs),
    /// mpiGraph's output (`mpiGraph SIZE ITERS WINDOW > FILE`): the time per message of every
    /// ordered pair, sent and received, and a distance from them.
    Mpigraph(MpiGraphArgs),
}

/// Where an import writes its run.
#[derive(Debug, Args)]
pub struct ImportOutput {
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

/// Options of `import pairs`.
#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The pair list.
    file: PathBuf,
    #[command(flatten)]
    output: ImportOutput,
}

/// Which of mpiGraph's two tables the distance is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MpiGraphTable {
    /// What each rank measured receiving (mpiGraph's `Recv` table).
    Recv,
    /// What each rank measured sending (mpiGraph's `Send` table).
    Send,
}

/// Options of `import mpigraph`.
#[derive(Debug, Args)]
pub struct MpiGraphArgs {
    /// mpiGraph's standard output.
    file: PathBuf,
    /// The table the default distance (`imported:SIZE`) is made from; both are kept as
    /// `recv:SIZE` and `send:SIZE`.
    #[arg(long, value_enum, default_value_t = MpiGraphTable::Recv)]
    from: MpiGraphTable,
    #[command(flatten)]
    output: ImportOutput,
}

/// Runs `import`.
pub fn run(command: ImportCommand) -> Result<()> {
    match command {
        ImportCommand::Pairs(args) => pairs(args),
        ImportCommand::Mpigraph(args) => mpigraph(args),
    }
}

fn pairs(args: PairsArgs) -> Result<()> {
    let table = read_pairs_file(&args.file)?;
    crate::output::refuse_inputs(&args.output.out, &[args.file.as_path()])?;
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
    let default = name("imported", table.sizes[0].size_bytes);
    let repeats = table.sizes.iter().map(|m| m.repeats).max().unwrap_or(0);
    let test = TestInfo {
        name: "imported".into(),
        parameters: serde_json::json!({
            "source": args.file.display().to_string(),
            "layout": table.layout,
            "ranks": table.ranks,
            "sizes": table.sizes.iter().map(|m| m.size_bytes).collect::<Vec<_>>(),
            "most_repeats_of_a_pair": repeats,
            "hosts_named": table.hosts.is_some(),
        }),
    };
    write_run(
        &args.output,
        test,
        table.ranks,
        table.hosts.as_deref(),
        &entries,
        &default,
    )?;
    if !args.output.quiet {
        eprintln!(
            "imported {} ({}): {} ranks{}, {} size(s), at most {repeats} repeat(s) of a pair",
            args.file.display(),
            table.layout,
            table.ranks,
            on_hosts(table.hosts.as_deref()),
            table.sizes.len()
        );
        eprintln!(
            "wrote {}/ (meta.json, matrices/)",
            args.output.out.display()
        );
    }
    Ok(())
}

/// ` on N host(s)` when hosts are named.
fn on_hosts(hosts: Option<&[String]>) -> String {
    hosts.map_or(String::new(), |h| {
        let mut hosts = h.to_vec();
        hosts.sort();
        hosts.dedup();
        format!(" on {} host(s)", hosts.len())
    })
}

/// Writes an imported run: meta.json (ranks on `hosts`, or `rankN` when none are named) and
/// the matrices, `default` the one `cluster` takes.
fn write_run(
    output: &ImportOutput,
    test: TestInfo,
    n: usize,
    hosts: Option<&[String]>,
    entries: &[(MatrixEntry, &DistanceMatrix)],
    default: &str,
) -> Result<()> {
    let ranks: Vec<RankInfo> = (0..n)
        .map(|r| RankInfo {
            rank: r,
            host: hosts.map_or_else(|| format!("rank{r}"), |h| h[r].clone()),
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
    let run = RunDir::create(&output.out, output.force)?;
    run.write_meta(&meta)?;
    lgate_derive::write_matrix_set_with(
        &run,
        lgate_rundir::Estimator::Median,
        entries,
        Some(default.to_string()),
        Vec::new(),
        None,
    )?;
    Ok(())
}

/// Microseconds per message of `bytes` at `mb_per_s` (mpiGraph's MB: 2^20 bytes).
fn us_per_message(bytes: usize, mb_per_s: f64) -> f64 {
    if mb_per_s > 0.0 {
        bytes as f64 / MIB / mb_per_s * 1e6
    } else {
        0.0
    }
}

/// Bytes in mpiGraph's MB.
const MIB: f64 = 1024.0 * 1024.0;

/// The distance between i and j from one of mpiGraph's tables (`bw[[i, j]]`, MB/s): the time
/// a message takes at the pair's mean bandwidth of its two directions,
/// `size / ((bw_ij + bw_ji) / 2)`.
pub fn mpigraph_distance(bytes: usize, bw: &Array2<f64>) -> Array2<f64> {
    let n = bw.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| {
        if i == j {
            0.0
        } else {
            us_per_message(bytes, (bw[[i, j]] + bw[[j, i]]) / 2.0)
        }
    })
}

fn mpigraph(args: MpiGraphArgs) -> Result<()> {
    let text = std::fs::read(&args.file)
        .with_context(|| format!("{}: cannot read", args.file.display()))?;
    let text = String::from_utf8_lossy(&text);
    let run: MpiGraphRun = read_mpigraph(&args.file, &text)?;
    crate::output::refuse_inputs(&args.output.out, &[args.file.as_path()])?;
    let n = run.hosts.len();
    let size = MessageSize(run.message_bytes);
    let per_direction = |bw: &Array2<f64>| -> Result<DistanceMatrix> {
        let t = bw.mapv(|v| us_per_message(run.message_bytes, v));
        Ok(DistanceMatrix::new(t, None)?)
    };
    let (chosen, table_name) = match args.from {
        MpiGraphTable::Recv => (&run.recv, "Recv"),
        MpiGraphTable::Send => (&run.send, "Send"),
    };
    let distance = DistanceMatrix::new(mpigraph_distance(run.message_bytes, chosen), None)?;
    let recv = per_direction(&run.recv)?;
    let send = per_direction(&run.send)?;
    let s = run.message_bytes;
    let entries = [
        (
            MatrixEntry::in_us(
                &format!("imported:{size}"),
                &format!("imported_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: the time a message takes at the pair's mean \
                     bandwidth, size / ((bw_ij + bw_ji) / 2), from the {table_name} table"
                ),
                Some(s),
            ),
            &distance,
        ),
        (
            MatrixEntry::in_us(
                &format!("recv:{size}"),
                &format!("recv_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: row i, column j, the time per message i \
                     received from j (size / the Recv table's bandwidth; not symmetric)"
                ),
                Some(s),
            ),
            &recv,
        ),
        (
            MatrixEntry::in_us(
                &format!("send:{size}"),
                &format!("send_{s}.csv"),
                &format!(
                    "mpiGraph, {size} messages: row i, column j, the time per message i sent \
                     to j (size / the Send table's bandwidth; not symmetric)"
                ),
                Some(s),
            ),
            &send,
        ),
    ];
    let mean = |bw: &Array2<f64>| bw.sum() / (n * (n - 1)) as f64;
    let test = TestInfo {
        name: "mpigraph".into(),
        parameters: serde_json::json!({
            "source": args.file.display().to_string(),
            "layout": "mpigraph",
            "ranks": n,
            "message_bytes": run.message_bytes,
            "times": run.times,
            "window": run.window,
            "distance_from": table_name,
            "send_mean_mb_per_s": mean(&run.send),
            "recv_mean_mb_per_s": mean(&run.recv),
        }),
    };
    write_run(
        &args.output,
        test,
        n,
        Some(&run.hosts),
        &entries,
        &format!("imported:{size}"),
    )?;
    if !args.output.quiet {
        eprintln!(
            "imported {} (mpiGraph {} B x {} x {}): {n} ranks{}; mean bandwidth sent {:.0} MB/s, \
             received {:.0} MB/s",
            args.file.display(),
            run.message_bytes,
            run.times,
            run.window,
            on_hosts(Some(&run.hosts)),
            mean(&run.send),
            mean(&run.recv),
        );
        eprintln!(
            "wrote {}/ (meta.json, matrices/: imported:{size} from the {table_name} table, \
             recv:{size}, send:{size})",
            args.output.out.display()
        );
    }
    Ok(())
}
