//! The diff for people (a few lines, worst first) and for scripts (JSON).

use lgate_knobs::Knob;

use crate::compare::UnitChange;
use crate::json::{
    DiffJson, Finite, MachineJson, MatrixJson, PairJson, RanksJson, SpreadChangeJson, UnitJson,
};
use crate::RunDiff;

/// Changed units listed in the summary at most; JSON lists up to [`LISTED`].
const SHOWN: usize = 12;
/// Items listed in JSON at most; counts are always given.
const LISTED: usize = 100;

/// A relative change as people say it: `+14.3 %`, or `x3.2` from twice on.
fn percent(x: f64) -> String {
    if 1.0 + x >= 2.0 {
        format!("x{:.1}", 1.0 + x)
    } else {
        format!("{:+.1} %", 100.0 * x)
    }
}

fn unit_json(u: &UnitChange) -> UnitJson {
    UnitJson {
        change: u.change,
        hosts: u.hosts.clone(),
        kind: u.kind.name(),
        matrix: u.matrix.clone(),
        name: u.name.clone(),
        pairs: u.pairs,
        ranks: u.ranks.clone(),
        spread_ratio: Finite(u.spread_ratio),
        z: Finite(u.z),
    }
}

fn unit_line(u: &UnitChange) -> String {
    let name = u.label();
    let pairs = if u.kind == crate::UnitKind::Pair {
        String::new()
    } else {
        format!("{} pairs, ", u.pairs)
    };
    format!(
        "{}: {} (z {:+.1}, {pairs}{})",
        name,
        percent(u.change),
        u.z,
        u.matrix
    )
}

impl RunDiff {
    /// One line: the verdict and the worst change (`changed: host n2`, `3 changes, worst:
    /// rank 5 (n0)`, `the whole machine changed (t:0 x2.3)`, `no change beyond the noise`).
    pub fn headline(&self) -> String {
        let changes = self.changes();
        if let Some(worst) = changes.first() {
            let what = worst.label();
            return match changes.len() {
                1 => format!("changed: {what}"),
                k => format!("{k} changes, worst: {what}"),
            };
        }
        if let Some(m) = self.machine_changes().first() {
            return format!(
                "the whole machine changed ({} {})",
                m.matrix,
                percent(m.change)
            );
        }
        if !self.level_changes().is_empty() {
            return "the topology changed".into();
        }
        "no change beyond the noise".into()
    }

    /// The diff as JSON: matching, per-matrix medians, changes worst first, noise changes,
    /// every host and host pair, the pairs that changed most and the topology.
    pub fn to_json(&self) -> DiffJson {
        let changes = self.changes();
        let matrices = (self.matrices.iter())
            .map(|m| {
                let (z, change, spread) = m.medians();
                MatrixJson {
                    matrix: m.name.clone(),
                    median_change: change,
                    median_z: Finite(z),
                    noise_a: m.noise.0.name(),
                    noise_b: m.noise.1.name(),
                    pairs: m.pairs.len(),
                    spread_ratio: Finite(spread),
                }
            })
            .collect();
        let mut top: Vec<(&str, &crate::PairChange)> = self
            .matrices
            .iter()
            .flat_map(|m| m.pairs.iter().map(move |p| (m.name.as_str(), p)))
            .filter(|(_, p)| p.z.abs() >= self.options.threshold)
            .collect();
        let beyond = top.len();
        top.sort_by(|x, y| y.1.z.abs().total_cmp(&x.1.z.abs()));
        top.truncate(LISTED);
        let of_kind = |k: crate::UnitKind| {
            (self.units.iter())
                .filter(|u| u.kind == k)
                .map(unit_json)
                .collect::<Vec<_>>()
        };
        let machine = (self.machine.iter())
            .map(|m| MachineJson {
                carried_by: m.carried_by.iter().take(LISTED).map(unit_json).collect(),
                changed: m.flagged,
                matrix: m.matrix.clone(),
                median_change: m.change,
                median_z: Finite(m.z),
                pairs: m.pairs,
            })
            .collect();
        DiffJson {
            a: self.paths.0.display().to_string(),
            b: self.paths.1.display().to_string(),
            changed: self.changed(),
            changes: changes.iter().take(LISTED).map(|u| unit_json(u)).collect(),
            changes_count: changes.len(),
            one_matrix_only: (self.one_matrix_only.iter())
                .take(LISTED)
                .map(unit_json)
                .collect(),
            host_pairs: (of_kind(crate::UnitKind::HostPair).into_iter())
                .take(LISTED)
                .collect(),
            hosts: of_kind(crate::UnitKind::Host),
            machine,
            machine_change: self.options.machine_change,
            matrices,
            min_change: self.options.min_change,
            pairs: (top.iter())
                .map(|(m, p)| PairJson {
                    a_us: p.values.0,
                    b_us: p.values.1,
                    change: p.change,
                    i: self.rows_a[p.rows.0].0,
                    j: self.rows_a[p.rows.1].0,
                    matrix: m.to_string(),
                    z: Finite(p.z),
                })
                .collect(),
            pairs_beyond_threshold: beyond,
            ranks: RanksJson {
                matched: self.matching.pairs.len(),
                matched_by: self.matching.by.describe().to_string(),
                only_a: self.matching.only_a.clone(),
                only_b: self.matching.only_b.clone(),
                untested: self.untested.clone(),
            },
            spread_changes: (self.spread_changes().into_iter())
                .map(|(name, matrix, ratio)| SpreadChangeJson {
                    matrix,
                    name,
                    ratio,
                })
                .collect(),
            spread_factor: self.options.spread_factor,
            threshold: self.options.threshold,
            topology: (self.levels.as_ref()).map(|l| l.iter().map(|x| x.to_json()).collect()),
        }
    }

