//! A distance matrix as a heat map: ranks in topology order when a topology is given, group
//! boundaries drawn at every level, values above a high quantile clipped so that a few slow
//! pairs do not wash out the scale (as the reference thesis does), and a colour bar in units.
//! A signed matrix (the z-scores of `diff`) is drawn on a diverging scale centred on 0.

use plotters::coord::Shift;
use plotters::element::BitMapElement;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use plotters::style::text_anchor::{HPos, VPos};

use lgate_matrix::DistanceMatrix;
use lgate_stats::quantile_nearest_rank as clip_value;
use lgate_topology::{Topology, TopologyNode};

use crate::figure::{anchored, nice_ticks, short, Figure, PlotError, FONT};

mod draw;

/// Side of the matrix square, pixels.
const SIDE: u32 = 760;
/// Left and top margins, pixels (the top one holds the title and two lines under it).
const LEFT: i32 = 70;
const TOP: i32 = 76;
/// The line under the title: its font size, and the lines it may take at most.
const NOTE_FONT: f64 = 15.0;
const NOTE_LINES: usize = 2;
/// The colour bar's left edge and width.
const BAR_X: i32 = LEFT + SIDE as i32 + 30;
const BAR_W: i32 = 22;
/// The colour of group boundaries.
pub const BOUNDARY: RGBColor = RGBColor(255, 255, 255);
/// Stroke widths and opacities of boundaries, coarsest level first: thick, thin, faint, so
/// that levels stay apart even when the finer lines are dense.
const STROKES: [(u32, f64); 3] = [(4, 1.0), (2, 1.0), (1, 0.5)];
/// A level whose groups would be drawn closer than this, in pixels on average, is left out
/// (its lines would fill the picture).
const DENSEST_BOUNDARIES: f64 = 4.0;
/// Group labels on the axes: at most this many, at least this many pixels apart.
const MOST_GROUP_LABELS: usize = 16;
const LABEL_GAP: i32 = 14;

/// A heat map of a distance matrix.
#[derive(Debug, Clone)]
pub struct Heatmap<'a> {
    values: &'a ndarray::Array2<f64>,
    labels: &'a [String],
    /// Signed values on a blue-white-red scale centred on 0, instead of viridis from the least.
    signed: bool,
    title: String,
    unit: String,
    order: Vec<usize>,
    /// Per level, coarsest first: the positions (in `order`) where a new group starts.
    boundaries: Vec<(String, Vec<usize>)>,
    clip_quantile: f64,
    note: Option<String>,
    /// What a row is: `rank`, or `host` for a host x host matrix.
    item: &'static str,
}

impl<'a> Heatmap<'a> {
    /// A heat map of `matrix` in rank order, with values in `unit`.
    pub fn new(matrix: &'a DistanceMatrix, title: &str, unit: &str) -> Self {
        Heatmap {
            values: matrix.values(),
            labels: matrix.labels(),
            signed: false,
            title: title.to_string(),
            unit: unit.to_string(),
            order: (0..matrix.len()).collect(),
            boundaries: Vec::new(),
            clip_quantile: 0.95,
            note: None,
            item: "rank",
        }
    }

    /// The same heat map with rows that are `item`s (`host`), not ranks.
    pub fn with_items(mut self, item: &'static str) -> Self {
        self.item = item;
        self
    }

