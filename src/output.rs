//! Where command output goes: stdout, or a file replaced atomically.

use std::io::{self, Write};
use std::path::Path;

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
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".lgate-plogp-")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "{}: cannot create a file in {}",
                path.display(),
                dir.display()
            )
        })?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("{}: cannot write", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("{}: cannot replace the file", path.display()))?;
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