    /// The diff for people: what was matched, what changed worst first, noise and topology
    /// changes, and the verdict.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let m = &self.matching;
        out.push_str(&format!(
            "{} -> {}: {} ranks matched by {}",
            self.paths.0.display(),
            self.paths.1.display(),
            m.pairs.len(),
            m.by.describe()
        ));
        if !m.only_a.is_empty() || !m.only_b.is_empty() {
            out.push_str(&format!(
                "; {} only in A, {} only in B",
                m.only_a.len(),
                m.only_b.len()
            ));
        }
        if !self.untested.is_empty() {
            out.push_str(&format!("; {} not tested in both", self.untested.len()));
        }
        out.push('\n');
        if let Some(first) = self.matrices.first() {
            out.push_str(&format!(
                "noise: A's from {}, B's from {}\n",
                first.noise.0.name(),
                first.noise.1.name()
            ));
        }
        self.machine_lines(&mut out);
        self.change_lines(&mut out);
        self.spread_lines(&mut out);
        if let Some(levels) = &self.levels {
            if levels.is_empty() {
                out.push_str("topology: no levels in either run\n");
            }
            for l in levels {
                out.push_str(&format!("topology: {}\n", l.line()));
            }
        }
        out.push_str(&format!(
            "verdict: {}\n",
            if self.changed() {
                "changed"
            } else {
                "no change beyond the noise"
            }
        ));
        out
    }

    /// The matrices' shifts (L and t(m), which topologies are made of, and any other that changed), and the units that carried a shift of the whole machine.
    fn machine_lines(&self, out: &mut String) {
        // L and t(m), the distances topologies are made of, and any other matrix that changed.
        for (mtx, shift) in self.matrices.iter().zip(&self.machine) {
            let kind = mtx.name.split(':').next().unwrap_or_default();
            if !(matches!(kind, "latency" | "t" | "matrix" | "imported") || shift.flagged) {
                continue;
            }
            let (_, _, spread) = mtx.medians();
            out.push_str(&format!(
                "  {:<10} {} pairs, median change {} (z {:+.2}), noise x{:.2}{}\n",
                mtx.name,
                mtx.pairs.len(),
                percent(shift.change),
                shift.z,
                spread,
                if shift.flagged {
                    "  <- the whole machine changed"
                } else {
                    ""
                }
            ));
        }
        for shift in self.machine_changes() {
            if !shift.carried_by.is_empty() {
                out.push_str(&format!("  {} carried by:\n", shift.matrix));
                for u in shift.carried_by.iter().take(SHOWN) {
                    out.push_str(&format!("    {}\n", unit_line(u)));
                }
            }
        }
    }

    /// The units that changed against the machine, surest first, or that none did.
    fn change_lines(&self, out: &mut String) {
        let changes = self.changes();
        if changes.is_empty() {
            out.push_str(&format!(
                "no host, host pair, rank or pair changed against the machine beyond {} standard \
                 errors (its pairs together, against how much this machine moves between runs) \
                 and {:.0} %\n",
                self.options.threshold,
                100.0 * self.options.min_change
            ));
        } else {
            out.push_str(&format!(
                "changed against the machine beyond {} standard errors and {:.0} %, surest \
                 first:\n",
                self.options.threshold,
                100.0 * self.options.min_change
            ));
            for u in changes.iter().take(SHOWN) {
                out.push_str(&format!("  {}\n", unit_line(u)));
            }
            if changes.len() > SHOWN {
                out.push_str(&format!(
                    "  ... and {} more ({} json lists them)\n",
                    changes.len() - SHOWN,
                    Knob::DiffFormat
                ));
            }
        }
        if !self.one_matrix_only.is_empty() {
            out.push_str(
                "not counted: beyond the bar in one matrix and in none of the others that \
                 decide (noise at one size):\n",
            );
            for u in self.one_matrix_only.iter().take(SHOWN) {
                out.push_str(&format!("  {}\n", unit_line(u)));
            }
        }
    }

    /// The hosts (or the whole machine) whose noise changed, one line each.
    fn spread_lines(&self, out: &mut String) {
        let spread = self.spread_changes();
        if !spread.is_empty() {
            out.push_str(&format!(
                "noise changed by a factor of {} or more:\n",
                self.options.spread_factor
            ));
            // One line per host (or the whole machine): its matrices and their factors.
            let mut by_what: Vec<(&str, Vec<(&str, f64)>)> = Vec::new();
            for (what, matrix, r) in &spread {
                match by_what.iter_mut().find(|x| x.0 == what) {
                    Some(x) => x.1.push((matrix, *r)),
                    None => by_what.push((what, vec![(matrix, *r)])),
                }
            }
            for (what, list) in by_what.iter().take(SHOWN) {
                let (lo, hi) = list.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                    (lo.min(x.1), hi.max(x.1))
                });
                let range = if (hi - lo).abs() < 0.005 {
                    format!("x{hi:.2}")
                } else {
                    format!("x{lo:.2} to x{hi:.2}")
                };
                out.push_str(&format!(
                    "  {what}: noise {range} in {} ({})\n",
                    if list.len() == 1 {
                        "1 matrix".to_string()
                    } else {
                        format!("{} matrices", list.len())
                    },
                    list.iter().map(|x| x.0).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
}