    /// What a row is: `rank`, or `host`.
    pub fn items(&self) -> &'static str {
        self.item
    }

    /// Whether the diagonal holds values: a host's median inside it, not a rank's own 0.
    fn diagonal(&self) -> bool {
        self.item == "host"
    }

    /// A heat map of signed values (rows labelled by rank number), blue below 0 and red above,
    /// symmetric about 0 and clipped at a high quantile of |value|; NaN entries are grey.
    /// `values` must be square with one label per row.
    pub fn signed(
        values: &'a ndarray::Array2<f64>,
        labels: &'a [String],
        title: &str,
        unit: &str,
    ) -> Result<Self, PlotError> {
        let n = values.nrows();
        if values.ncols() != n || labels.len() != n {
            return Err(PlotError::Input(format!(
                "a {}x{} matrix with {} labels is not a square matrix of labelled rows",
                n,
                values.ncols(),
                labels.len()
            )));
        }
        Ok(Heatmap {
            values,
            labels,
            signed: true,
            title: title.to_string(),
            unit: unit.to_string(),
            order: (0..n).collect(),
            boundaries: Vec::new(),
            clip_quantile: 0.99,
            note: None,
            item: "rank",
        })
    }

    /// Whether a cell off the diagonal (or on it, for hosts) holds no value and is drawn grey.
    fn has_gaps(&self) -> bool {
        let m = self.values;
        m.indexed_iter()
            .any(|((i, j), v)| (i != j || self.diagonal()) && !v.is_finite())
    }

    fn len(&self) -> usize {
        self.values.nrows()
    }

    /// The colour of value `v` on the scale from `lo` to `hi`.
    fn colour(&self, v: f64, lo: f64, hi: f64) -> RGBColor {
        if !v.is_finite() {
            return RGBColor(200, 200, 200);
        }
        if !self.signed {
            return ViridisRGB::get_color_normalized(v, lo, hi);
        }
        // Blue (faster), near-white at 0, red (slower): ColorBrewer's RdBu ends.
        let t = (v / hi).clamp(-1.0, 1.0);
        let (end, white) = if t < 0.0 {
            ((33.0, 102.0, 172.0), (247.0, 247.0, 247.0))
        } else {
            ((178.0, 24.0, 43.0), (247.0, 247.0, 247.0))
        };
        let a = t.abs();
        let mix = |e: f64, w: f64| (w + (e - w) * a).round() as u8;
        RGBColor(
            mix(end.0, white.0),
            mix(end.1, white.1),
            mix(end.2, white.2),
        )
    }

    /// Adds a note to the line under the title (such as the share of pairs filled in).
    pub fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// Orders the ranks as the leaves of `topology` and draws its groups' boundaries. The
    /// topology's ranks are the matrix's labels (rank numbers) or, failing that, its rows.
    pub fn with_topology(mut self, topology: &Topology) -> Result<Self, PlotError> {
        let n = self.len();
        let row_of_rank: std::collections::HashMap<usize, usize> = self
            .labels
            .iter()
            .enumerate()
            .filter_map(|(row, l)| l.parse::<usize>().ok().map(|r| (r, row)))
            .collect();
        let row = |rank: usize| -> Option<usize> {
            if row_of_rank.len() == n {
                row_of_rank.get(&rank).copied()
            } else {
                (rank < n).then_some(rank)
            }
        };
        let mut leaves = Vec::new();
        collect_leaves(topology.tree(), &mut leaves);
        let mut order = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        for &rank in &leaves {
            let r = row(rank).ok_or_else(|| {
                PlotError::Input(format!(
                    "the topology has rank {rank}, which the matrix of {n} ranks lacks"
                ))
            })?;
            if !std::mem::replace(&mut seen[r], true) {
                order.push(r);
            }
        }
        // Ranks the topology leaves out come last, in rank order.
        order.extend((0..n).filter(|&r| !seen[r]));
        let mut position = vec![0; n];
        for (k, &r) in order.iter().enumerate() {
            position[r] = k;
        }
        let mut boundaries = Vec::new();
        for level in topology.levels() {
            let mut group_of_row = vec![usize::MAX; n];
            for (g, ranks) in level.groups.iter().enumerate() {
                for &rank in ranks {
                    if let Some(r) = row(rank) {
                        group_of_row[r] = g;
                    }
                }
            }
            let starts: Vec<usize> = (1..n)
                .filter(|&k| group_of_row[order[k]] != group_of_row[order[k - 1]])
                .collect();
            boundaries.push((level.name.clone(), starts));
        }
        self.order = order;
        self.boundaries = boundaries;
        Ok(self)
    }

    /// Clips values above this quantile of the off-diagonal entries (1 for none).
    pub fn with_clip_quantile(mut self, q: f64) -> Self {
        self.clip_quantile = q.clamp(0.5, 1.0);
        self
    }

    /// The colour scale's ends: the least off-diagonal value and the clipping quantile; for a
    /// signed map, minus and plus the clipping quantile of |value|.
    pub fn scale(&self) -> (f64, f64) {
        let n = self.len();
        let mut v: Vec<f64> = Vec::with_capacity(n * n.saturating_sub(1) / 2);
        let m = self.values;
        let first = usize::from(!self.diagonal());
        for i in 0..n {
            for j in i + first..n {
                let x = m[[i, j]];
                if x.is_finite() {
                    v.push(if self.signed { x.abs() } else { x });
                }
            }
        }
        if v.is_empty() {
            return if self.signed { (-1.0, 1.0) } else { (0.0, 1.0) };
        }
        if self.signed {
            let hi = clip_value(&mut v, self.clip_quantile).max(1e-12);
            return (-hi, hi);
        }
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = clip_value(&mut v, self.clip_quantile);
        if hi > lo {
            (lo, hi)
        } else {
            (lo, lo + 1.0)
        }
    }

    /// The group boundaries drawn, per level: positions in the drawn order.
    pub fn boundaries(&self) -> &[(String, Vec<usize>)] {
        &self.boundaries
    }

    /// The levels whose boundaries are drawn, coarsest first: those whose groups are at
    /// least [`DENSEST_BOUNDARIES`] pixels apart on average.
    fn drawn_levels(&self) -> Vec<(&str, &[usize])> {
        self.boundaries
            .iter()
            .filter(|(_, starts)| legible(starts))
            .map(|(name, starts)| (name.as_str(), starts.as_slice()))
            .collect()
    }

    /// The labels along each axis: (first position, position after the last, text). With a
    /// topology, the groups of its finest level that has at most [`MOST_GROUP_LABELS`]
    /// groups (or every k-th group of its coarsest), each named by its ranks when they are
    /// few to write, else by level and number; otherwise at most 16 evenly spaced ranks.
    fn axis_labels(&self) -> Vec<(usize, usize, String)> {
        let n = self.len();
        let labels = self.labels;
        let level = self
            .boundaries
            .iter()
            .rev()
            .find(|(_, starts)| starts.len() < MOST_GROUP_LABELS)
            .or(self.boundaries.first());
        let Some((name, starts)) = level else {
            let step = n.div_ceil(16).max(1);
            return (0..n)
                .step_by(step)
                .map(|k| (k, k + 1, labels[self.order[k]].clone()))
                .collect();
        };
        let edges: Vec<usize> = std::iter::once(0)
            .chain(starts.iter().copied())
            .chain(std::iter::once(n))
            .collect();
        // A coarsest level of many groups: every k-th of them.
        let step = edges
            .len()
            .saturating_sub(1)
            .div_ceil(MOST_GROUP_LABELS)
            .max(1);
        edges
            .windows(2)
            .enumerate()
            .step_by(step)
            .map(|(g, w)| {
                let ranks: Option<Vec<usize>> = self.order[w[0]..w[1]]
                    .iter()
                    .map(|&r| labels[r].parse().ok())
                    .collect();
                let text = ranks
                    .map(|r| lgate_topology::sorted_rank_list(&r))
                    .filter(|t| t.len() <= 9)
                    .unwrap_or_else(|| format!("{name} {g}"));
                (w[0], w[1], text)
            })
            .collect()
    }

    /// The title under the matrix: what orders the ranks and how each level's boundaries look.
    fn axis_title(&self, drawn: &[(&str, &[usize])]) -> String {
        if self.boundaries.is_empty() {
            return self.item.into();
        }
        let looks = ["thick", "thin", "faint"];
        let mut parts: Vec<String> = drawn
            .iter()
            .enumerate()
            .map(|(d, (name, _))| format!("{name} {}", looks[d.min(looks.len() - 1)]))
            .collect();
        let hidden: Vec<&str> = self
            .boundaries
            .iter()
            .filter(|(_, starts)| !legible(starts))
            .map(|(name, _)| name.as_str())
            .collect();
        if !hidden.is_empty() {
            parts.push(format!("{} too dense to draw", hidden.join(", ")));
        }
        format!("ranks in topology order; boundaries: {}", parts.join(", "))
    }

    /// The matrix as RGB pixels, `SIDE` square: each pixel the mean of the block of entries
    /// it covers.
    fn pixels(&self, lo: f64, hi: f64) -> Vec<u8> {
        let n = self.len();
        let side = SIDE as usize;
        let m = self.values;
        let span = |p: usize| {
            let a = p * n / side;
            let b = ((p + 1) * n / side).max(a + 1).min(n);
            a..b
        };
        let mut out = vec![0u8; side * side * 3];
        for y in 0..side {
            let rows = span(y);
            for x in 0..side {
                let cols = span(x);
                let mut sum = 0.0;
                let mut count = 0.0;
                for a in rows.clone() {
                    for b in cols.clone() {
                        let (i, j) = (self.order[a], self.order[b]);
                        if (i != j || self.diagonal()) && m[[i, j]].is_finite() {
                            let x = m[[i, j]];
                            sum += if self.signed {
                                x.clamp(lo, hi)
                            } else {
                                x.min(hi)
                            };
                            count += 1.0;
                        }
                    }
                }
                let c = if count > 0.0 {
                    self.colour(sum / count, lo, hi)
                } else {
                    RGBColor(235, 235, 235)
                };
                let k = (y * side + x) * 3;
                out[k..k + 3].copy_from_slice(&[c.0, c.1, c.2]);
            }
        }
        out
    }
}

