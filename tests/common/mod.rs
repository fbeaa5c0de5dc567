//! Helpers shared by the end-to-end tests.
// Each test binary uses some of them.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The MPI family the binary under test was built against, told by its `--version` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpi {
    /// Open MPI: `mpirun` (ORTE or PRRTE), `--mca` options.
    OpenMpi,
    /// MPICH and its derivatives: hydra ([`hydra`]).
    Mpich,
}

/// The hydra launcher of the MPICH the binary under test links: `mpiexec.hydra` in the `bin/`
/// beside the library's `lib/` (an MPICH prefix such as scripts/setup's from PyPI), else
/// Debian's `mpirun.mpich` (as `scripts/testbed` chooses).
pub fn hydra() -> String {
    static HYDRA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HYDRA
        .get_or_init(|| {
            let ldd = Command::new("ldd")
                .arg(env!("CARGO_BIN_EXE_lgate-plogp"))
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            ldd.lines()
                .filter_map(|l| {
                    let (name, path) = l.trim().split_once(" => ")?;
                    (name.starts_with("libmpi.so") || name.starts_with("libmpich.so"))
                        .then(|| path.split_whitespace().next().map(Path::new))?
                })
                .filter_map(|lib| Some(lib.parent()?.parent()?.join("bin/mpiexec.hydra")))
                .find(|hydra| hydra.is_file())
                .map_or_else(|| "mpirun.mpich".into(), |h| h.display().to_string())
        })
        .clone()
}

/// The MPI of the binary under test.
pub fn mpi() -> Mpi {
    static MPI: std::sync::OnceLock<Mpi> = std::sync::OnceLock::new();
    *MPI.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
            .arg("--version")
            .output()
            .expect("the binary runs");
        let version = String::from_utf8_lossy(&out.stdout);
        if version.contains("Open MPI") {
            Mpi::OpenMpi
        } else if ["MPICH", "Intel MPI", "MVAPICH"]
            .iter()
            .any(|m| version.contains(m))
        {
            Mpi::Mpich
        } else {
            panic!("unknown MPI in `lgate-plogp --version`: {version}")
        }
    })
}

/// Starts `mpirun -np N OPTIONS lgate-plogp ARGS` (oversubscribed, unbound) with its output
/// piped.
pub fn launch(np: usize, options: &[&str], args: &[&str], cwd: &Path) -> std::process::Child {
    launch_bound(np, false, options, args, cwd)
}

/// [`launch`], with every rank bound to one core (ranks dealt to cores in turn, several to a
/// core when they outnumber them) when `bound`.
pub fn launch_bound(
    np: usize,
    bound: bool,
    options: &[&str],
    args: &[&str],
    cwd: &Path,
) -> std::process::Child {
    let (launcher, flags) = launcher_and_flags(bound);
    Command::new(&launcher)
        .args(flags)
        .arg(np.to_string())
        .args(options)
        .arg(env!("CARGO_BIN_EXE_lgate-plogp"))
        .args(args)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{launcher} runs (scripts/setup installs it): {e}"))
}

/// The launch [`launch_bound`] makes, up to the program, as its command line reads:
/// `mpirun --oversubscribe --bind-to none -np 8 /path/lgate-plogp`.
#[allow(dead_code)]
pub fn launch_line(np: usize, bound: bool) -> String {
    let (launcher, flags) = launcher_and_flags(bound);
    format!(
        "{launcher} {} {np} {}",
        flags.join(" "),
        env!("CARGO_BIN_EXE_lgate-plogp")
    )
}

/// The launcher and its options before the rank count.
fn launcher_and_flags(bound: bool) -> (String, &'static [&'static str]) {
    // Hydra runs more ranks than cores without being asked; Open MPI must be told.
    match (mpi(), bound) {
        (Mpi::OpenMpi, false) => (
            "mpirun".into(),
            &["--oversubscribe", "--bind-to", "none", "-np"],
        ),
        (Mpi::OpenMpi, true) => (
            "mpirun".into(),
            &[
                "--oversubscribe",
                "--map-by",
                "core",
                "--bind-to",
                "core:overload-allowed",
                "-np",
            ],
        ),
        (Mpi::Mpich, false) => (hydra(), &["-bind-to", "none", "-np"]),
        (Mpi::Mpich, true) => (hydra(), &["-bind-to", "core", "-np"]),
    }
}

