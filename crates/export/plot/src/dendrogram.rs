//! A topology as a dendrogram: the root at the top, one row per level, groups at the bottom
//! as wide as their rank count, each split labelled with its separation when known.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use lgate_topology::{Topology, TopologyNode};

use crate::figure::{anchored, short, Figure, PlotError, FONT};

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 700;
const LEFT: i32 = 40;
/// Room on the right for the levels' names.
const RIGHT: i32 = 110;
/// The narrowest group that gets a label of its own, pixels (a line of text rotated).
const LABEL_ROOM: f64 = 18.0;
const TOP: i32 = 70;
const BOTTOM: i32 = 180;

/// A dendrogram of a topology.
#[derive(Debug, Clone)]
pub struct Dendrogram<'a> {
    topology: &'a Topology,
    title: String,
}

impl<'a> Dendrogram<'a> {
    /// The dendrogram of `topology` under `title`.
    pub fn new(topology: &'a Topology, title: &str) -> Self {
        Dendrogram {
            topology,
            title: title.to_string(),
        }
    }
}

/// Where a node is drawn: its x (pixels) and depth.
struct Placed {
    x: f64,
    depth: usize,
}

/// Ranks as ranges: `0-7,16-23`.
pub fn rank_ranges(ranks: &[usize]) -> String {
    let mut r = ranks.to_vec();
    r.sort_unstable();
    let mut parts = Vec::new();
    let mut k = 0;
    while k < r.len() {
        let start = r[k];
        while k + 1 < r.len() && r[k + 1] == r[k] + 1 {
            k += 1;
        }
        parts.push(if r[k] == start {
            start.to_string()
        } else {
            format!("{start}-{}", r[k])
        });
        k += 1;
    }
    parts.join(",")
}

/// Children of one node closer than this many pixels apart are drawn as one band.
const DENSE_STEMS: f64 = 4.0;

impl Figure for Dendrogram<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let e = PlotError::draw;
        root.fill(&WHITE).map_err(e)?;
        let tree = self.topology.tree();
        let total = tree.rank_count().max(1) as f64;
        let depth = tree.depth().max(1);
        let span = (WIDTH as i32 - LEFT - RIGHT) as f64;
        let row = (HEIGHT as i32 - TOP - BOTTOM) as f64 / depth as f64;
        let y_of = |d: usize| TOP + (d as f64 * row).round() as i32;
        root.draw(&Text::new(
            self.title.clone(),
            (LEFT, 16),
            (FONT, 20.0).into_font(),
        ))
        .map_err(e)?;
        let levels: Vec<String> = self
            .topology
            .levels()
            .iter()
            .map(|l| format!("{} ({} groups)", l.name, l.groups.len()))
            .collect();
        root.draw(&Text::new(
            format!(
                "{} ranks; levels, top down: {}",
                tree.rank_count(),
                if levels.is_empty() {
                    "none (one group)".to_string()
                } else {
                    levels.join(", ")
                }
            ),
            (LEFT, 42),
            (FONT, 15.0).into_font(),
        ))
        .map_err(e)?;

        // The levels' names at their rows: row d holds the groups of level d - 1.
        for (d, level) in self.topology.levels().iter().enumerate() {
            root.draw(&Text::new(
                level.name.clone(),
                (WIDTH as i32 - RIGHT + 12, y_of(d + 1) + 7),
                anchored(15.0, HPos::Left, VPos::Center),
            ))
            .map_err(e)?;
        }

        // Groups narrower than a label: label every k-th of them.
        let narrowest = tree
            .groups()
            .iter()
            .map(|g| g.len() as f64 * span / total)
            .fold(f64::INFINITY, f64::min);
        let label_every = (LABEL_ROOM / narrowest.max(1e-9)).ceil().max(1.0) as usize;
        let hosts = self.topology.labels();
        let mut walk = Walk {
            depth,
            offset: 0.0,
            scale: span / total,
            y_of: &y_of,
            root,
            leaves: 0,
            label_every,
            hosts,
        };
        walk.node(tree, 0)?;
        root.draw(&Text::new(
            "numbers at splits: separation (between-group over within-group spread); under groups: their host and ranks",
            (LEFT, HEIGHT as i32 - 24),
            (FONT, 14.0).into_font(),
        ))
        .map_err(e)?;
        Ok(())
    }
}