/// The width in pixels of an axis label at 14 px (7 px a character, about a digit's).
fn label_width(text: &str) -> i32 {
    7 * text.chars().count() as i32
}

/// `labels` that fit the left margin: when the longest is wider than it, each without the
/// prefix all share (returned too), and any still too wide cut to its end after an ellipsis.
fn short_labels(
    labels: Vec<(usize, usize, String)>,
) -> (Vec<(usize, usize, String)>, Option<String>) {
    let room = LEFT - 6;
    if labels.iter().all(|(_, _, t)| label_width(t) <= room) {
        return (labels, None);
    }
    let mut prefix: &str = labels.first().map_or("", |(_, _, t)| t.as_str());
    for (_, _, t) in &labels {
        let common = prefix
            .char_indices()
            .zip(t.chars())
            .find(|((_, a), b)| a != b)
            .map_or(prefix.len().min(t.len()), |((i, _), _)| i);
        prefix = &prefix[..common];
    }
    // Never a whole label.
    if labels.iter().any(|(_, _, t)| t.len() == prefix.len()) {
        prefix = "";
    }
    let keep = (room / 7).max(2) as usize;
    let shown: Vec<(usize, usize, String)> = (labels.iter())
        .map(|(a, b, t)| {
            let rest = &t[prefix.len()..];
            let n = rest.chars().count();
            let text = if n > keep {
                let tail: String = rest.chars().skip(n - (keep - 1)).collect();
                format!("…{tail}")
            } else {
                rest.to_string()
            };
            (*a, *b, text)
        })
        .collect();
    ((shown), (!prefix.is_empty()).then(|| prefix.to_string()))
}

