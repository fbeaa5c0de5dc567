//! The run directory's long tables, written and read as Parquet: the measurements of every
//! pair and size (`measurements.parquet`, `raw.parquet`), and a staged run's screening by
//! hosts (`hosts/`: the blocks inside hosts, the pairs between them and the host x host
//! summary). Apart from `lgate-rundir` so that the measuring ranks, which write only the
//! journal and meta.json, link no Parquet.

mod host_blocks;
mod measurements;
pub mod table;
pub mod table_layout;

pub use host_blocks::{
    BetweenPairs, HostBlock, HostBlocks, HostEntry, HostIndex, HostLinks, HostPairCounts,
    DENSE_LIMIT, HOST_BLOCKS_FORMAT,
};
pub use measurements::{for_each_measurement, MeasurementRow};

use lgate_rundir::{RunDir, RunDirError};

/// The run directory's door to its host files, where the Parquet they need is linked: with
/// `read_meta`, `read_journal`, `read_report` and `read_matrices` of [`RunDir`], every file a
/// run holds is read through the run.
pub trait RunHosts {
    /// Whether the run has host blocks (`hosts/index.json`).
    fn has_hosts(&self) -> bool;
    /// Reads the run's host blocks (`hosts/`), its index's format checked.
    fn read_hosts(&self) -> Result<HostBlocks, RunDirError>;
}

impl RunHosts for RunDir {
    fn has_hosts(&self) -> bool {
        HostBlocks::exist(self)
    }

    fn read_hosts(&self) -> Result<HostBlocks, RunDirError> {
        HostBlocks::read(self)
    }
}
