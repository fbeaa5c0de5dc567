//! The declared check for people (a few lines) and for scripts (JSON).

use super::*;

impl DeclaredCheck {
    /// A few lines for people: each level, its misplaced hosts, the verdict.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} against {} ({})\n",
            self.run.display(),
            self.file.display(),
            self.format
        );
        if !self.not_declared.is_empty() {
            out += &format!(
                "not declared (left out): {}\n",
                self.not_declared.join(", ")
            );
        }
        for name in &self.one_host_a_group {
            out += &format!(
                "level {name}: one host a group, the hosts themselves (nothing between hosts to \
                 judge it by)\n"
            );
        }
        for l in &self.levels {
            let shown: Vec<&str> = l.groups.iter().take(6).map(String::as_str).collect();
            let groups = format!(
                "{} groups: {}{}",
                l.groups.len(),
                shown.join(", "),
                if l.groups.len() > 6 { ", ..." } else { "" }
            );
            let how = if l.seen { "seen" } else { "NOT SEEN" };
            out += &format!(
                "level {} ({groups}) at {}: {how} (pairs inside groups {:.3} us, between {:.3} us; z {:.1})\n",
                l.name, l.matrix, l.inside_us, l.between_us, l.z
            );
            for m in &l.misplaced {
                out += &format!(
                    "  host {}: declared in {}, measured with {} ({:.3} us to {}'s hosts against {:.3} us to {}'s; z {:.1} over {} pairs)\n",
                    m.host, m.declared, m.nearer, m.to_nearer_us, m.nearer, m.to_declared_us, m.declared, m.z, m.pairs
                );
            }
            for t in &l.together {
                out += &format!(
                    "  {} and {}: declared apart, measured as one group ({:.3} us between them against {:.3} us inside; z {:.1} over {} pairs)\n",
                    t.groups.0, t.groups.1, t.between_us, t.inside_us, t.z, t.pairs
                );
            }
        }
        // A host misplaced at two levels (a tree and a block topology of one file) is one host.
        let hosts = (self.levels.iter())
            .flat_map(|l| l.misplaced.iter().map(|m| m.host.as_str()))
            .collect::<HashSet<&str>>()
            .len();
        let joined: usize = self.levels.iter().map(|l| l.together.len()).sum();
        let unseen: Vec<&str> = (self.levels.iter())
            .filter(|l| !l.seen)
            .map(|l| l.name.as_str())
            .collect();
        let mut findings = Vec::new();
        if !unseen.is_empty() {
            findings.push(format!(
                "the run does not show level(s) {}",
                unseen.join(", ")
            ));
        }
        if hosts > 0 {
            findings.push(format!("{hosts} host(s) measured elsewhere than declared"));
        }
        if joined > 0 {
            findings.push(format!(
                "{joined} pair(s) of groups declared apart measured as one"
            ));
        }
        out += &if findings.is_empty() {
            "verdict: the run agrees with the declared topology\n".to_string()
        } else {
            format!("verdict: {}\n", findings.join("; "))
        };
        out
    }

    /// Everything, for scripts.
    pub fn to_json(&self) -> DeclaredJson {
        let f = finite_or_null;
        DeclaredJson {
            declared: self.file.display().to_string(),
            differs: self.differs(),
            format: self.format.clone(),
            levels: (self.levels.iter())
                .map(|l| DeclaredLevelJson {
                    between_us: f(l.between_us),
                    groups: l.groups.clone(),
                    inside_us: f(l.inside_us),
                    level: l.name.clone(),
                    matrix: l.matrix.clone(),
                    misplaced: (l.misplaced.iter())
                        .map(|m| MisplacedJson {
                            declared: m.declared.clone(),
                            host: m.host.clone(),
                            nearer: m.nearer.clone(),
                            pairs: m.pairs,
                            to_declared_us: f(m.to_declared_us),
                            to_nearer_us: f(m.to_nearer_us),
                            z: f(m.z),
                        })
                        .collect(),
                    seen: l.seen,
                    together: (l.together.iter())
                        .map(|t| TogetherJson {
                            between_us: f(t.between_us),
                            groups: [t.groups.0.clone(), t.groups.1.clone()],
                            inside_us: f(t.inside_us),
                            pairs: t.pairs,
                            z: f(t.z),
                        })
                        .collect(),
                    z: f(l.z),
                })
                .collect(),
            not_declared: self.not_declared.clone(),
            one_host_a_group: self.one_host_a_group.clone(),
            run: self.run.display().to_string(),
        }
    }
}