/// The heat map of a `diff`: each pair's z in run A's rank order (`labels`, rank numbers), red
/// where run B is slower; with `hosts` (one per row, rows being ranks 0, 1, ...), ordered
/// and bounded by host. `rows` names a row: `rank`, or `host` for each two hosts' median z.
pub fn diff_heatmap<'a>(
    z: &'a ndarray::Array2<f64>,
    labels: &'a [String],
    (hosts, rows): (Option<&[String]>, &'static str),
    title: &str,
    note: String,
) -> Result<Heatmap<'a>, PlotError> {
    let mut figure = Heatmap::signed(z, labels, title, "z")?.with_items(rows);
    let note = if figure.has_gaps() {
        format!("{note}; grey: pairs not measured in both runs")
    } else {
        note
    };
    figure = figure.with_note(Some(note));
    let hosts = hosts.filter(|_| rows == "rank");
    let in_rank_order = labels
        .iter()
        .enumerate()
        .all(|(k, l)| l.parse::<usize>().ok() == Some(k));
    if let (Some(hosts), true) = (hosts, in_rank_order) {
        let by_host =
            Topology::one_group_per_host(hosts).map_err(|e| PlotError::Input(e.to_string()))?;
        // One host has no level of hosts to draw (its one group is no level).
        if let Some(groups) = by_host.levels().first().map(|l| l.groups.clone()) {
            let topology = by_host
                .with_levels(vec![lgate_topology::Level::new("host", groups)])
                .map_err(|e| PlotError::Input(e.to_string()))?;
            figure = figure.with_topology(&topology)?;
        }
    }
    Ok(figure)
}

