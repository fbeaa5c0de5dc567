//! Slurm's `topology.conf`: the topology/tree plugin's switches, the topology/block plugin's
//! blocks.

use std::collections::{BTreeMap, HashMap};

use super::{Declared, DeclaredError, DeclaredGroup, DeclaredLevel, DeclaredPlace};
use crate::export::expand_hostlist;

/// Whether `text` looks like a Slurm `topology.conf` (a `SwitchName=` or `BlockName=` line).
pub fn is_slurm_conf(text: &str) -> bool {
    text.lines().map(strip_comment).any(|l| {
        let l = l.trim_start();
        l.starts_with("SwitchName=") || l.starts_with("BlockName=")
    })
}

fn strip_comment(line: &str) -> &str {
    line.split('#').next().unwrap_or("")
}

/// One switch's children.
pub(super) enum Below {
    Hosts(Vec<String>),
    Switches(Vec<String>),
}

/// Reads a Slurm `topology.conf`: `SwitchName=NAME Nodes=HOSTLIST` and `SwitchName=NAME
/// Switches=LIST` (topology/tree) or `BlockName=NAME Nodes=HOSTLIST` (topology/block).
/// Errors say the line and the problem.
pub fn parse_slurm_conf(text: &str) -> Result<Declared, DeclaredError> {
    let mut switches: Vec<(String, Below)> = Vec::new();
    let mut blocks: Vec<DeclaredGroup> = Vec::new();
    let mut sizes: Vec<usize> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: String| DeclaredError::at(DeclaredPlace::Line(n + 1), what);
        let mut fields: BTreeMap<String, String> = BTreeMap::new();
        for word in line.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| bad(format!("`{word}` is not KEY=VALUE")))?;
            fields.insert(key.to_ascii_lowercase(), value.to_string());
        }
        let expand = |key: &str, shown: &str| -> Result<Vec<String>, DeclaredError> {
            let list = &fields[key];
            let names = expand_hostlist(list).map_err(|e| bad(format!("{shown}={list}: {e}")))?;
            if names.is_empty() {
                return Err(bad(format!("{shown}= is empty")));
            }
            Ok(names)
        };
        if let Some(name) = fields.get("switchname") {
            let below = match (
                fields.contains_key("nodes"),
                fields.contains_key("switches"),
            ) {
                (true, false) => Below::Hosts(expand("nodes", "Nodes")?),
                (false, true) => Below::Switches(expand("switches", "Switches")?),
                _ => {
                    return Err(bad(format!(
                        "switch {name} needs Nodes= or Switches=, not both"
                    )))
                }
            };
            if switches.iter().any(|(s, _)| s == name) {
                return Err(bad(format!("switch {name} is declared twice")));
            }
            switches.push((name.clone(), below));
        } else if let Some(name) = fields.get("blockname") {
            if !fields.contains_key("nodes") {
                return Err(bad(format!("block {name} has no Nodes=")));
            }
            blocks.push(DeclaredGroup {
                name: name.clone(),
                hosts: expand("nodes", "Nodes")?,
            });
        } else if let Some(list) = fields.get("blocksizes") {
            sizes = parse_block_sizes(list).map_err(|e| bad(format!("BlockSizes={list}: {e}")))?;
        } else {
            return Err(bad("neither SwitchName=, BlockName= nor BlockSizes=".into()));
        }
    }
    match (switches.is_empty(), blocks.is_empty()) {
        (true, true) => Err(DeclaredError::file("no SwitchName= or BlockName= line")),
        (false, false) => Err(DeclaredError::file(
            "both switches and blocks: one plugin's file at a time",
        )),
        (true, false) => Ok(Declared {
            format: "Slurm topology.conf (block)".into(),
            levels: block_levels(blocks, &sizes).map_err(DeclaredError::file)?,
        }),
        (false, true) => Ok(Declared {
            format: "Slurm topology.conf (tree)".into(),
            levels: tree_levels(&switches).map_err(DeclaredError::file)?,
        }),
    }
}

/// The sizes of `BlockSizes=` (nodes, comma-separated).
pub(super) fn parse_block_sizes(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .map(|v| match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("`{v}` is not a number of nodes")),
        })
        .collect()
}

