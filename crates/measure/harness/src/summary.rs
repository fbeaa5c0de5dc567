//! What `measure` tells people when a run is done: how long the pair tests took against the
//! harness, each stage, what waiting cost, the MPI library, the hosts, and the files written.

use std::fmt;

use lgate_rundir::RunMeta;

use crate::RunReport;

/// The summary of a finished run, shown with `Display`.
#[derive(Debug)]
pub struct MeasureSummary<'a> {
    /// What the run reported.
    pub report: &'a RunReport,
    /// The run's meta.json, where it could be read.
    pub meta: Option<&'a RunMeta>,
    /// The files the derive stage wrote.
    pub derived: &'a [String],
    /// Where the job's time went on rank 0, when measured.
    pub job: Option<JobTimes>,
}

/// Where a job's time went on rank 0, from its start to the last file written (mpirun's launch
/// before it and MPI_Finalize after it are outside).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobTimes {
    /// MPI_Init (and MPI's own start-up) in seconds.
    pub mpi_init_s: f64,
    /// Every rank's placement, the hosts' facts, the plan and the run directory.
    pub setup_s: f64,
    /// The pair tests with their barriers and bookkeeping (the run's wall time).
    pub measuring_s: f64,
    /// Deriving the tables, matrices and report.
    pub deriving_s: f64,
    /// From the process's start to the last file written.
    pub total_s: f64,
}

impl fmt::Display for JobTimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rest =
            self.total_s - self.mpi_init_s - self.setup_s - self.measuring_s - self.deriving_s;
        write!(
            f,
            "job: {:.1} s on rank 0 from its start to the last file: MPI start-up {:.1} s, \
             placement, host facts and plan {:.1} s, measuring {:.1} s, deriving {:.1} s, the \
             rest {:.1} s (mpirun's launch and MPI_Finalize are outside it)",
            self.total_s,
            self.mpi_init_s,
            self.setup_s,
            self.measuring_s,
            self.deriving_s,
            rest.max(0.0)
        )
    }
}

impl MeasureSummary<'_> {
    fn measured(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.report.summary;
        let resumed = if self.report.resumed_pairs > 0 {
            format!(" (resumed: {} measured before)", self.report.resumed_pairs)
        } else {
            String::new()
        };
        writeln!(
            f,
            "measured {} pairs{resumed} in {:.2} s: pair tests ran {:.1}% of the wall time, the \
             harness took {:.1}% (barriers, bookkeeping, I/O)",
            s.pairs_measured,
            s.wall_s,
            100.0 * (1.0 - s.overhead_share),
            100.0 * s.overhead_share
        )?;
        if let Some(plan) = self.meta.and_then(|m| m.schedule.plan.as_ref()) {
            for note in &plan.notes {
                writeln!(f, "  plan: {note}")?;
            }
        }
        for stage in &s.stages {
            writeln!(
                f,
                "  stage {:<8} {:>7} tests  {:>8.2} s  ({})",
                stage.stage.name(),
                stage.tests,
                stage.wall_s,
                stage.stage.describe()
            )?;
        }
        for note in &s.notes {
            writeln!(f, "  {note}")?;
        }
        if let Some((mean, max)) = s.waiting_cpu_share() {
            writeln!(
                f,
                "while waiting for their next test, ranks used {:.1}% of a core on average (at \
                 most {:.1}%)",
                100.0 * mean,
                100.0 * max
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for MeasureSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.report.summary;
        if s.pairs_measured == 0 {
            writeln!(
                f,
                "nothing left to measure: the journal holds all {} pairs; outputs rebuilt from it",
                s.pairs_total
            )?;
        } else {
            self.measured(f)?;
        }
        if let Some(meta) = self.meta {
            if let Some(first) = meta.mpi.library_line() {
                let protocol = meta.mpi.protocol().len();
                writeln!(
                    f,
                    "MPI: {first}; {protocol} protocol thresholds recorded in meta.json"
                )?;
            }
            for line in meta.host_summary_lines() {
                writeln!(f, "{line}")?;
            }
        }
        let mut files = vec![
            lgate_rundir::META_FILE.to_string(),
            (lgate_rundir::JournalFormat::ALL.into_iter())
                .map(|f| f.file_name())
                .find(|name| self.report.run_dir.join(name).exists())
                .unwrap_or(lgate_rundir::JOURNAL_FILE)
                .to_string(),
        ];
        files.extend(self.derived.iter().cloned());
        writeln!(
            f,
            "wrote {}/ ({})",
            self.report.run_dir.display(),
            files.join(", ")
        )?;
        match &self.job {
            Some(job) => writeln!(f, "{job}"),
            None => Ok(()),
        }
    }
}