/// `text` in at most `lines` lines, words kept whole, each line `fits` where it can; the
/// last line takes what is left.
fn wrap(text: &str, lines: usize, fits: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let longer = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if line.is_empty() || fits(&longer) || out.len() + 1 == lines {
            line = longer;
        } else {
            out.push(std::mem::replace(&mut line, word.to_string()));
        }
    }
    out.push(line);
    out
}

/// Whether boundaries at `starts` are far enough apart to draw
/// ([`DENSEST_BOUNDARIES`]).
fn legible(starts: &[usize]) -> bool {
    SIDE as f64 / (starts.len() + 1) as f64 >= DENSEST_BOUNDARIES
}

fn collect_leaves(node: &TopologyNode, out: &mut Vec<usize>) {
    match node {
        TopologyNode::Group { ranks, .. } => out.extend(ranks.iter().copied()),
        TopologyNode::Cluster { children, .. } => {
            for c in children {
                collect_leaves(c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{diff_heatmap, wrap};

    #[test]
    fn a_diff_with_pairs_not_compared_says_what_its_grey_cells_are() {
        let labels: Vec<String> = (0..3).map(|k| k.to_string()).collect();
        let mut z = ndarray::Array2::zeros((3, 3));
        let figure = diff_heatmap(&z, &labels, (None, "rank"), "t", "no change".into()).unwrap();
        assert!(!figure.has_gaps());
        assert_eq!(figure.note.as_deref(), Some("no change"));
        z[[0, 2]] = f64::NAN;
        z[[2, 0]] = f64::NAN;
        let figure = diff_heatmap(&z, &labels, (None, "rank"), "t", "no change".into()).unwrap();
        assert!(figure.has_gaps());
        assert_eq!(
            figure.note.as_deref(),
            Some("no change; grey: pairs not measured in both runs")
        );
    }

    #[test]
    fn a_diff_of_ranks_on_one_host_or_two_draws() {
        // Real runs of one host (`report --since` of two 4-rank runs failed: no level of hosts).
        let labels: Vec<String> = (0..4).map(|k| k.to_string()).collect();
        let z = ndarray::Array2::zeros((4, 4));
        for hosts in [["a", "a", "a", "a"], ["a", "b", "a", "b"]] {
            let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
            let figure = diff_heatmap(&z, &labels, (Some(&hosts), "rank"), "t", "n".into());
            assert!(figure.is_ok(), "{hosts:?}");
        }
    }

    #[test]
    fn long_axis_labels_lose_their_shared_prefix() {
        use super::short_labels;
        let names = |v: &[&str]| -> Vec<(usize, usize, String)> {
            v.iter()
                .enumerate()
                .map(|(k, t)| (k, k + 1, t.to_string()))
                .collect()
        };
        let (short, prefix) = short_labels(names(&["betzy-n000", "betzy-n063", "betzy-n126"]));
        let texts: Vec<&str> = short.iter().map(|(_, _, t)| t.as_str()).collect();
        assert_eq!(texts, ["000", "063", "126"]);
        assert_eq!(prefix.as_deref(), Some("betzy-n"));
        // Short ones stay; no shared prefix: cut to their ends.
        assert_eq!(short_labels(names(&["n1", "n2"])).1, None);
        let (short, prefix) = short_labels(names(&["alpha-host-1", "omega-host-22"]));
        assert_eq!(prefix, None);
        assert!(
            short.iter().all(|(_, _, t)| t.chars().count() <= 9),
            "{short:?}"
        );
        assert_eq!(short[1].2, "…-host-22");
    }

    #[test]
    fn a_long_note_wraps_at_words_into_at_most_the_lines_given() {
        let fits = |t: &str| t.len() <= 12;
        assert_eq!(wrap("short", 2, fits), vec!["short"]);
        assert_eq!(
            wrap("one two three four five", 2, fits),
            vec!["one two", "three four five"]
        );
        assert_eq!(
            wrap("aaaaaaaaaaaaaaaaa b", 3, fits),
            vec!["aaaaaaaaaaaaaaaaa", "b"]
        );
    }
}
