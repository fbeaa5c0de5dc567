//! KAI Scheduler's Topology: Kueue's shape under KAI's own API group, with the node labels it
//! names.

use super::kueue::topology_object;
use super::{ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// KAI Scheduler's API group and version of `Topology`.
pub const KAI_API_VERSION: &str = "kai.scheduler/v1alpha1";

/// KAI Scheduler's `Topology` and the node labels it names.
#[derive(Debug, Clone, Copy)]
pub struct KaiTopologyWriter;

impl TopologyWriter for KaiTopologyWriter {
    fn name(&self) -> &'static str {
        "kai-topology"
    }
    fn description(&self) -> &'static str {
        "KAI Scheduler's Topology object (kai.scheduler/v1alpha1) and the node labels it names, for kubectl apply --server-side"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let hint = "name its levels' labels in a workload's topology constraint";
        topology_object(self.name(), KAI_API_VERSION, hint, topology, context)
    }
}