/// Runs `mpirun -np N lgate-plogp ARGS` (oversubscribed, unbound), failing the test after a
/// hang limit; Open MPI's or MPICH's launcher as the binary was built.
pub fn mpirun(np: usize, args: &[&str], cwd: &Path) -> Output {
    mpirun_with(np, &[], args, cwd)
}

/// [`mpirun`] with more options for the launcher itself (such as Open MPI's `--mca NAME VALUE`).
pub fn mpirun_with(np: usize, options: &[&str], args: &[&str], cwd: &Path) -> Output {
    wait_for(launch(np, options, args, cwd))
}

/// [`mpirun`] with every rank bound to one core (see [`launch_bound`]).
pub fn mpirun_bound(np: usize, args: &[&str], cwd: &Path) -> Output {
    wait_for(launch_bound(np, true, &[], args, cwd))
}

/// Waits for a launcher, failing the test after a hang limit.
fn wait_for(mut child: std::process::Child) -> Output {
    // A hang detector, not a timing check: under a CPU-bound process per core, `bcast check`
    // on 8 oversubscribed ranks takes 27 s alone (2 s quiet) and several times that beside
    // other MPI tests.
    let limit = Duration::from_secs(600);
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > limit {
            child.kill().ok();
            let out = child.wait_with_output().expect("output");
            panic!(
                "mpirun hung for {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Runs `lgate-plogp ARGS` in `dir`.
pub fn lgate_plogp_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The standard output of a run that must succeed.
pub fn success(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A failure prints one line saying what is wrong, exits 1 and never panics.
pub fn assert_clean_failure(out: &Output, fragment: &str) {
    assert_clean_failure_with(out, 1, fragment)
}

/// A failure prints one line saying what is wrong, exits with `code` and never panics.
pub fn assert_clean_failure_with(out: &Output, code: i32, fragment: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(fragment), "says {fragment:?}: {stderr}");
}

/// The names of a run's matrices, in `matrices/index.json` order.
#[allow(dead_code)]
pub fn matrix_names(run: &Path) -> Vec<String> {
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("matrices/index.json")).expect("matrices/index.json"),
    )
    .expect("index.json parses");
    index["matrices"]
        .as_array()
        .expect("a matrix list")
        .iter()
        .map(|m| m["name"].as_str().expect("a name").to_string())
        .collect()
}

/// `simulate` of the golden fixture: a 16-rank fram (2 switches, 2 nodes each, 2 sockets of 2
/// cores), every pair measured up to 4 KiB, seed 7, every artifact; `--out DIR` follows.
pub const GOLDEN_SIM: [&str; 13] = [
    "simulate",
    "--plan",
    "full",
    "--preset",
    "fram",
    "--machine",
    "switch=2,node=2,socket=2,core=2",
    "--max-size",
    "4KiB",
    "--seed",
    "7",
    "--quiet",
    "--force",
];

/// `simulate` of fram with four nodes of two sockets of four cores (32 ranks), the full plan,
/// no summary: what the diff, health and report tests start from.
pub const FRAM_32: [&str; 9] = [
    "simulate",
    "--preset",
    "fram",
    "--machine",
    "node=4,socket=2,core=4",
    "--plan",
    "full",
    "--quiet",
    "--force",
];

/// Simulates [`FRAM_32`] up to `max_size` with `extra` options (ending with `--output DIR`
/// or not), failing the test if it fails.
pub fn simulate_fram32(dir: &Path, max_size: &str, extra: &[&str]) {
    let mut args = FRAM_32.to_vec();
    args.extend(["--max-size", max_size]);
    args.extend_from_slice(extra);
    success(lgate_plogp_in(dir, &args));
}

/// The file `scripts/test` lists the skipped tests from (one line each).
pub const SKIPS_ENV: &str = "LGATE_TEST_SKIPS";

/// Says that `what` (a test, or a part of one) could not run here, and why: on stderr, and as a
/// line of the file [`SKIPS_ENV`] names, which `scripts/test` lists at its end, so that a skip is
/// never read as a pass. The test then returns.
pub fn skip(what: &str, reason: &str) {
    skip_to(
        std::env::var_os(SKIPS_ENV).as_deref().map(Path::new),
        what,
        reason,
    );
}

/// [`skip`], recorded in `file` when there is one.
pub fn skip_to(file: Option<&Path>, what: &str, reason: &str) {
    let line = format!("SKIPPED {what}: {reason}");
    eprintln!("{line}");
    if let Some(file) = file {
        use std::io::Write;
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            panic!("{}: {e} (recording the skip of {what})", file.display());
        }
    }
}
