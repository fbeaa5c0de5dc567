//! What `cluster` tells people about a clustering, on stderr: what was read, the levels, the
//! levels a method made that the distances barely support, the slow ranks set aside, and the
//! health the run's report.json found.

use std::fmt;

use lgate_knobs::Knob;
use lgate_topology::Topology;

use crate::input::ClusterInput;

/// The summary of one clustering, shown with `Display`.
#[derive(Debug)]
pub struct ClusterSummary<'a> {
    /// What was clustered.
    pub input: &'a ClusterInput,
    /// The topology found.
    pub topology: &'a Topology,
    /// The method.
    pub method: &'a crate::methods::Method,
    /// What choosing the matrix and searching the parameter said, if anything.
    pub note: Option<&'a str>,
    /// The items clustered.
    pub items: usize,
    /// The items the method set aside as slow, with how many times slower.
    pub slow: &'a [(usize, f64)],
    /// The run's health lines (report.json), none for a matrix file.
    pub health: Vec<String>,
    /// The levels left out because they split ranks that were not bound apart.
    pub unbound: &'a [crate::UnboundLevel],
    /// The ranks taking turns on the same CPUs, when they were found a level.
    pub turns: Option<&'a crate::taking_turns::TakingTurns>,
    /// The resamples asked for to tell how sure each level is.
    pub resamples: usize,
}

impl ClusterSummary<'_> {
    /// The health lines of the run directory `input`'s report.json (none for a matrix file or
    /// a run without one; one line saying so for a report that cannot be read).
    pub fn health_of(input: &std::path::Path) -> Vec<String> {
        if !input.join(lgate_rundir::files::REPORT_FILE).is_file() {
            return Vec::new();
        }
        match lgate_rundir::Report::read(input) {
            Ok(report) => report.health().to_vec(),
            Err(e) => vec![format!("{e} (the run's health is not shown)")],
        }
    }

    fn weak_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // auto keeps only levels that stand apart; the other algorithms keep what they make.
        if self.method.auto().is_some() {
            return Ok(());
        }
        for (name, separation) in self.input.weak_levels(self.topology) {
            if separation > 0.0 {
                writeln!(
                    f,
                    "  weak: the groups of {name} barely stand apart (separation \
                     {separation:.2}, below the 1.2 auto asks of a level): the algorithm's \
                     parameters made this split more than the distances do"
                )?;
            } else {
                writeln!(
                    f,
                    "  weak: {name} is no level auto would make (mostly single ranks, fewer \
                     than two groups of two, or groups wider inside than apart)"
                )?;
            }
        }
        Ok(())
    }

    fn confidence_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(c) = self.topology.confidence() else {
            if self.method.auto().is_none() || self.input.dense().is_none() {
                return Ok(());
            }
            let filled = self.input.filled.filter(|&(f, _)| f > 0);
            // No resamples first: a run with filled pairs asked for none says so, not that its
            // mask cannot be read.
            return match (filled, self.resamples) {
                (_, 0) if self.items > crate::confidence::DEFAULT_MAX_ITEMS => writeln!(
                    f,
                    "  confidence: not estimated (above {} ranks only when asked: {} N)",
                    crate::confidence::DEFAULT_MAX_ITEMS,
                    Knob::Resamples
                ),
                (_, 0) => writeln!(f, "  confidence: not estimated ({} 0)", Knob::Resamples),
                (Some((filled, total)), _) => writeln!(
                    f,
                    "  confidence: not estimated: {:.1} % of the pairs were filled in, and the \
                     run's matrices/measured.csv, which tells them, cannot be read",
                    100.0 * filled as f64 / total.max(1) as f64
                ),
                _ => Ok(()),
            };
        };
        // The level of ranks taking turns is added after the resamples, not by them.
        let resampled = self.topology.levels().len() - usize::from(self.turns.is_some());
        let what = if resampled == 0 {
            "one group"
        } else {
            "these levels"
        };
        let turns = match self.turns {
            Some(t) => format!(
                " by distance (the level {} of ranks taking turns is judged by its pairs' \
                 times, below)",
                t.name
            ),
            None => String::new(),
        };
        writeln!(
            f,
            "  confidence: {} of {} resamples of the matrix (its noise dealt out anew) gave \
             {what}{turns}",
            (c.same_levels * c.resamples as f64).round(),
            c.resamples
        )?;
        for level in self.topology.levels() {
            if let Some(share) = level.confidence.filter(|&s| s < crate::confidence::DECIDED) {
                writeln!(
                    f,
                    "  undecided: {} came back in {:.0} % of the resamples only: the noise \
                     nearly hides it; {}",
                    level.name,
                    100.0 * share,
                    self.what_decides()
                )?;
            }
        }
        // Every level found and not kept; the three levels resamples made most often (the
        // groupings the pairs between hosts nearly decide have their line in the note).
        let (found, made): (Vec<_>, Vec<_>) = (c.undecided.iter())
            .filter(|u| u.z.is_none())
            .partition(|u| u.name.is_some());
        for u in found.iter().chain(made.iter().take(3)) {
            match &u.name {
                Some(name) => writeln!(
                    f,
                    "  undecided, not kept: {name} ({} groups) was found but came back in \
                     {:.0} % of the resamples only: the noise may have made it; {}",
                    u.groups,
                    100.0 * u.share,
                    self.what_decides()
                )?,
                None => writeln!(
                    f,
                    "  undecided: a level of {} groups came back in {:.0} % of the resamples \
                     though not found here: the noise nearly hides it; {}",
                    u.groups,
                    100.0 * u.share,
                    self.what_decides()
                )?,
            }
        }
        if made.len() > 3 {
            writeln!(
                f,
                "  undecided: {} more levels came back in fewer resamples (`confidence` in the \
                 JSON topology lists them)",
                made.len() - 3
            )?;
        }
        Ok(())
    }

    /// What would decide a level the resamples leave in doubt.
    fn what_decides(&self) -> String {
        let hosts = (self.input.hosts.as_deref()).is_some_and(|h| h.iter().any(|x| *x != h[0]));
        let reps = format!("{}, {}", Knob::Reps.in_command(), Knob::ScreenReps);
        if hosts {
            format!(
                "more repetitions ({reps}), sweeps, or for a level above the hosts more pairs \
                 between them ({}) would decide it",
                Knob::PairsBetween.in_command()
            )
        } else {
            format!("more repetitions ({reps}) or sweeps would decide it")
        }
    }

    /// The single ranks of each level that also holds groups: E-cores without an SMT sibling,
    /// siblings a slow pair measured apart.
    fn singles_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for level in self.topology.levels() {
            let singles: Vec<usize> = (level.groups.iter())
                .filter(|g| g.len() == 1)
                .map(|g| g[0])
                .collect();
            let sizes: Vec<usize> = (level.groups.iter())
                .map(Vec::len)
                .filter(|&n| n >= 2)
                .collect();
            let (Some(lo), Some(hi)) = (sizes.iter().min(), sizes.iter().max()) else {
                continue;
            };
            if singles.is_empty() {
                continue;
            }
            let beside = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}-{hi}")
            };
            writeln!(
                f,
                "  {}: {} single {} ({}), each a group of its own beside groups of {beside}",
                level.name,
                singles.len(),
                if singles.len() == 1 { "rank" } else { "ranks" },
                lgate_topology::sorted_rank_list(&singles),
            )?;
        }
        Ok(())
    }

    fn unbound_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for u in self.unbound {
            let (a, b) = u.ranks;
            if let (true, Some(t)) = (u.same_cpus, self.turns) {
                writeln!(
                    f,
                    "  left out: {} ({} groups) puts ranks {a} and {b} apart, but they were \
                     bound to the same CPUs and took turns on them: they are the level {} \
                     instead",
                    u.name, u.groups, t.name
                )?;
                continue;
            }
            if u.same_cpus {
                writeln!(
                    f,
                    "  left out: {} ({} groups) puts ranks {a} and {b} apart, but they were \
                     bound to the same CPUs and took turns on them: no measurement places one \
                     apart from the other, so the split is noise (ranks sharing a CPU are a \
                     level of their own, found when their pairs stand apart)",
                    u.name, u.groups
                )?;
                continue;
            }
            writeln!(
                f,
                "  left out: {} ({} groups) puts ranks {a} and {b} apart, but they were not \
                 bound apart (their allowed CPUs overlap): where they ran changed with the \
                 scheduler, so the split is no structure of the machine; bind the ranks \
                 (mpirun --bind-to core, srun --cpu-bind=cores) to measure inside a host",
                u.name, u.groups
            )?;
        }
        Ok(())
    }

    fn slow_line(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.slow.is_empty() {
            return Ok(());
        }
        let ranks: Vec<usize> = self
            .slow
            .iter()
            .map(|&(i, _)| self.input.ranks[i])
            .collect();
        let mut hosts: Vec<&str> = match &self.input.hosts {
            Some(h) => ranks
                .iter()
                .filter_map(|&r| h.get(r))
                .map(|h| h.as_str())
                .collect(),
            None => Vec::new(),
        };
        hosts.sort_unstable();
        hosts.dedup();
        let (lo, hi) = self
            .slow
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &(_, f)| {
                (lo.min(f), hi.max(f))
            });
        let on = if hosts.is_empty() {
            String::new()
        } else {
            format!(" (on {})", hosts.join(", "))
        };
        writeln!(
            f,
            "  slow ranks: {}{on}, {lo:.2}-{hi:.2}x the usual distance towards every other \
             rank; their pairs were scaled down before clustering (outliers in the JSON \
             topology)",
            lgate_topology::sorted_rank_list(&ranks),
        )
    }
}

