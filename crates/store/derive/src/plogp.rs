//! The PLogP derivation: tables, matrices and report from PLogP measurements, whether a
//! journal holds them or a simulation draws them.

use lgate_rundir::Pair;
use lgate_rundir::RunDir;
use rayon::prelude::*;

use std::collections::BTreeSet;

use lgate_rundir::JournalEntry;

use crate::outputs::{OutputBuilder, OutputError, OutputOptions};
use crate::params::{PairParams, Parameter};
use lgate_rundir::PairMeasurement;

/// One pair's PLogP measurement in one sweep: what the journal holds, or a simulation draws.
#[derive(Debug, Clone)]
pub struct MeasuredPair {
    /// The sweep, from 0.
    pub sweep: u32,
    /// The pair.
    pub pair: Pair,
    /// Its measurement.
    pub measurement: PairMeasurement,
}

/// The PLogP derivation every PLogP run goes through (`measure` from its journal, `simulate`
/// from drawn measurements): tables, `matrices/` and `report.json` over `ranks` (ascending)
/// in `sweeps`. Pairs come in chunks of cheap descriptions from `next_chunk`; `measure` turns
/// each into its measurement. A chunk's pairs are measured and valued on every core while the
/// previous chunk is added, so no more than two chunks and the matrices are held. Returns the
/// names written.
pub fn derive_plogp<D: Send + Sync>(
    run: &RunDir,
    ranks: Vec<usize>,
    sweeps: Vec<u32>,
    options: &OutputOptions,
    mut next_chunk: impl FnMut() -> Option<Vec<D>>,
    measure: impl Fn(&D) -> Result<MeasuredPair, OutputError> + Sync,
) -> Result<Vec<String>, OutputError> {
    let mut outputs = OutputBuilder::new(run, ranks, sweeps, options)?;
    let valuer = outputs.valuer();
    let keep_params = outputs.needs_params();
    let value = |chunk: Vec<D>| {
        chunk
            .par_iter()
            .map(|d| {
                let m = measure(d)?;
                let p =
                    PairParams::from_measurement(m.sweep, m.pair, &m.measurement).map_err(|e| {
                        OutputError::BadPair {
                            sweep: m.sweep,
                            i: m.pair.i,
                            j: m.pair.j,
                            message: e.to_string(),
                        }
                    })?;
                let v = valuer.values_of(&p)?;
                let raw = m.measurement.sizes.iter().any(|s| s.raw.is_some());
                Ok((keep_params.then_some(p), v, raw.then_some(m)))
            })
            .collect::<Result<Vec<_>, OutputError>>()
    };
    let mut ready = next_chunk().map(value).transpose()?;
    while let Some(done) = ready.take() {
        let upcoming = next_chunk();
        let (valued, added) = rayon::join(
            || upcoming.map(value).transpose(),
            || -> Result<(), OutputError> {
                for (p, v, raw) in done {
                    outputs.add_values(v, p.as_ref())?;
                    if let Some(m) = raw {
                        add_raw(&mut outputs, &m)?;
                    }
                }
                Ok(())
            },
        );
        added?;
        ready = valued?;
    }
    outputs.finish()
}

/// Every kept repetition of a measurement, into `raw.parquet`.
fn add_raw(outputs: &mut OutputBuilder, m: &MeasuredPair) -> Result<(), OutputError> {
    for s in &m.measurement.sizes {
        if let Some(r) = &s.raw {
            for (p, v) in [
                (Parameter::Rtt, &r.rtt),
                (Parameter::Os, &r.os),
                (Parameter::Or, &r.or),
                (Parameter::G, &r.g),
            ] {
                if !v.is_empty() {
                    outputs.add_raw(m.sweep, m.pair, s.size, p, v)?;
                }
            }
        }
    }
    Ok(())
}

/// Pairs of the journal parsed and valued at once (per chunk, on every core).
const JOURNAL_CHUNK: usize = 1 << 14;

/// Writes `measurements.parquet` (and `.csv`), `raw.parquet` with raw samples, `matrices/`
/// and `report.json` into the run directory from the journal's entries; every pair among the
/// tested ranks must be there in every sweep present. Returns the names written.
pub fn write_outputs(
    run: &RunDir,
    entries: &[JournalEntry],
    options: &OutputOptions,
) -> Result<Vec<String>, OutputError> {
    let journal = run.journal_file().display().to_string();
    let ranks: BTreeSet<usize> = entries.iter().flat_map(|e| [e.i, e.j]).collect();
    let sweeps: BTreeSet<u32> = entries.iter().map(|e| e.sweep).collect();
    let mut chunks = entries.chunks(JOURNAL_CHUNK);
    derive_plogp(
        run,
        ranks.into_iter().collect(),
        sweeps.into_iter().collect(),
        options,
        || {
            chunks
                .next()
                .map(|c| c.iter().collect::<Vec<&JournalEntry>>())
        },
        |e: &&JournalEntry| {
            let measurement: PairMeasurement =
                e.result
                    .plogp()
                    .cloned()
                    .ok_or_else(|| OutputError::BadPair {
                        sweep: e.sweep,
                        i: e.i,
                        j: e.j,
                        message: format!("a {} result, not a PLogP one", e.result.test_name()),
                    })?;
            Ok(MeasuredPair {
                sweep: e.sweep,
                pair: Pair::new(e.i, e.j),
                measurement,
            })
        },
    )
    .map_err(|error| match error {
        // The journal is where a bad pair came from: name it.
        OutputError::BadPair {
            sweep,
            i,
            j,
            message,
        } => OutputError::BadEntry {
            path: journal.clone(),
            sweep,
            i,
            j,
            message,
        },
        other => other,
    })
}
