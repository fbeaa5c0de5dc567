//! The settings of the tool's commands that a library's message may advise changing ("measure
//! with more repetitions"), as values: a library names a [`Knob`], never a flag.
//!
//! How a knob is spelled on the command line is the binary's to say: it names knobs once at
//! start ([`name_by`]), as a program installs `log`'s logger, and every message formatted after
//! that spells the flag. Without a namer (a library used on its own, its unit tests) a knob reads
//! as its field in backticks.
//!
//! ```
//! use lgate_knobs::Knob;
//! assert_eq!(Knob::Reps.to_string(), "`reps`");
//! assert_eq!(Knob::Reps.in_command().to_string(), "measure `reps`");
//! ```
#![deny(missing_docs)]

use std::fmt;
use std::sync::OnceLock;

/// A setting of one of the tool's commands that a library's message advises or refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Knob {
    /// measure: the repetitions of each message size.
    Reps,
    /// measure: the repetitions of each screened pair.
    ScreenReps,
    /// measure: the sweeps over every pair.
    Sweeps,
    /// measure: the pairs tested between two hosts.
    PairsBetween,
    /// measure: keep the dense matrix of a staged run.
    Dense,
    /// measure: the budget spent on levels in doubt.
    Confidence,
    /// measure: the pairs tested at once.
    Concurrency,
    /// measure: sweep the pairs between hosts.
    Sweep,
    /// measure: sample the pairs of the full plan.
    Fast,
    /// measure: the plan (full or staged).
    Plan,
    /// measure: stop after this many pairs (for tests of resumption).
    StopAfter,
    /// measure: the run directory written.
    Output,
    /// measure: replace a run directory that holds a run.
    Force,
    /// measure: finish a run that stopped.
    Resume,
    /// measure: the topology the pair tests are grouped by.
    MeasureTopology,
    /// measure: the message sizes the distance matrices are written at.
    MatrixSizes,
    /// measure: the largest message size.
    MaxSize,
    /// measure: the message sizes of the ping-pong.
    Sizes,
    /// cluster: the clustering method.
    Algo,
    /// cluster: search a method's main parameter.
    Search,
    /// cluster: the matrix or each rank's vector of features.
    Space,
    /// cluster: the matrix of a run directory clustered.
    Matrix,
    /// cluster: the resamples that estimate each level's confidence.
    Resamples,
    /// cluster: the host whose hwloc distances are written.
    Host,
    /// score: the known placement.
    Truth,
    /// diff: the output format.
    DiffFormat,
    /// simulate: the machine as levels and fan-outs.
    Machine,
    /// simulate: the topology the simulated pair tests are grouped by.
    SimulateTopology,
    /// simulate: write no PLogP table.
    NoTable,
    /// simulate: the run directory written.
    SimulateOutput,
    /// simulate: replace a run directory that holds a run.
    SimulateForce,
    /// bcast bench: the topology the broadcasts follow.
    BcastTopology,
}

impl Knob {
    /// Every knob.
    pub const ALL: [Knob; 32] = [
        Knob::Reps,
        Knob::ScreenReps,
        Knob::Sweeps,
        Knob::PairsBetween,
        Knob::Dense,
        Knob::Confidence,
        Knob::Concurrency,
        Knob::Sweep,
        Knob::Fast,
        Knob::Plan,
        Knob::StopAfter,
        Knob::Output,
        Knob::Force,
        Knob::Resume,
        Knob::MeasureTopology,
        Knob::MatrixSizes,
        Knob::MaxSize,
        Knob::Sizes,
        Knob::Algo,
        Knob::Search,
        Knob::Space,
        Knob::Matrix,
        Knob::Resamples,
        Knob::Host,
        Knob::Truth,
        Knob::DiffFormat,
        Knob::Machine,
        Knob::SimulateTopology,
        Knob::NoTable,
        Knob::SimulateOutput,
        Knob::SimulateForce,
        Knob::BcastTopology,
    ];

    /// The command (and its subcommand) that takes it.
    pub fn command(self) -> &'static [&'static str] {
        use Knob::*;
        match self {
            Reps | ScreenReps | Sweeps | PairsBetween | Dense | Confidence | Concurrency
            | Sweep | Fast | Plan | StopAfter | Output | Force | Resume | MeasureTopology
            | MatrixSizes | MaxSize | Sizes => &["measure"],
            Algo | Search | Space | Matrix | Resamples | Host => &["cluster"],
            Truth => &["score"],
            DiffFormat => &["diff"],
            Machine | SimulateTopology | NoTable | SimulateOutput | SimulateForce => &["simulate"],
            BcastTopology => &["bcast", "bench"],
        }
    }

    /// Its field among that command's arguments (the argument's id, which is not always its
    /// flag's name).
    pub fn field(self) -> &'static str {
        use Knob::*;
        match self {
            Reps => "reps",
            ScreenReps => "screen_reps",
            Sweeps => "sweeps",
            PairsBetween => "pairs_between",
            Dense => "dense",
            Confidence => "confidence",
            Concurrency => "concurrency",
            Sweep => "sweep",
            Fast => "fast",
            Plan => "plan",
            StopAfter => "stop_after",
            Output | SimulateOutput => "out",
            Force | SimulateForce => "force",
            Resume => "resume",
            MeasureTopology | SimulateTopology | BcastTopology => "topology",
            MatrixSizes => "matrix_sizes",
            MaxSize => "max_size",
            Sizes => "sizes",
            Algo => "algo",
            Search => "search",
            Space => "space",
            Matrix => "matrix",
            Resamples => "resamples",
            Host => "host",
            Truth => "truth",
            DiffFormat => "format",
            Machine => "machine",
            NoTable => "no_table",
        }
    }

    /// It after its command, for advice about another command than the one running.
    pub fn in_command(self) -> InCommand {
        InCommand(self)
    }
}

/// How the binary spells knobs, set once.
static NAMER: OnceLock<fn(Knob) -> String> = OnceLock::new();

/// Spells every knob by `namer` from now on; only the first call counts.
pub fn name_by(namer: fn(Knob) -> String) {
    let _ = NAMER.set(namer);
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match NAMER.get() {
            Some(name) => f.write_str(&name(*self)),
            None => write!(f, "`{}`", self.field()),
        }
    }
}

/// A knob after its command (see [`Knob::in_command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InCommand(Knob);

impl fmt::Display for InCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0.command().join(" "), self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for k in Knob::ALL {
            assert!(seen.insert(k), "{k:?} twice");
            assert!(!k.command().is_empty() && !k.field().is_empty());
        }
    }

    #[test]
    fn one_command_takes_each_field_once() {
        let mut seen = std::collections::HashSet::new();
        for k in Knob::ALL {
            assert!(
                seen.insert((k.command(), k.field())),
                "{k:?}: another knob is the same field of the same command"
            );
        }
    }
}