/// The tree drawn from the top down, groups left to right: what every node's drawing shares.
struct Walk<'a, DB: DrawingBackend> {
    /// The tree's depth: the row of the groups.
    depth: usize,
    /// How far right the groups drawn so far reach, pixels from the left margin.
    offset: f64,
    /// Pixels a rank.
    scale: f64,
    /// The height in pixels of each row.
    y_of: &'a dyn Fn(usize) -> i32,
    root: &'a DrawingArea<DB, Shift>,
    /// Groups drawn so far.
    leaves: usize,
    /// Every how many groups one is labelled.
    label_every: usize,
    hosts: Option<&'a [String]>,
}

impl<DB: DrawingBackend> Walk<'_, DB> {
    /// Draws `node` at row `d` and everything under it; returns where its stem starts.
    fn node(&mut self, node: &TopologyNode, d: usize) -> Result<Placed, PlotError> {
        match node {
            TopologyNode::Group { ranks, .. } => self.group(ranks, d),
            TopologyNode::Cluster { children, height } => self.cluster(children, *height, d),
        }
    }

    /// A group of ranks in the bottom row, its label, and a stem up to row `d`.
    fn group(&mut self, ranks: &[usize], d: usize) -> Result<Placed, PlotError> {
        let e = PlotError::draw;
        let w = ranks.len() as f64 * self.scale;
        let x0 = LEFT as f64 + self.offset;
        self.offset += w;
        let y = (self.y_of)(self.depth);
        self.root
            .draw(&Rectangle::new(
                [
                    (x0.round() as i32, y),
                    ((x0 + w).round() as i32 - 1, y + 14),
                ],
                RGBColor(68, 1, 84).mix(0.75).filled(),
            ))
            .map_err(e)?;
        // Its host when its ranks share one, and its ranks; across the group when
        // that fits, else down from it.
        if self.leaves.is_multiple_of(self.label_every) {
            let label = leaf_label(ranks, self.hosts);
            let centre = (x0 + w / 2.0).round() as i32;
            let style = if label.chars().count() as f64 * 9.0 <= w {
                anchored(15.0, HPos::Center, VPos::Top)
            } else {
                TextStyle::from((FONT, 15.0).into_font().transform(FontTransform::Rotate90)).pos(
                    plotters::style::text_anchor::Pos::new(HPos::Left, VPos::Center),
                )
            };
            self.root
                .draw(&Text::new(label, (centre, y + 19), style))
                .map_err(e)?;
        }
        self.leaves += 1;
        let x = x0 + w / 2.0;
        if d < self.depth {
            // A group above the bottom row: a stem down to it.
            self.root
                .draw(&PathElement::new(
                    vec![(x.round() as i32, (self.y_of)(d)), (x.round() as i32, y)],
                    BLACK.stroke_width(1),
                ))
                .map_err(e)?;
        }
        Ok(Placed { x, depth: d })
    }

    /// A split at row `d`: its children, the bar or band joining them, and its separation.
    fn cluster(
        &mut self,
        children: &[TopologyNode],
        height: Option<f64>,
        d: usize,
    ) -> Result<Placed, PlotError> {
        let e = PlotError::draw;
        let mut kids = Vec::new();
        for c in children {
            kids.push(self.node(c, d + 1)?);
        }
        let y = (self.y_of)(d);
        let (first, last) = (
            kids.first().map_or(0.0, |k| k.x),
            kids.last().map_or(0.0, |k| k.x),
        );
        // Children closer than a stem's room (a thousand hosts under one switch):
        // one grey band for them all, their number in it, not a black block of
        // stems.
        let dense = kids.len() > 1 && (last - first) / ((kids.len() - 1) as f64) < DENSE_STEMS;
        if dense {
            let bottom = kids.iter().map(|k| (self.y_of)(k.depth)).min().unwrap_or(y);
            self.root
                .draw(&Rectangle::new(
                    [(first.round() as i32, y), (last.round() as i32, bottom)],
                    RGBColor(150, 150, 150).mix(0.6).filled(),
                ))
                .map_err(e)?;
            if last - first > 120.0 {
                self.root
                    .draw(&Text::new(
                        format!("{} groups", kids.len()),
                        (((first + last) / 2.0).round() as i32, (y + bottom) / 2),
                        anchored(15.0, HPos::Center, VPos::Center),
                    ))
                    .map_err(e)?;
            }
        } else {
            self.root
                .draw(&PathElement::new(
                    vec![(first.round() as i32, y), (last.round() as i32, y)],
                    BLACK.stroke_width(2),
                ))
                .map_err(e)?;
            for k in &kids {
                let top = if k.depth == d + 1 {
                    (self.y_of)(d + 1)
                } else {
                    y
                };
                self.root
                    .draw(&PathElement::new(
                        vec![(k.x.round() as i32, y), (k.x.round() as i32, top)],
                        BLACK.stroke_width(2),
                    ))
                    .map_err(e)?;
            }
        }
        let x = (first + last) / 2.0;
        // Beside the stem from above, not on it; not where the node is narrower
        // than its number (a thousand of them would smear into a line).
        if let Some(h) = height
            .as_ref()
            .filter(|_| kids.len() < 2 || last - first >= 24.0)
        {
            self.root
                .draw(&Text::new(
                    short(*h),
                    (x.round() as i32 + 5, y - 3),
                    anchored(15.0, HPos::Left, VPos::Bottom),
                ))
                .map_err(e)?;
        }
        Ok(Placed { x, depth: d })
    }
}

