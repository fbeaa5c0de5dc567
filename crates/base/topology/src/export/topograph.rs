//! topograph's model file (NVIDIA topograph, `pkg/models`): the tree of switches of the levels
//! that hold whole hosts as the `switches` map (a switch per group, the groups inside it its
//! children) and a block per group of the finest of them, on its leaf switch, with its hosts.
//! topograph's `test` provider and its `*-sim` providers load it (`modelFileName`), and every
//! engine (Slurm, Kubernetes labels, Slinky, NFD) then serves the tree. The blocks carry no
//! accelerator domain: the measurements do not tell one.

use std::fmt::Write as _;

use super::host_levels::HostLevels;
use super::{yaml_quoted, ExportContext, ExportError, TopologyWriter};
use crate::tree::Topology;

/// The switch of group `g` of the host level `k` (0 the coarsest), as the Slurm tree names it.
fn switch_name(k: usize, g: usize) -> String {
    format!("s{k}_{g}")
}

/// topograph's model file of the levels that hold whole hosts.
#[derive(Debug, Clone, Copy)]
pub struct TopographModelWriter;

impl TopologyWriter for TopographModelWriter {
    fn name(&self) -> &'static str {
        "topograph-model"
    }
    fn description(&self) -> &'static str {
        "topograph's model file (switches and blocks) for its test and simulation providers (modelFileName)"
    }
    fn write(&self, topology: &Topology, context: &ExportContext) -> Result<String, ExportError> {
        let machine = HostLevels::of(topology, context, self.name())?;
        let levels = machine.host_groups();
        let depth = levels.len();
        let mut out = format!(
            "# topograph model: {depth} level(s) of switches, the coarsest first; a block per \
             leaf switch\n# written by lgate-plogp {} from {}\n# Load it with a provider's \
             parameter modelFileName (provider test, or aws-sim, gcp-sim, ...)\nswitches:\n",
            env!("CARGO_PKG_VERSION"),
            context.source.replace('\n', " ")
        );
        for (k, (name, groups)) in levels.iter().enumerate() {
            for (g, group) in groups.iter().enumerate() {
                let _ = write!(out, "  {}:", switch_name(k, g));
                if k + 1 == depth {
                    // A leaf switch: its hosts come from its block.
                    let _ = writeln!(out, " {{}}  # {}", name.replace('\n', " "));
                    continue;
                }
                let _ = writeln!(out, "  # {}\n    switches:", name.replace('\n', " "));
                for &c in &group.children {
                    let _ = writeln!(out, "    - {}", switch_name(k + 1, c));
                }
            }
        }
        out.push_str("blocks:\n");
        if let Some((_, leaves)) = levels.last() {
            for (g, group) in leaves.iter().enumerate() {
                let _ = writeln!(out, "- switch: {}\n  nodes:", switch_name(depth - 1, g));
                for entry in compact(&group.hosts) {
                    let _ = writeln!(out, "  - {}", yaml_quoted(&entry));
                }
            }
        }
        Ok(out)
    }
}

/// Host names as topograph's compact ranges (`n[01-04]`): a run of names that differ only in
/// a trailing number of one width, consecutive, becomes one entry; any other name stays as it
/// is. topograph expands `prefix[lo-hi]` at the end of an entry only, padded to `lo`'s width.
fn compact(hosts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < hosts.len() {
        let Some((prefix, width, first)) = numbered(hosts[k]) else {
            out.push(hosts[k].to_string());
            k += 1;
            continue;
        };
        let mut end = k + 1;
        while end < hosts.len()
            && numbered(hosts[end]) == Some((prefix, width, first + (end - k) as u64))
        {
            end += 1;
        }
        // Numbers of one width only (`n009`, `n010`; not `n9`, `n10`): the range expands back
        // to the same names.
        if end - k >= 2 {
            let (lo, hi) = (&hosts[k][prefix.len()..], &hosts[end - 1][prefix.len()..]);
            out.push(format!("{prefix}[{lo}-{hi}]"));
        } else {
            out.extend(hosts[k..end].iter().map(|h| h.to_string()));
        }
        k = end;
    }
    out
}

/// A name's prefix, and its trailing number's width and value (at most 18 digits, so that it
/// fits); `None` without one, or with brackets in the prefix.
fn numbered(h: &str) -> Option<(&str, usize, u64)> {
    let digits = h.len() - h.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, number) = h.split_at(h.len() - digits);
    (!number.is_empty() && number.len() <= 18 && !prefix.contains(['[', ']']))
        .then(|| (prefix, number.len(), number.parse::<u64>().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compact_as_topograph_expands_them() {
        let c = |h: &[&str]| compact(h);
        assert_eq!(
            c(&["n01", "n02", "n03", "x", "n05"]),
            ["n[01-03]", "x", "n05"]
        );
        assert_eq!(c(&["gpu8", "gpu9", "gpu10"]), ["gpu[8-9]", "gpu10"]);
        assert_eq!(c(&["a1", "b2", "b3"]), ["a1", "b[2-3]"]);
        assert_eq!(c(&["n9", "n8"]), ["n9", "n8"]);
        assert_eq!(c(&["1101", "1102"]), ["[1101-1102]"]);
        let expanded =
            crate::declared::expand_topograph_nodes(&c(&["r1n098", "r1n099", "r1n100"])).unwrap();
        assert_eq!(expanded, ["r1n098", "r1n099", "r1n100"]);
    }

    #[test]
    fn the_model_holds_the_tree_and_reads_back() {
        let (topology, hosts) = crate::export::two_switches();
        let context = ExportContext {
            hosts: Some(&hosts),
            source: "test",
        };
        let text = TopographModelWriter.write(&topology, &context).unwrap();
        let yaml: serde_norway::Value = serde_norway::from_str(&text).unwrap();
        let switches = yaml["switches"].as_mapping().unwrap();
        assert_eq!(switches.len(), 6, "{text}");
        assert_eq!(
            yaml["switches"]["s0_1"]["switches"],
            serde_norway::from_str::<serde_norway::Value>("[s1_2, s1_3]").unwrap()
        );
        let blocks = yaml["blocks"].as_sequence().unwrap();
        assert_eq!(blocks.len(), 4);
        assert_eq!(blocks[3]["switch"].as_str(), Some("s1_3"));
        assert_eq!(blocks[3]["nodes"][0].as_str(), Some("n[06-07]"));
        let d = crate::declared::parse_topograph_model(&text).unwrap();
        let levels: Vec<Vec<Vec<String>>> = (d.levels.iter())
            .map(|l| l.groups.iter().map(|g| g.hosts.clone()).collect())
            .collect();
        let h = |k: std::ops::Range<usize>| k.map(|h| format!("n{h:02}")).collect::<Vec<_>>();
        assert_eq!(
            levels,
            [
                vec![h(0..4), h(4..8)],
                vec![h(0..2), h(2..4), h(4..6), h(6..8)]
            ]
        );
    }
}
