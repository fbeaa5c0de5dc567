//! Where command output goes: stdout, or a file replaced atomically.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Writes `text` to `path` through a temporary file in the same folder, then renames it, so
/// readers never see a half-written file; without a path, writes to stdout.
pub fn write_output(path: Option<&Path>, text: &str) -> Result<()> {
    let Some(path) = path else {
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
        return Ok(());
    };
    lgate_output::write_atomic(path, text.as_bytes())
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// The absolute path `path` names, whether or not it exists yet.
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = path.canonicalize() {
        return Some(p);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(parent.join(path.file_name()?))
}

/// Refuses an output that would replace one of the command's `inputs`: the same file, or a
/// file a run directory among them keeps for itself (meta.json, the journal, the tables,
/// `matrices/`, report.json). Other files may be written into a run directory.
pub fn refuse_inputs(output: &Path, inputs: &[&Path]) -> Result<()> {
    let Some(out) = resolved(output) else {
        return Ok(());
    };
    for input in inputs {
        let Ok(input) = input.canonicalize() else {
            continue;
        };
        if out == input {
            anyhow::bail!(
                "{}: this is the input; write the output elsewhere",
                output.display()
            );
        }
        if input.join(lgate_rundir::META_FILE).is_file() {
            if let Ok(inside) = out.strip_prefix(&input) {
                let first = inside.components().next().map(|c| c.as_os_str().to_owned());
                let owned = first.is_some_and(|f| {
                    f == lgate_rundir::MATRICES_DIR
                        || f == lgate_rundir::files::HOSTS_DIR
                        || lgate_rundir::files::RUN_FILES.iter().any(|name| f == *name)
                            && inside.components().count() == 1
                });
                if owned {
                    anyhow::bail!(
                        "{}: this file belongs to the run {}, which is the input; write the \
                         output elsewhere",
                        output.display(),
                        input.display()
                    );
                }
            }
        }
    }
    Ok(())
}

/// Checks an output before any work: it replaces none of the command's `inputs` (not even with
/// `--force`), and an existing file only with `force`.
pub fn check_output(output: &Path, inputs: &[&Path], force: bool) -> Result<()> {
    if output.is_dir() || output.as_os_str().to_string_lossy().ends_with('/') {
        anyhow::bail!(
            "{}: is a folder; --output takes a file name (such as {})",
            output.display(),
            output.join("name.ext").display()
        );
    }
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            anyhow::bail!(
                "{}: the folder {} does not exist; create it first",
                output.display(),
                parent.display()
            );
        }
    }
    refuse_inputs(output, inputs)?;
    if !force && output.symlink_metadata().is_ok() {
        anyhow::bail!(
            "{}: exists; give --force to replace it, or write the output elsewhere",
            output.display()
        );
    }
    Ok(())
}

/// Whether an error is only stdout closing early (`lgate-plogp ... | head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// This process's rank as its MPI launcher (mpirun, hydra, srun) set it in the environment,
/// known before MPI starts; `None` outside a launcher.
pub fn launcher_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Whether this process is a rank other than 0 of a launched job: an error that every rank
/// finds alike (a bad flag) is then left for rank 0 to say, once.
pub fn another_rank_says_it() -> bool {
    launcher_rank().is_some_and(|r| r != 0)
}

/// An error that rank 0 reports for every rank: this one exits with failure and says nothing.
#[derive(Debug)]
pub struct SaidByRankZero;

impl std::fmt::Display for SaidByRankZero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("rank 0 reports the error")
    }
}

impl std::error::Error for SaidByRankZero {}

/// `error` as this rank should report it: itself on rank 0 (or outside a launcher), else
/// [`SaidByRankZero`].
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn once_per_job(error: anyhow::Error) -> anyhow::Error {
    if another_rank_says_it() {
        anyhow::Error::new(SaidByRankZero)
    } else {
        error
    }
}

/// The output a plot or report writes when `--output` is not given: `name` in the run
/// directory `input`, or beside the file `input`; `None` for a file when `beside_files` is
/// false (a matrix file may sit among many others).
pub fn default_output(input: &Path, name: &str, beside_files: bool) -> Option<PathBuf> {
    if input.is_dir() {
        Some(input.join(name))
    } else if beside_files {
        Some(input.parent().unwrap_or(Path::new("")).join(name))
    } else {
        None
    }
}

/// `--output`, or the default output, checked ([`crate::output::check_output`]).
pub fn output_of(
    given: &Option<PathBuf>,
    default: Option<PathBuf>,
    inputs: &[&Path],
    force: bool,
) -> Result<PathBuf> {
    let output = match (given.clone(), default) {
        (Some(path), _) | (None, Some(path)) => path,
        (None, None) => anyhow::bail!(
            "{}: give --output FILE (.png or .svg); only a run directory has a default",
            inputs[0].display()
        ),
    };
    crate::output::check_output(&output, inputs, force)?;
    Ok(output)
}

/// The image a plot writes: `--output`, or `name` by [`default_output`] of the first input;
/// checked, and of a format the plots draw.
pub fn image_output(
    given: &Option<PathBuf>,
    name: &str,
    beside_files: bool,
    inputs: &[&Path],
    force: bool,
) -> Result<PathBuf> {
    let default = default_output(inputs[0], name, beside_files);
    let output = output_of(given, default, inputs, force)?;
    lgate_plot::ImageFormat::of(&output)?;
    Ok(output)
}

/// Checks, where the folder `dir` exists, each of the files `names` in it as an output
/// ([`check_output`]: an existing one is replaced only with `force`).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn check_outputs_in(dir: &Path, names: &[&str], force: bool) -> Result<()> {
    (names.iter())
        .filter(|_| dir.is_dir())
        .try_for_each(|name| check_output(&dir.join(name), &[], force))
}
