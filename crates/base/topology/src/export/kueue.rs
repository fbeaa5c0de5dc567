//! Kueue's Topology (topology-aware scheduling): a cluster-scoped `Topology` naming one node
//! label per level, coarsest first and `kubernetes.io/hostname` last, followed by the labels
//! it names on every node, in one file `kubectl apply --server-side` takes.

use super::k8s::{node_label_list, tier_levels};
use super::{ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// Kueue's API group and version of `Topology`.
pub const KUEUE_API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

/// The most levels a Kueue `Topology` holds.
pub const KUEUE_MAX_LEVELS: usize = 16;

/// The name the objects are written with (a ResourceFlavor's `spec.topologyName`).
pub const TOPOLOGY_OBJECT_NAME: &str = "lgate-plogp";

/// Kueue's `Topology` and the node labels it names.
#[derive(Debug, Clone, Copy)]
pub struct KueueTopologyWriter;

impl TopologyWriter for KueueTopologyWriter {
    fn name(&self) -> &'static str {
        "kueue-topology"
    }
    fn description(&self) -> &'static str {
        "Kueue's Topology object (kueue.x-k8s.io/v1beta2) and the node labels it names, for kubectl apply --server-side"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let hint =
            format!("name it in a ResourceFlavor: spec.topologyName: {TOPOLOGY_OBJECT_NAME}");
        topology_object(self.name(), KUEUE_API_VERSION, &hint, topology, context)
    }
}

/// A `Topology` object of `api_version` (Kueue's and KAI's share their shape) and the node
/// labels its levels name, as one multi-document YAML file; `hint` says how it is used.
pub(super) fn topology_object(
    format: &'static str,
    api_version: &str,
    hint: &str,
    topology: &Topology,
    context: &ExportContext,
) -> Result<String, ExportError> {
    let (machine, labels) = tier_levels(topology, context, format)?;
    if labels.len() + 1 > KUEUE_MAX_LEVELS {
        return Err(ExportError::TooManyLevels {
            format,
            levels: labels.len() + 1,
            most: KUEUE_MAX_LEVELS,
        });
    }
    let mut out = format!(
        "# {format}: a Topology of {} level(s) (each a node label, coarsest first) and the \
         labels on every node\n# written by lgate-plogp {} from {}\n# Apply with: kubectl \
         apply --server-side --field-manager=lgate-plogp -f FILE\n# and {hint}\n",
        labels.len() + 1,
        env!("CARGO_PKG_VERSION"),
        context.source.replace('\n', " ")
    );
    out.push_str(&format!(
        "apiVersion: {api_version}\nkind: Topology\nmetadata:\n  name: {TOPOLOGY_OBJECT_NAME}\n\
         spec:\n  levels:\n"
    ));
    for label in &labels {
        out.push_str(&format!("    - nodeLabel: \"{label}\"\n"));
    }
    out.push_str("    - nodeLabel: \"kubernetes.io/hostname\"\n---\n");
    out.push_str(&node_label_list(&machine));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{KaiTopologyWriter, FABRIC_TIER};
    use crate::tree::Level;

    /// Whether `key` is a Kubernetes label key as the Topology CRD's pattern has it: an optional
    /// DNS subdomain prefix and `/`, then a name of 1-63 characters.
    fn label_key(key: &str) -> bool {
        let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
        let dns_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && name.as_bytes()[0].is_ascii_alphanumeric()
            && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
        key.len() <= 316 && name_ok && (prefix.is_empty() || prefix.split('.').all(dns_label))
    }

    /// A label value: at most 63 characters, alphanumeric at both ends, `-_.` inside.
    fn label_value(v: &str) -> bool {
        v.is_empty()
            || (v.len() <= 63
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                && v.as_bytes()[0].is_ascii_alphanumeric()
                && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric())
    }

    #[test]
    fn the_topology_objects_pass_the_crds_checks_field_by_field() {
        let (topology, hosts) = crate::export::two_switches();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        for (writer, api) in [
            (
                &KueueTopologyWriter as &dyn TopologyWriter,
                KUEUE_API_VERSION,
            ),
            (&KaiTopologyWriter, crate::export::KAI_API_VERSION),
        ] {
            let text = writer.write(&topology, &context).unwrap();
            let docs: Vec<serde_norway::Value> = serde_norway::Deserializer::from_str(&text)
                .map(|d| serde::Deserialize::deserialize(d).unwrap())
                .collect();
            assert_eq!(docs.len(), 2, "{text}");
            let t = &docs[0];
            assert_eq!(t["apiVersion"].as_str(), Some(api));
            assert_eq!(t["kind"].as_str(), Some("Topology"));
            assert_eq!(t["metadata"]["name"].as_str(), Some(TOPOLOGY_OBJECT_NAME));
            let levels: Vec<&str> = (t["spec"]["levels"].as_sequence().unwrap().iter())
                .map(|l| l["nodeLabel"].as_str().unwrap())
                .collect();
            // 1-16 levels, unique, valid keys, the host's own label last only.
            assert_eq!(
                levels,
                [
                    format!("{FABRIC_TIER}1").as_str(),
                    &format!("{FABRIC_TIER}0"),
                    "kubernetes.io/hostname"
                ]
            );
            assert!(levels.iter().all(|l| label_key(l)), "{levels:?}");
            // Every label the Topology names but the host's is on every node, with a valid value.
            let nodes = docs[1]["items"].as_sequence().unwrap();
            assert_eq!(nodes.len(), 8);
            for node in nodes {
                let labels = node["metadata"]["labels"].as_mapping().unwrap();
                for level in &levels[..2] {
                    let v = labels.get(*level).and_then(|v| v.as_str()).unwrap();
                    assert!(label_value(v), "{v}");
                }
            }
            // Read back: the two levels of hosts.
            let d = crate::declared::parse_kube_topology(&text).unwrap();
            let groups: Vec<usize> = d.levels.iter().map(|l| l.groups.len()).collect();
            assert_eq!(groups, [2, 4], "{d:?}");
        }
    }

    #[test]
    fn more_levels_than_kueue_holds_are_refused() {
        let n = 2usize.pow(17);
        let levels = (1..=16)
            .map(|k| {
                let size = n >> k;
                Level::new(
                    format!("l{k}"),
                    (0..1 << k)
                        .map(|g| (g * size..(g + 1) * size).collect())
                        .collect(),
                )
            })
            .collect();
        let topology = Topology::from_levels(n, levels).unwrap();
        let hosts: Vec<String> = (0..n).map(|r| format!("h{r}")).collect();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        let err = KueueTopologyWriter.write(&topology, &context).unwrap_err();
        assert!(
            matches!(
                err,
                ExportError::TooManyLevels {
                    levels: 17,
                    most: 16,
                    ..
                }
            ),
            "{err}"
        );
    }
}
