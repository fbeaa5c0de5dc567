//! The derive stage: a run is measured (its journal), then derived (tables, matrices, report)
//! by its plan and pair test. `measure` calls it on rank 0 after the run, `measure --resume`
//! on a finished run calls it again.

use lgate_rundir::{RunDir, TestInfo};

use crate::outputs::{OutputError, OutputOptions};
use crate::pingpong::write_pingpong_outputs;
use crate::plogp::write_outputs;
use crate::staged::derive_staged;

/// Derives the outputs of the run in `run` from its journal, by the run's pair test; returns
/// the names written.
pub fn derive(run: &RunDir, options: &OutputOptions) -> Result<Vec<String>, OutputError> {
    let meta = run.read_meta()?;
    if meta.schedule.plan.is_some() {
        return derive_staged(run, &meta, options);
    }
    let journal = run.read_journal()?;
    match &meta.test {
        TestInfo::PLogP(_) => write_outputs(run, &journal.entries, options),
        TestInfo::PingPong(_) => write_pingpong_outputs(run, &journal.entries, options),
        other => Err(OutputError::UnknownTest {
            path: run.file(lgate_rundir::META_FILE).display().to_string(),
            test: other.name().to_string(),
        }),
    }
}
