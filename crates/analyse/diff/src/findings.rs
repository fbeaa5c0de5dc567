//! A diff's findings read back: the changes that stand on their own, the verdict, the
//! headline matrix and its z-scores as pictures.

use super::*;

impl RunDiff {
    /// The local changes not explained by a larger one found in another matrix (a rank on a
    /// changed host, a host pair with a changed host), worst first.
    pub fn changes(&self) -> Vec<&UnitChange> {
        let hosts: BTreeSet<&str> = self
            .local
            .iter()
            .filter(|u| u.kind == UnitKind::Host)
            .map(|u| u.name.as_str())
            .collect();
        let pair_hosts: BTreeSet<&str> = self
            .local
            .iter()
            .filter(|u| {
                u.kind == UnitKind::HostPair && !u.hosts.iter().any(|h| hosts.contains(h.as_str()))
            })
            .flat_map(|u| u.hosts.iter().map(String::as_str))
            .collect();
        let mut out: Vec<&UnitChange> = self
            .local
            .iter()
            .filter(|u| match u.kind {
                UnitKind::Host => true,
                UnitKind::HostPair => !u.hosts.iter().any(|h| hosts.contains(h.as_str())),
                UnitKind::Rank => !u
                    .hosts
                    .iter()
                    .any(|h| hosts.contains(h.as_str()) || pair_hosts.contains(h.as_str())),
                UnitKind::Pair => !u.hosts.iter().any(|h| hosts.contains(h.as_str())),
            })
            .collect();
        out.sort_by(|x, y| y.z.abs().total_cmp(&x.z.abs()).then(x.kind.cmp(&y.kind)));
        out
    }

    /// Hosts (or, without hosts, ranks) whose noise changed by the spread factor, and the
    /// whole machine's per matrix: (what, matrix, ratio of B's noise to A's).
    pub fn spread_changes(&self) -> Vec<(String, String, f64)> {
        let f = self.options.spread_factor;
        let off = |r: f64| r.is_finite() && (r >= f || r <= 1.0 / f);
        let mut out: Vec<(String, String, f64)> = self
            .matrices
            .iter()
            .filter(|m| m.noise == (NoiseSource::Repeats, NoiseSource::Repeats))
            .filter(|m| self.judged(&m.name))
            .filter_map(|m| {
                let r = m.medians().2;
                off(r).then(|| ("all pairs".to_string(), m.name.clone(), r))
            })
            .collect();
        // Hosts when there are several (one host is the whole machine), else ranks.
        let hosts = self
            .units
            .iter()
            .filter(|u| u.kind == UnitKind::Host)
            .count();
        let kind = match hosts {
            0 => UnitKind::Rank,
            1 => return out,
            _ => UnitKind::Host,
        };
        out.extend(
            self.units
                .iter()
                .filter(|u| u.kind == kind && self.judged(&u.matrix) && off(u.spread_ratio))
                .map(|u| (u.name.clone(), u.matrix.clone(), u.spread_ratio)),
        );
        out
    }

    /// Whether a matrix's changes count towards the verdict.
    pub fn judged(&self, name: &str) -> bool {
        self.options.matrices.is_some() || JUDGED_KINDS.contains(&kind_of(name))
    }

    /// The levels that differ.
    pub fn level_changes(&self) -> Vec<&LevelChange> {
        self.levels
            .iter()
            .flatten()
            .filter(|l| l.changed())
            .collect()
    }

    /// The matrices in which the whole machine changed.
    pub fn machine_changes(&self) -> Vec<&MachineShift> {
        self.machine.iter().filter(|m| m.flagged).collect()
    }

    /// Whether anything changed beyond the noise: a unit, the whole machine or a level.
    pub fn changed(&self) -> bool {
        !self.changes().is_empty()
            || !self.machine_changes().is_empty()
            || !self.level_changes().is_empty()
    }