/// The levels of topology/block: the blocks, then each aggregate size of `sizes` (in nodes)
/// larger than a block, as runs of consecutive blocks in the file's order (Slurm's planning
/// aggregates); levels of one group left out.
pub(super) fn block_levels(
    blocks: Vec<DeclaredGroup>,
    sizes: &[usize],
) -> Result<Vec<DeclaredLevel>, String> {
    check_once(blocks.iter().map(|b| (&b.name, &b.hosts)))?;
    let base = blocks.iter().map(|b| b.hosts.len()).max().unwrap_or(1);
    let mut levels = Vec::new();
    if blocks.len() >= 2 {
        levels.push(DeclaredLevel {
            name: "block".into(),
            groups: blocks.clone(),
        });
    }
    for &size in sizes.iter().filter(|&&s| s > base) {
        if size % base != 0 {
            return Err(format!(
                "BlockSizes {size} is not a multiple of the blocks' {base} nodes"
            ));
        }
        let groups: Vec<DeclaredGroup> = blocks
            .chunks(size / base)
            .map(|run| DeclaredGroup {
                name: run
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join("+"),
                hosts: run.iter().flat_map(|b| b.hosts.iter().cloned()).collect(),
            })
            .collect();
        if groups.len() >= 2 {
            levels.push(DeclaredLevel {
                name: format!("aggregate of {size} nodes"),
                groups,
            });
        }
    }
    Ok(levels)
}

/// Each host in one group only.
pub(super) fn check_once<'a>(
    groups: impl Iterator<Item = (&'a String, &'a Vec<String>)>,
) -> Result<(), String> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (name, hosts) in groups {
        for h in hosts {
            if let Some(other) = seen.insert(h, name) {
                return Err(format!("host {h} is under both {other} and {name}"));
            }
        }
    }
    Ok(())
}

