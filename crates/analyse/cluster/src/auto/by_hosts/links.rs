//! The host x host links: the median of the pairs between two hosts, and a block's median.

use super::*;

/// The host x host summary of the values `per` pair of hosts (`x <= y`) and size (`s` sizes):
/// the pairs, median and quartiles of each.
pub(crate) fn links_of(
    per: std::collections::BTreeMap<(usize, usize), Vec<Vec<f64>>>,
    s: usize,
) -> HostLinks {
    let mut links = HostLinks {
        median_us: vec![Vec::new(); s],
        p25_us: vec![Vec::new(); s],
        p75_us: vec![Vec::new(); s],
        ..HostLinks::default()
    };
    for ((x, y), per_size) in per {
        links.host_i.push(x as u32);
        links.host_j.push(y as u32);
        links.pairs.push(per_size[0].len() as u32);
        for (k, mut v) in per_size.into_iter().enumerate() {
            v.sort_by(f64::total_cmp);
            let at = |q: f64| match v.is_empty() {
                true => f64::NAN,
                false => lgate_stats::quantile_of_sorted(&v, q),
            };
            links.median_us[k].push(at(0.5));
            links.p25_us[k].push(at(0.25));
            links.p75_us[k].push(at(0.75));
        }
    }
    links
}

/// A host's block with a pair not measured holding the median of those measured.
pub(crate) fn filled_block(b: &Array2<f64>) -> Array2<f64> {
    let fill = block_median(b).unwrap_or(0.0);
    b.mapv(|x| if x.is_finite() { x } else { fill })
}

/// The median of a host block's measured pairs (above its diagonal), if it has any.
pub(crate) fn block_median(b: &Array2<f64>) -> Option<f64> {
    let n = b.nrows();
    let mut measured: Vec<f64> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |c| (a, c)))
        .map(|(a, c)| b[[a, c]])
        .filter(|x| x.is_finite())
        .collect();
    (!measured.is_empty()).then(|| median(&mut measured))
}
