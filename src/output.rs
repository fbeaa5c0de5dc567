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
    lgate_output::write_atomic(path, text.as_bytes())
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// Whether an error is only stdout closing early (`lgate-plogp ... | head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
