//! hwloc's user-given distances: the file that `hwloc-annotate IN.xml OUT.xml root distances
//! FILE` adds to a machine's topology, from the distances between ranks of one host and the
//! CPU each ran on; and the PUs of a machine in hwloc's logical order, read from its XML
//! (`lstopo --of xml`), because that file names objects by logical index (`pu:3`) while a rank
//! knows the OS index of its CPU.

use std::fmt::Write as _;

use crate::DistanceMatrix;

/// hwloc's distances kind: given by the user (2) and meaning latency (4).
pub const HWLOC_KIND_USER_LATENCY: u32 = 2 | 4;

/// hwloc-annotate reads each line of the file into 64 bytes: the name stays shorter.
const MAX_NAME: usize = 56;

/// Why a distances file cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HwlocError {
    /// The XML lists no PU with an OS index.
    #[error("it lists no PU object with an os_index: not the output of `lstopo --of xml`")]
    NoPus,
    /// A rank's CPU is not among the machine's PUs.
    #[error("rank {rank} ran on CPU {cpu}, which is no PU of the machine's XML ({pus} PUs): the XML is of another machine")]
    UnknownCpu {
        /// The rank.
        rank: String,
        /// Its CPU (OS index).
        cpu: usize,
        /// PUs in the XML.
        pus: usize,
    },
    /// Two ranks ran on one CPU: hwloc keeps distances between distinct objects.
    #[error("ranks {first} and {second} both ran on CPU {cpu}: hwloc distances are between distinct PUs; measure with a CPU per rank (mpirun --bind-to core, no more ranks than cores)")]
    SharedCpu {
        /// One rank.
        first: String,
        /// The other.
        second: String,
        /// The CPU.
        cpu: usize,
    },
    /// Fewer than two ranks.
    #[error("hwloc distances need 2 ranks or more; this host has {0}")]
    TooFew(usize),
}

/// The OS index of every PU of a machine's hwloc XML, by logical index: hwloc writes the
/// objects depth first, so the PUs come in logical order.
pub fn pus_in_logical_order(xml: &str) -> Result<Vec<usize>, HwlocError> {
    let mut pus = Vec::new();
    for tag in xml.split("<object").skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        if !tag.contains(" type=\"PU\"") {
            continue;
        }
        let index = tag
            .split_once(" os_index=\"")
            .and_then(|(_, rest)| rest.split('"').next())
            .and_then(|v| v.parse().ok());
        if let Some(index) = index {
            pus.push(index);
        }
    }
    if pus.is_empty() {
        return Err(HwlocError::NoPus);
    }
    Ok(pus)
}

/// The distances file of the matrix's `items` (rows), item k on the CPU `cpus[k]` (OS index),
/// over a machine whose PUs in logical order have the OS indexes `pus`: an optional
/// `name=` line, the kind ([`HWLOC_KIND_USER_LATENCY`]), the number of objects, one `pu:L`
/// per item (L its CPU's logical index), then every value row-major, one per line, in
/// nanoseconds (the matrix is in microseconds) rounded to whole numbers.
pub fn distances_file(
    name: &str,
    matrix: &DistanceMatrix,
    items: &[usize],
    cpus: &[usize],
    pus: &[usize],
) -> Result<String, HwlocError> {
    if items.len() < 2 {
        return Err(HwlocError::TooFew(items.len()));
    }
    let labels = matrix.labels();
    let label = |k: usize| labels.get(items[k]).cloned().unwrap_or_default();
    let mut logical = Vec::with_capacity(items.len());
    let mut first_on: std::collections::HashMap<usize, usize> = Default::default();
    for (k, &cpu) in cpus.iter().enumerate().take(items.len()) {
        let l = pus
            .iter()
            .position(|&p| p == cpu)
            .ok_or_else(|| HwlocError::UnknownCpu {
                rank: label(k),
                cpu,
                pus: pus.len(),
            })?;
        if let Some(&other) = first_on.get(&cpu) {
            return Err(HwlocError::SharedCpu {
                first: label(other),
                second: label(k),
                cpu,
            });
        }
        first_on.insert(cpu, k);
        logical.push(l);
    }
    let name: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME)
        .collect();
    let mut out = format!("name={name}\n{HWLOC_KIND_USER_LATENCY}\n{}\n", items.len());
    for l in &logical {
        let _ = writeln!(out, "pu:{l}");
    }
    for &i in items {
        for &j in items {
            let ns = if i == j {
                0.0
            } else {
                matrix.get(i, j) * 1000.0
            };
            let _ = writeln!(out, "{}", ns.round() as u64);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// `lstopo --input "pack:1 core:2 pu:2(indexes=0,2,1,3)" --of xml`, cut to its objects: the
    /// siblings of a core are 0 and 2, so logical order is 0, 2, 1, 3.
    const SMT_XML: &str = r#"<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f">
    <object type="Package" os_index="0" cpuset="0x0000000f">
      <object type="Core" os_index="0" cpuset="0x00000005">
        <object type="PU" os_index="0" cpuset="0x00000001"/>
        <object type="PU" os_index="2" cpuset="0x00000004"/>
      </object>
      <object type="Core" os_index="1" cpuset="0x0000000a">
        <object type="PU" os_index="1" cpuset="0x00000002"/>
        <object type="PU" os_index="3" cpuset="0x00000008"/>
      </object>
    </object>
  </object>
</topology>"#;

    #[test]
    fn pus_come_in_logical_order() {
        assert_eq!(pus_in_logical_order(SMT_XML).unwrap(), [0, 2, 1, 3]);
        assert_eq!(pus_in_logical_order("<topology/>"), Err(HwlocError::NoPus));
    }

    #[test]
    fn the_file_names_logical_pus_and_gives_nanoseconds() {
        let m = DistanceMatrix::new(
            array![[0.0, 0.25, 1.5], [0.25, 0.0, 1.0], [1.5, 1.0, 0.0]],
            None,
        )
        .unwrap();
        let pus = pus_in_logical_order(SMT_XML).unwrap();
        // Ranks 0 and 2 on CPUs 2 and 1: logical PUs 1 and 2.
        let text = distances_file("lgate-plogp t(0)", &m, &[0, 2], &[2, 1], &pus).unwrap();
        assert_eq!(
            text,
            "name=lgate-plogp t(0)\n6\n2\npu:1\npu:2\n0\n1500\n1500\n0\n"
        );
        assert!(
            text.lines().all(|l| l.len() < 63),
            "hwloc reads 64-byte lines"
        );
        let long = "x".repeat(200);
        let text = distances_file(&long, &m, &[0, 1], &[0, 3], &pus).unwrap();
        assert!(text.lines().all(|l| l.len() < 63));
        assert_eq!(
            distances_file("d", &m, &[0, 1], &[0, 0], &pus),
            Err(HwlocError::SharedCpu {
                first: "0".into(),
                second: "1".into(),
                cpu: 0
            })
        );
        assert!(matches!(
            distances_file("d", &m, &[0, 1], &[0, 9], &pus),
            Err(HwlocError::UnknownCpu { cpu: 9, .. })
        ));
        assert_eq!(
            distances_file("d", &m, &[1], &[0], &pus),
            Err(HwlocError::TooFew(1))
        );
    }
}
