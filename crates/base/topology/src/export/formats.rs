//! The three formats lgate-plogp also reads: LGate, its JSON document and Newick.

use super::{ExportContext, ExportError, TopologyWriter};
use crate::format::{to_string, TopologyFormat};
use crate::tree::Topology;

/// The LGate topology file (`cluster { group { 0-7 } }`), for LGate and schedulers of pair tests.
#[derive(Debug, Clone, Copy)]
pub struct LgateWriter;

impl TopologyWriter for LgateWriter {
    fn name(&self) -> &'static str {
        "lgate"
    }
    fn description(&self) -> &'static str {
        "LGate topology file: nested cluster { ... } with group { ranks } leaves"
    }
    fn write(&self, topology: &Topology, _: &ExportContext) -> Result<String, ExportError> {
        Ok(to_string(topology, TopologyFormat::Lgate))
    }
}

/// The `lgate-plogp-topology` JSON document: tree, named levels and labels, for programs.
#[derive(Debug, Clone, Copy)]
pub struct JsonWriter;

impl TopologyWriter for JsonWriter {
    fn name(&self) -> &'static str {
        "json"
    }
    fn description(&self) -> &'static str {
        "lgate-plogp-topology JSON: the tree, named levels and labels, for programs"
    }
    fn write(&self, topology: &Topology, _: &ExportContext) -> Result<String, ExportError> {
        Ok(to_string(topology, TopologyFormat::Json))
    }
}

/// A Newick tree with ranks as taxa, for tree viewers.
#[derive(Debug, Clone, Copy)]
pub struct NewickWriter;

impl TopologyWriter for NewickWriter {
    fn name(&self) -> &'static str {
        "newick"
    }
    fn description(&self) -> &'static str {
        "Newick tree with ranks as taxa, for tree viewers"
    }
    fn write(&self, topology: &Topology, _: &ExportContext) -> Result<String, ExportError> {
        Ok(to_string(topology, TopologyFormat::Newick))
    }
}
