//! A Mann-Whitney test on repeated measurements of units (the tests of pairs), its z deflated
//! by the design effect of cluster sampling (Kish 1965): repeated tests of one pair count as
//! independent only as far as the pair's own persistent offset lets them.
//!
//! Two samples of units, each unit with one or more values. The test pools every value; the
//! intra-class correlation (ICC) of the values within their units is estimated on their ranks
//! (a one-way random-effects ANOVA inside each sample, so a difference between the samples is
//! not taken for one between units), raised by 2.5 standard errors (Fisher's large-sample
//! variance of the ICC), and the pooled z divided by the square root of the design effect
//! `1 + (m - 1) ICC`, `m` the mean values a unit. When the units' values agree no better
//! than values of different units (ICC 0), each value counts; when each unit's values are
//! alike (ICC 1), the z is that of one value a unit.

/// A clustered Mann-Whitney test's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusteredZ {
    /// The z that the second sample's values are larger, deflated by the design effect.
    pub z: f64,
    /// The most z these values could give (every value of the first sample below every value
    /// of the second), deflated the same.
    pub z_most: f64,
    /// The design effect the z was divided by (its square root).
    pub design_effect: f64,
    /// The mean values a unit.
    pub per_unit: f64,
}

/// The one-sided Mann-Whitney z that the values of the units `y` are larger than those of `x`,
/// every value counted and the z deflated by the design effect of the units' values' intra-class
/// correlation (see the module). `None` with fewer than 1.5 values a unit on average, or fewer
/// than two units on a side: the units' own test ([`crate::mann_whitney_z`] on one value each)
/// is the test there.
pub fn mann_whitney_z_clustered(x: &[Vec<f64>], y: &[Vec<f64>]) -> Option<ClusteredZ> {
    let units = |s: &[Vec<f64>]| s.iter().filter(|u| !u.is_empty()).count();
    let (kx, ky) = (units(x), units(y));
    let (n1, n2) = (
        x.iter().map(Vec::len).sum::<usize>(),
        y.iter().map(Vec::len).sum::<usize>(),
    );
    let (k, n) = (kx + ky, n1 + n2);
    if kx < 2 || ky < 2 || (n as f64) < 1.5 * k as f64 {
        return None;
    }
    let flat = |s: &[Vec<f64>]| s.iter().flatten().copied().collect::<Vec<f64>>();
    let z_values = crate::mann_whitney_z(&flat(x), &flat(y));
    // Every value's rank among all (ties their mean rank), in the order x's units then y's.
    let mut order: Vec<(f64, usize)> = (x.iter().chain(y).flatten().copied())
        .enumerate()
        .map(|(e, v)| (v, e))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && order[j + 1].0 == order[i].0 {
            j += 1;
        }
        for o in &order[i..=j] {
            rank[o.1] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    // One-way ANOVA on the ranks inside each sample, pooled.
    let (mut ssb, mut ssw, mut df_b, mut df_w) = (0.0, 0.0, 0usize, 0usize);
    let mut at = 0;
    for sample in [x, y] {
        let size: usize = sample.iter().map(Vec::len).sum();
        let ranks = &rank[at..at + size];
        at += size;
        let mean = ranks.iter().sum::<f64>() / size as f64;
        let mut from = 0;
        for unit in sample.iter().filter(|u| !u.is_empty()) {
            let r = &ranks[from..from + unit.len()];
            from += unit.len();
            let m = r.iter().sum::<f64>() / r.len() as f64;
            ssb += r.len() as f64 * (m - mean).powi(2);
            ssw += r.iter().map(|v| (v - m).powi(2)).sum::<f64>();
            df_w += r.len() - 1;
        }
        df_b += units(sample) - 1;
    }
    let m = n as f64 / k as f64;
    let (msb, msw) = (ssb / df_b as f64, ssw / df_w.max(1) as f64);
    let icc = if msb + (m - 1.0) * msw > 0.0 {
        ((msb - msw) / (msb + (m - 1.0) * msw)).clamp(0.0, 1.0)
    } else {
        1.0
    };
    let se = (2.0 * (1.0 - icc).powi(2) * (1.0 + (m - 1.0) * icc).powi(2)
        / (m * (m - 1.0) * (k as f64 - 1.0)))
        .sqrt();
    let design_effect = 1.0 + (m - 1.0) * (icc + 2.5 * se).min(1.0);
    let (a, b) = (n1 as f64, n2 as f64);
    let most = (a * b / 2.0) / (a * b * (a + b + 1.0) / 12.0).sqrt();
    let deflate = design_effect.sqrt();
    Some(ClusteredZ {
        z: z_values / deflate,
        z_most: most / deflate,
        design_effect,
        per_unit: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of standard normal draws (SplitMix64, Box-Muller).
    struct Normal(u64);

    impl Normal {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn draw(&mut self) -> f64 {
            let (u1, u2) = (self.uniform().max(1e-12), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }
    }

    /// `units` units of `per` values each: a unit offset (sd `unit_sd`) plus value noise (sd 1),
    /// shifted by `shift`.
    fn sample(
        rng: &mut Normal,
        units: usize,
        per: usize,
        unit_sd: f64,
        shift: f64,
    ) -> Vec<Vec<f64>> {
        (0..units)
            .map(|_| {
                let offset = unit_sd * rng.draw() + shift;
                (0..per).map(|_| offset + rng.draw()).collect()
            })
            .collect()
    }

    #[test]
    fn independent_values_count_each_and_units_alike_count_once() {
        let mut rng = Normal(1);
        let x = sample(&mut rng, 10, 4, 0.0, 0.0);
        let y = sample(&mut rng, 40, 4, 0.0, 2.0);
        let c = mann_whitney_z_clustered(&x, &y).expect("enough units");
        let flat = |s: &[Vec<f64>]| s.iter().flatten().copied().collect::<Vec<f64>>();
        let pooled = crate::mann_whitney_z(&flat(&x), &flat(&y));
        // ICC near 0: the design effect is the upper bound's alone, well under 2.
        assert!(c.design_effect < 2.0 && c.z > pooled / 2f64.sqrt(), "{c:?}");
        // Units whose values are one value repeated: their z is at most one value a unit's.
        let same: Vec<Vec<f64>> = x.iter().map(|u| vec![u[0]; 4]).collect();
        let same_y: Vec<Vec<f64>> = y.iter().map(|u| vec![u[0]; 4]).collect();
        let c = mann_whitney_z_clustered(&same, &same_y).expect("enough units");
        let once = crate::mann_whitney_z(
            &same.iter().map(|u| u[0]).collect::<Vec<_>>(),
            &same_y.iter().map(|u| u[0]).collect::<Vec<_>>(),
        );
        assert!((c.design_effect - 4.0).abs() < 1e-9, "{c:?}");
        assert!(
            (c.z - once).abs() < 0.1 * once.abs().max(1.0),
            "{c:?} vs {once}"
        );
    }

    #[test]
    fn unit_offsets_do_not_make_a_difference_of_noise() {
        // No difference between the samples, units with persistent offsets as large as the
        // value noise, 2-4 values a unit: the deflated z passes 3 in at most 1 of 500 draws
        // (a normal z does so with probability 0.0013).
        for per in [2, 3, 4] {
            let mut rng = Normal(100 + per as u64);
            let mut above = 0;
            for _ in 0..500 {
                let x = sample(&mut rng, 6, per, 1.0, 0.0);
                let y = sample(&mut rng, 24, per, 1.0, 0.0);
                let c = mann_whitney_z_clustered(&x, &y).expect("enough units");
                above += usize::from(c.z >= 3.0);
            }
            assert!(above <= 1, "{per} values a unit: z >= 3 in {above} of 500");
        }
    }

    #[test]
    fn too_few_values_a_unit_leave_it_to_the_units_test() {
        let x = vec![vec![1.0], vec![2.0]];
        let y = vec![vec![3.0], vec![4.0, 5.0]];
        assert!(mann_whitney_z_clustered(&x, &y).is_none());
    }
}
