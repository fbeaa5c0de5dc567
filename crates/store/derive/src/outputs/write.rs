//! A matrix set written: every matrix of a run and its index.

use super::*;

pub(super) fn entry(name: &str, file: &str, description: &str, size: Option<usize>) -> MatrixEntry {
    MatrixEntry::in_us(name, file, description, size)
}

/// Writes a run's distance matrices into `matrices/`, several files at once, and their index
/// `matrices/index.json`: every pair test's matrices go through here.
pub fn write_matrix_set(
    run: &RunDir,
    estimator: Estimator,
    matrices: &[(MatrixEntry, &DistanceMatrix)],
) -> Result<(), OutputError> {
    write_matrix_set_with(run, estimator, matrices, None, Vec::new(), None)
}

/// [`write_matrix_set`] with a default matrix for `cluster`, the candidates it tries, and a
/// mask of the measured pairs (written as `matrices/<mask file>`).
pub fn write_matrix_set_with(
    run: &RunDir,
    estimator: Estimator,
    matrices: &[(MatrixEntry, &DistanceMatrix)],
    default: Option<String>,
    candidates: Vec<String>,
    measured: Option<(MeasuredMask, &DistanceMatrix)>,
) -> Result<(), OutputError> {
    let mask_entry = measured.as_ref().map(|(m, _)| {
        MatrixEntry::in_us(
            "measured",
            &m.file,
            "1 where measured, 0 where filled",
            None,
        )
    });
    let all: Vec<(MatrixEntry, &DistanceMatrix)> = matrices
        .iter()
        .cloned()
        .chain(
            mask_entry
                .into_iter()
                .zip(measured.as_ref().map(|(_, m)| *m)),
        )
        .collect();
    let matrices_dir = run.file(lgate_rundir::MATRICES_DIR);
    std::fs::create_dir_all(&matrices_dir).map_err(|error| RunDirError::Io {
        path: matrices_dir.clone(),
        error,
    })?;
    // Several files at once: one file's writing overlaps another's formatting.
    all.par_iter()
        .try_for_each(|(meta, m)| -> Result<(), OutputError> {
            let name = meta.path();
            let path = run.file(&name);
            let io = |error| RunDirError::Io {
                path: path.clone(),
                error,
            };
            let mut file = run.create_file(&name)?;
            // Microseconds to 0.1 ns: far below what timing can resolve.
            m.write_csv_rounded(&mut file, 4).map_err(io)?;
            file.commit().map_err(io)?;
            Ok(())
        })?;
    MatrixIndex {
        estimator,
        combine_sweeps: "median".into(),
        matrices: matrices.iter().map(|(m, _)| m.clone()).collect(),
        default,
        candidates,
        measured: measured.map(|(m, _)| m),
    }
    .write(run)?;
    Ok(())
}