/// A group's label: its host when all its ranks have the same one, and its ranks, at most
/// 18 characters.
fn leaf_label(ranks: &[usize], hosts: Option<&[String]>) -> String {
    let ranges = rank_ranges(ranks);
    let host = hosts.and_then(|h| {
        let first = h.get(*ranks.first()?)?;
        ranks
            .iter()
            .all(|&r| h.get(r) == Some(first))
            .then_some(first.as_str())
    });
    let text = match host {
        Some(host) => format!("{host}: {ranges}"),
        None => ranges,
    };
    if text.chars().count() > 18 {
        let cut: String = text.chars().take(17).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_groups_under_one_node_are_a_band_not_a_block_of_stems() {
        let groups: Vec<TopologyNode> = (0..1000)
            .map(|g| TopologyNode::group(vec![2 * g, 2 * g + 1]))
            .collect();
        let topology = Topology::from_tree(TopologyNode::cluster(groups), None).unwrap();
        let svg = crate::to_svg(&Dendrogram::new(&topology, "t")).unwrap();
        assert!(svg.contains("1000 groups"), "the band says how many");
        let lines = svg.matches("<polyline").count();
        assert!(lines < 50, "{lines} stems and lines drawn");
        // A small tree keeps its stems.
        let small = Topology::from_tree(
            TopologyNode::cluster(vec![
                TopologyNode::group(vec![0, 1]),
                TopologyNode::group(vec![2, 3]),
            ]),
            None,
        )
        .unwrap();
        let svg = crate::to_svg(&Dendrogram::new(&small, "t")).unwrap();
        assert!(svg.matches("<polyline").count() >= 3, "{svg}");
    }

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(rank_ranges(&[3, 0, 1, 2, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(rank_ranges(&[5]), "5");
    }

    #[test]
    fn leaves_are_named_by_host_and_ranks() {
        let hosts: Vec<String> = ["n1", "n1", "n2", "n2"].map(String::from).to_vec();
        assert_eq!(leaf_label(&[0, 1], Some(&hosts)), "n1: 0-1");
        assert_eq!(
            leaf_label(&[1, 2], Some(&hosts)),
            "1-2",
            "two hosts: ranks alone"
        );
        assert_eq!(leaf_label(&[0, 1], None), "0-1");
        let many: Vec<usize> = (0..40).step_by(2).collect();
        let label = leaf_label(&many, None);
        assert_eq!(label.chars().count(), 18);
        assert!(label.ends_with('…'));
    }
}