    /// The matrix a picture of the diff shows: the one of the worst change (local, else
    /// machine-wide), else t(m) at its smallest size, else the first compared.
    pub fn headline_matrix(&self) -> Option<&str> {
        if let Some(u) = self.changes().first() {
            return Some(&u.matrix);
        }
        if let Some(m) = self
            .machine_changes()
            .into_iter()
            .max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()))
        {
            return Some(&m.matrix);
        }
        self.matrices
            .iter()
            .find(|m| kind_of(&m.name) == "t")
            .or(self.matrices.first())
            .map(|m| m.name.as_str())
    }

    /// Every pair's z in one matrix, over run A's rows (NaN where a pair was not compared),
    /// with A's rank numbers as labels; `None` for a matrix not compared.
    pub fn z_matrix(&self, name: &str) -> Option<(ndarray::Array2<f64>, Vec<String>)> {
        let m = self.matrices.iter().find(|m| m.name == name)?;
        let n = self.rows_a.len();
        let mut z = ndarray::Array2::from_elem((n, n), f64::NAN);
        for p in &m.pairs {
            let (k, l) = p.rows;
            z[[k, l]] = p.z;
            z[[l, k]] = p.z;
        }
        for k in 0..n {
            z[[k, k]] = 0.0;
        }
        Some((z, self.rows_a.iter().map(|(r, _)| r.to_string()).collect()))
    }

    /// The median z of the pairs between each two hosts of run A in one matrix (inside each
    /// host on the diagonal; NaN where none was compared), with the host names as labels;
    /// `None` for a matrix not compared or a run that does not name every host.
    pub fn z_by_hosts(&self, name: &str) -> Option<(ndarray::Array2<f64>, Vec<String>)> {
        let m = self.matrices.iter().find(|m| m.name == name)?;
        let mut hosts: Vec<String> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        let mut host_of = Vec::with_capacity(self.rows_a.len());
        for (_, host) in &self.rows_a {
            let host = host.as_deref()?;
            let k = *at.entry(host).or_insert_with(|| {
                hosts.push(host.to_string());
                hosts.len() - 1
            });
            host_of.push(k);
        }
        // (pair of hosts, z) sorted by hosts, then each run's median.
        let mut keyed: Vec<(u64, f64)> = (m.pairs.iter())
            .filter(|p| !p.z.is_nan())
            .map(|p| {
                let (a, b) = (host_of[p.rows.0], host_of[p.rows.1]);
                (((a.min(b) as u64) << 32) | a.max(b) as u64, p.z)
            })
            .collect();
        keyed.sort_unstable_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
        let h = hosts.len();
        let mut z = ndarray::Array2::from_elem((h, h), f64::NAN);
        for run in keyed.chunk_by(|x, y| x.0 == y.0) {
            let (a, b) = ((run[0].0 >> 32) as usize, (run[0].0 & 0xffff_ffff) as usize);
            let mut values: Vec<f64> = run.iter().map(|x| x.1).collect();
            let mid = median(&mut values);
            z[[a, b]] = mid;
            z[[b, a]] = mid;
        }
        Some((z, hosts))
    }

    /// The headline matrix's name and its z picture: every pair's ([`RunDiff::z_matrix`],
    /// rows `rank`), or above [`DENSE_PICTURE_RANKS`] ranks each two hosts' median
    /// ([`RunDiff::z_by_hosts`], rows `host`); `None` when no matrix was compared.
    pub fn headline_z(&self) -> Option<ZPicture> {
        let name = self.headline_matrix()?;
        let by_hosts = (self.rows_a.len() > DENSE_PICTURE_RANKS)
            .then(|| self.z_by_hosts(name))
            .flatten();
        let (z, labels, rows) = match by_hosts {
            Some((z, labels)) => (z, labels, "host"),
            None => {
                let (z, labels) = self.z_matrix(name)?;
                (z, labels, "rank")
            }
        };
        Some(ZPicture {
            matrix: name.to_string(),
            z,
            labels,
            rows,
        })
    }

    /// The host of each row of run A, when run A names every host.
    pub fn hosts_a(&self) -> Option<Vec<String>> {
        self.rows_a.iter().map(|(_, h)| h.clone()).collect()
    }

    /// The name of row `k` of run A: `rank 5 (n0)`.
    pub fn row_name(&self, k: usize) -> String {
        match &self.rows_a[k] {
            (r, Some(h)) => format!("{r} ({h})"),
            (r, None) => r.to_string(),
        }
    }
}
