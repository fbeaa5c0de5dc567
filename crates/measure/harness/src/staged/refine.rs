//! Stage 3's first budget: more pairs for the pairs of groups whose samples disagree.

use super::*;

/// A pair of groups' samples disagree when the slowest is this much above the fastest, and
/// more than twice as far above it as is usual for the job's pairs of groups.
const DISAGREE: f64 = 1.25;

/// More pairs for the pairs of groups whose K samples disagree (the slowest over the fastest
/// above 1.25, and more than twice the usual excess), the most disagreeing first, each given
/// as many new pairs as it had samples, within `options.refine` tests.
pub fn refinement(screened: &ScreenedValues, plan: &StagedPlan) -> Vec<Pair> {
    let budget = plan.options().refine;
    // A sweep screened every pair between groups: there is none to add.
    if budget == 0 || plan.options().sweep {
        return Vec::new();
    }
    let group_of = plan.group_of();
    // Per pair of groups (a < b, flat in (a, b) order): the least and largest sample and how
    // many; 20 bytes a pair of groups, which stage 2 gives K samples each.
    let g = plan.groups().len();
    let at = |a: usize, b: usize| a * g - a * (a + 1) / 2 + (b - a - 1);
    let slots = g * g.saturating_sub(1) / 2;
    let mut lo = vec![f64::INFINITY; slots];
    let mut hi = vec![0.0f64; slots];
    let mut count = vec![0u32; slots];
    for s in &screened.between {
        let (a, b) = (group_of[s.i as usize], group_of[s.j as usize]);
        if a == b || a >= g || b >= g {
            continue;
        }
        let e = at(a.min(b), a.max(b));
        lo[e] = lo[e].min(f64::from(s.value));
        hi[e] = hi[e].max(f64::from(s.value));
        count[e] += 1;
    }
    let spreads: Vec<((usize, usize), f64, usize)> = (0..g)
        .flat_map(|a| (a + 1..g).map(move |b| (a, b)))
        .filter(|&(a, b)| count[at(a, b)] >= 2)
        .map(|(a, b)| {
            let e = at(a, b);
            let ratio = if lo[e] > 0.0 { hi[e] / lo[e] } else { 1.0 };
            ((a, b), ratio, count[e] as usize)
        })
        .collect();
    drop((lo, hi, count));
    if spreads.is_empty() {
        return Vec::new();
    }
    let mut usual: Vec<f64> = spreads.iter().map(|s| s.1).collect();
    usual.sort_by(f64::total_cmp);
    let usual = usual[usual.len() / 2];
    let mut flagged: Vec<&((usize, usize), f64, usize)> = spreads
        .iter()
        .filter(|s| s.1 > DISAGREE && s.1 - 1.0 > 2.0 * (usual - 1.0))
        .collect();
    flagged.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let mut out = Vec::new();
    for &&((a, b), _, count) in &flagged {
        let measured = plan.meeting_pairs(a, b);
        let (ga, gb) = (&plan.groups()[a], &plan.groups()[b]);
        let more = diagonal_pairs(ga, gb).filter(|p| !measured.contains(p));
        let mut added = 0;
        for p in more {
            if out.len() == budget || added == count {
                break;
            }
            if !out.contains(&p) {
                out.push(p);
                added += 1;
            }
        }
        if out.len() == budget {
            break;
        }
    }
    out
}
