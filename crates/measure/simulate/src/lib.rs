//! Synthetic machines with a known topology: the run directory `measure` writes (meta.json
//! with the true placement, measurements.parquet, matrices/, report.json), drawn from a model
//! of the machine instead of measured over MPI, and the time a real run would take.
//!
//! A [`MachineModel`] gives the levels with their fan-out, the placement of ranks, the PLogP
//! parameters of a link by the level at which two ranks part, per-sample noise and the
//! measurement artifacts of the reference thesis; [`preset`] has the thesis's systems.
//!
//! ```
//! use lgate_simulate::{preset, SimulateOptions, Simulation};
//!
//! let model = preset("betzy").ok_or("no such preset")?.with_machine("node=2,socket=2,core=4")?;
//! let options = SimulateOptions::new(&model, 1 << 10, 7);
//! let dir = tempfile::tempdir()?;
//! let run = lgate_rundir::RunDir::create(&dir.path().join("run"), false)?;
//! let written = Simulation::new(&model, &options)?.write(&run)?;
//! assert_eq!(written.pairs, 16 * 15 / 2);
//! assert!(dir.path().join("run/matrices/t_1024.csv").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod describe;
pub mod effects;
pub mod estimate;
pub mod generate;
pub mod layout;
pub mod options;
pub use lgate_model as model;
pub mod presets;
mod seed;
pub mod staged;

pub use estimate::{estimate, estimate_staged, Estimate, ScreenTest};
pub use generate::Simulation;
pub use layout::Layout;
pub use model::{MachineModel, ModelError, Placement, UnknownArtifact};
pub use options::{
    untested_slow_pairs, ChangeKind, Degradation, DegradationError, HostChange, HostChangeError,
    RankSlowdown, SimulateError, SimulateOptions, SimulationReport,
};
pub use presets::{preset, PRESETS};
