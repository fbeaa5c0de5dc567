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