/// The levels of a tree of switches: per height above the leaf switches (0), each host's
/// lowest ancestor at that height or above; levels of one group left out.
pub(super) fn tree_levels(switches: &[(String, Below)]) -> Result<Vec<DeclaredLevel>, String> {
    let index: HashMap<&str, usize> = (switches.iter().enumerate())
        .map(|(k, (name, _))| (name.as_str(), k))
        .collect();
    let mut parent: Vec<Option<usize>> = vec![None; switches.len()];
    for (k, (name, below)) in switches.iter().enumerate() {
        if let Below::Switches(children) = below {
            for c in children {
                let &child = (index.get(c.as_str()))
                    .ok_or_else(|| format!("switch {name}: no switch {c} is declared"))?;
                if let Some(p) = parent[child] {
                    return Err(format!(
                        "switch {c} is under both {} and {name}",
                        switches[p].0
                    ));
                }
                parent[child] = Some(k);
            }
        }
    }
    // Heights: a leaf switch 0, a switch one above its highest child.
    let mut height = vec![0usize; switches.len()];
    for k in 0..switches.len() {
        let (mut at, mut h, mut steps) = (k, 0, 0);
        while let Some(p) = parent[at] {
            h += 1;
            height[p] = height[p].max(h);
            at = p;
            steps += 1;
            if steps > switches.len() {
                return Err(format!("switch {} is its own ancestor", switches[k].0));
            }
        }
    }
    let leaves: Vec<(&String, &Vec<String>)> = (switches.iter())
        .filter_map(|(name, below)| match below {
            Below::Hosts(h) => Some((name, h)),
            Below::Switches(_) => None,
        })
        .collect();
    check_once(leaves.iter().copied())?;
    let top = height.iter().copied().max().unwrap_or(0);
    let mut levels = Vec::new();
    for tier in (0..=top).rev() {
        // Each host's lowest ancestor at this height or above.
        let mut groups: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (name, hosts) in &leaves {
            let mut at = index[name.as_str()];
            while height[at] < tier {
                match parent[at] {
                    Some(p) => at = p,
                    None => break,
                }
            }
            groups.entry(at).or_default().extend(hosts.iter().cloned());
        }
        if groups.len() >= 2 {
            levels.push(DeclaredLevel {
                name: format!("tier{}", tier + 1),
                groups: (groups.into_iter())
                    .map(|(k, hosts)| DeclaredGroup {
                        name: switches[k].0.clone(),
                        hosts,
                    })
                    .collect(),
            });
        }
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_of_switches_gives_a_level_per_tier() {
        let text = "# two leaves under one spine, one more leaf beside\n\
                    SwitchName=s1 Nodes=n[01-02]\n\
                    SwitchName=s2 Nodes=n[03-04] LinkSpeed=100\n\
                    SwitchName=s3 Nodes=n05\n\
                    SwitchName=spine Switches=s[1-2]\n\
                    SwitchName=root Switches=spine,s3\n";
        assert!(is_slurm_conf(text));
        let d = parse_slurm_conf(text).unwrap();
        let names: Vec<(&str, Vec<&str>)> = (d.levels.iter())
            .map(|l| {
                (
                    l.name.as_str(),
                    l.groups.iter().map(|g| g.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            // n05's leaf hangs from the root: at the second tier it is under the root alone.
            [
                ("tier2", vec!["spine", "root"]),
                ("tier1", vec!["s1", "s2", "s3"])
            ]
        );
        assert_eq!(d.levels[0].groups[0].hosts, ["n01", "n02", "n03", "n04"]);
        assert_eq!(d.hosts().len(), 5);
    }

    #[test]
    fn blocks_are_one_level() {
        let d = parse_slurm_conf(
            "BlockName=b0 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\nBlockSizes=4,8\n",
        )
        .unwrap();
        assert_eq!(d.levels.len(), 1);
        assert_eq!(d.levels[0].groups[1].hosts, ["n5", "n6", "n7", "n8"]);
    }

    #[test]
    fn block_sizes_aggregate_consecutive_blocks() {
        let d = parse_slurm_conf(
            "BlockName=b0 Nodes=n[1-2]\nBlockName=b1 Nodes=n[3-4]\nBlockName=b2 Nodes=n[5-6]\n\
             BlockName=b3 Nodes=n[7-8]\nBlockSizes=2,4,8\n",
        )
        .unwrap();
        let names: Vec<&str> = d.levels.iter().map(|l| l.name.as_str()).collect();
        // 8 nodes is every block: one group, no level.
        assert_eq!(names, ["block", "aggregate of 4 nodes"]);
        let agg = &d.levels[1].groups;
        assert_eq!(agg[0].name, "b0+b1");
        assert_eq!(agg[1].hosts, ["n5", "n6", "n7", "n8"]);
        for (sizes, problem) in [
            (
                "3,6",
                "BlockSizes 3 is not a multiple of the blocks' 2 nodes",
            ),
            (
                "2,x",
                "line 5: BlockSizes=2,x: `x` is not a number of nodes",
            ),
        ] {
            let text = format!(
                "BlockName=b0 Nodes=n[1-2]\nBlockName=b1 Nodes=n[3-4]\nBlockName=b2 Nodes=n[5-6]\n\
                 BlockName=b3 Nodes=n[7-8]\nBlockSizes={sizes}\n"
            );
            let e = parse_slurm_conf(&text).unwrap_err();
            assert!(e.to_string().contains(problem), "{sizes}: {e}");
        }
    }

    #[test]
    fn a_bad_file_says_the_line_and_the_problem() {
        for (text, problem) in [
            (
                "SwitchName=s1\n",
                "line 1: switch s1 needs Nodes= or Switches=, not both",
            ),
            ("SwitchName=s1 Nodes=n[1-\n", "line 1: Nodes=n[1-:"),
            (
                "SwitchName=s1 Nodes=a\nSwitchName=r Switches=s9\n",
                "switch r: no switch s9",
            ),
            (
                "SwitchName=s1 Nodes=a\nSwitchName=s2 Nodes=a\n",
                "host a is under both s1 and s2",
            ),
            ("Nodes=a\n", "line 1: neither SwitchName="),
            ("hello\n", "line 1: `hello` is not KEY=VALUE"),
            ("# nothing\n", "no SwitchName= or BlockName= line"),
        ] {
            let e = parse_slurm_conf(text).unwrap_err();
            assert!(e.to_string().starts_with(problem), "{text:?}: {e}");
            // The place is typed: a line's problem names its line, the file's none.
            let place = match problem.strip_prefix("line ") {
                Some(rest) => DeclaredPlace::Line(rest[..rest.find(':').unwrap()].parse().unwrap()),
                None => DeclaredPlace::File,
            };
            assert_eq!(e.place, place, "{text:?}");
        }
    }
}