impl fmt::Display for ClusterSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for w in &self.input.warnings {
            writeln!(f, "warning: {w}")?;
        }
        if let Some(note) = self.note {
            writeln!(f, "{note}")?;
        }
        let levels = self.topology.levels().len();
        writeln!(
            f,
            "cluster: {} ({} ranks), {}: {levels} {}",
            self.input.source,
            self.items,
            self.method.name(),
            if levels == 1 { "level" } else { "levels" }
        )?;
        if !self.topology.levels().is_empty() {
            f.write_str(&lgate_topology::level_summary(self.topology))?;
        } else if self.unbound.is_empty() {
            writeln!(
                f,
                "  one group: the distances show no structure at these thresholds"
            )?;
        } else {
            writeln!(f, "  one group: no level stands for the machine")?;
        }
        self.singles_lines(f)?;
        self.confidence_lines(f)?;
        self.unbound_lines(f)?;
        match self.turns {
            Some(t) if t.bound => writeln!(
                f,
                "  {}: ranks bound to the same CPUs took turns on them; their pairs measure at \
                 least {:.1}x the host's other pairs (lowest tenth over highest tenth, at the \
                 size measured where they stand out most), a level of its own ({} groups)",
                t.name, t.ratio, t.groups
            )?,
            Some(t) => writeln!(
                f,
                "  {}: ranks each other's slowest partner in their group, above every other \
                 pair of it ({:.2}x, lowest tenth over highest tenth): a level of its own ({} \
                 groups), as SMT siblings or ranks sharing a CPU are when they take turns on it",
                t.name, t.ratio, t.groups
            )?,
            None => {}
        }
        self.weak_lines(f)?;
        self.slow_line(f)?;
        for line in &self.health {
            writeln!(f, "  health: {line}")?;
        }
        Ok(())
    }
}
