//! Atomic file output: every file is written to a temporary file beside its destination and
//! renamed into place, so a reader (or a crash) never sees half a file.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("topology.json");
//! lgate_output::write_atomic(&path, b"{}\n")?;
//! assert_eq!(std::fs::read(&path)?, b"{}\n");
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same folder, then renames it.
///
/// Errors carry the operation that failed; the caller adds the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file written piece by piece that appears at its path, whole, only on [`AtomicFile::commit`];
/// dropped without it, nothing appears and the temporary file is removed.
///
/// A path that already exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO)
/// is written directly: renaming over it would replace a device with a file.
pub struct AtomicFile {
    target: Target,
}

enum Target {
    Temporary {
        tmp: BufWriter<tempfile::NamedTempFile>,
        path: std::path::PathBuf,
    },
    Direct(BufWriter<std::fs::File>),
}

impl AtomicFile {
    /// Starts writing the file that will be `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() && !meta.is_dir() {
                let file = std::fs::OpenOptions::new().write(true).open(path)?;
                return Ok(AtomicFile {
                    target: Target::Direct(BufWriter::new(file)),
                });
            }
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".lgate-plogp-");
        // Readable as any file the user creates (the umask applies), not private.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {e}", dir.display()),
            )
        })?;
        Ok(AtomicFile {
            target: Target::Temporary {
                tmp: BufWriter::with_capacity(1 << 20, tmp),
                path: path.to_path_buf(),
            },
        })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::Temporary { tmp, path } => {
                let tmp = tmp.into_inner().map_err(|e| e.into_error())?;
                tmp.as_file().sync_all()?;
                tmp.persist(&path).map_err(|e| e.error)?;
            }
            Target::Direct(mut file) => file.flush()?,
        }
        Ok(())
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.target {
            Target::Temporary { tmp, .. } => tmp,
            Target::Direct(file) => file,
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break, or starts with `#`
/// (which would start a comment line).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with('#') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn files_are_as_readable_as_the_umask_allows() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.json");
        write_atomic(&path, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_ne!(mode & 0o044, 0, "group or others may read: {mode:o}");
    }

    #[test]
    fn an_uncommitted_file_never_appears() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.parquet");
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"half").unwrap();
        drop(file);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        write_atomic(Path::new("/dev/null"), b"discarded").unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(
            meta.file_type().is_char_device(),
            "/dev/null is still a device"
        );
    }

    #[test]
    fn missing_folder_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/out.txt"), b"x").unwrap_err();
        assert!(err.to_string().contains("cannot create a file in"), "{err}");
    }
}
