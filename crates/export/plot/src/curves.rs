//! PLogP parameters against message size: RTT, o_s, o_r and g on log axes, and L, one line per
//! placement class of pairs (the median over its pairs, with the p10-p90 band) or per chosen
//! pair (its median, with the p10-p90 band of its repetitions); the library's eager limits
//! from meta.json marked.

use lgate_knobs::Knob;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use lgate_tables::table_layout as col;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::figure::{anchored, Figure, PlotError, FONT};
use lgate_stats::p10_median_p90 as median_band;

/// The parameters drawn against size, in panel order.
const PARAMETERS: [(&str, &str); 4] = [
    ("rtt", "RTT(m)"),
    ("os", "o_s(m)"),
    ("or", "o_r(m)"),
    ("g", "g(m)"),
];
/// Pairs per class at most (chosen evenly); enough for stable quantiles.
const PAIRS_PER_CLASS: usize = 4000;
/// Line colours, in class order.
pub(crate) const COLOURS: [RGBColor; 8] = [
    RGBColor(68, 1, 84),
    RGBColor(33, 145, 140),
    RGBColor(230, 97, 1),
    RGBColor(59, 82, 139),
    RGBColor(94, 201, 98),
    RGBColor(200, 30, 80),
    RGBColor(150, 110, 20),
    RGBColor(120, 120, 120),
];

/// A curve: per size, (p10, median, p90) in microseconds.
pub type Curve = Vec<(usize, f64, f64, f64)>;

/// The lines of one class or pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// `same socket`, `different node`, `pair 0-5`, ...
    pub name: String,
    /// Pairs behind it.
    pub pairs: usize,
    /// Pairs of its class in the run's ranks, drawn or not (1 for a chosen pair).
    pub class_pairs: usize,
    /// Per parameter name (`rtt`, `os`, `or`, `g`): the curve.
    pub curves: BTreeMap<String, Curve>,
    /// L: (p10, median, p90).
    pub latency: (f64, f64, f64),
}

/// What the curves figure shows.
#[derive(Debug, Clone)]
pub struct Curves {
    title: String,
    lines: Vec<Line>,
    /// Protocol thresholds from meta.json: (name, bytes).
    eager: Vec<(String, usize)>,
}

fn io(path: &Path) -> impl Fn(String) -> PlotError + '_ {
    move |message| PlotError::Io {
        path: path.display().to_string(),
        message,
    }
}

impl Curves {
    /// Reads a run's measurements.parquet and meta.json: one line per placement class, or
    /// per pair of `pairs` when given.
    pub fn of_run(run: &Path, pairs: Option<&[(usize, usize)]>) -> Result<Curves, PlotError> {
        let table = run.join(col::MEASUREMENTS_FILE);
        let err = io(&table);
        let meta = lgate_rundir::RunMeta::read(&run.join(lgate_rundir::META_FILE));
        if !table.is_file() {
            return Err(err(match &meta {
                Ok(m) if m.test.name() != "plogp" => format!(
                    "no such file: the curves are PLogP's parameters per message size, and this \
                     run's pair test is {} (only a PLogP run writes them)",
                    m.test.name()
                ),
                _ => format!(
                    "no such file (a run written with {} has no curves to draw)",
                    Knob::NoTable
                ),
            }));
        }
        let meta = meta.map_err(|e| PlotError::Input(e.to_string()))?;
        let classes = PairClasses::of_run(run, meta.ranks.len())?;
        // (line, parameter, size) -> values; for single pairs, (p10, median, p90) directly.
        let mut values: HashMap<(usize, String, usize), Vec<f64>> = HashMap::new();
        let mut bands: HashMap<(usize, String, usize), (f64, f64, f64)> = HashMap::new();
        let mut line_names: Vec<String> = Vec::new();
        let mut line_pairs: Vec<std::collections::HashSet<(usize, usize)>> = Vec::new();
        let chosen: Option<HashMap<(usize, usize), usize>> = pairs.map(|p| {
            p.iter()
                .enumerate()
                .map(|(k, &(i, j))| ((i.min(j), i.max(j)), k))
                .collect()
        });
        if let Some(p) = pairs {
            for &(i, j) in p {
                line_names.push(format!("pair {}-{}", i.min(j), i.max(j)));
                line_pairs.push(Default::default());
            }
        } else {
            line_names = classes.names.clone();
            line_pairs = vec![Default::default(); line_names.len()];
        }
        lgate_tables::for_each_measurement(&table, |row| {
            let (a, b) = (row.i, row.j);
            let line = match &chosen {
                Some(c) => match c.get(&(a.min(b), a.max(b))) {
                    Some(&k) => k,
                    None => return,
                },
                None => match classes.sampled(a, b) {
                    Some(k) => k,
                    None => return,
                },
            };
            line_pairs[line].insert((a, b));
            let key = (line, row.parameter.to_string(), row.size_bytes);
            if chosen.is_some() {
                bands.insert(key, (row.p10_us, row.median_us, row.p90_us));
            } else {
                values.entry(key).or_default().push(row.median_us);
            }
        })
        .map_err(|e| PlotError::Input(e.to_string()))?;
        for (k, (&(i, j), _)) in chosen.iter().flatten().enumerate() {
            if line_pairs.get(k).is_some_and(|p| p.is_empty()) {
                return Err(PlotError::Input(format!(
                    "pair {i}-{j} is not in {}",
                    table.display()
                )));
            }
        }
        for (key, mut v) in values {
            bands.insert(key, median_band(&mut v));
        }
        let mut lines: Vec<Line> = line_names
            .into_iter()
            .enumerate()
            .map(|(k, name)| Line {
                name,
                pairs: line_pairs[k].len(),
                class_pairs: match chosen {
                    Some(_) => 1,
                    None => classes.counts.get(k).map_or(0, |&c| c as usize),
                },
                curves: BTreeMap::new(),
                latency: (0.0, 0.0, 0.0),
            })
            .collect();
        for ((line, param, size), band) in bands {
            if param == "L" {
                lines[line].latency = band;
            } else {
                lines[line]
                    .curves
                    .entry(param)
                    .or_default()
                    .push((size, band.0, band.1, band.2));
            }
        }
        for l in &mut lines {
            for c in l.curves.values_mut() {
                c.sort_by_key(|p| p.0);
            }
        }
        lines.retain(|l| l.pairs > 0);
        let eager = eager_limits(&meta.mpi);
        Ok(Curves {
            title: format!("{}: PLogP parameters against message size", run.display()),
            lines,
            eager,
        })
    }

    /// The lines drawn.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// The protocol thresholds marked.
    pub fn eager_limits(&self) -> &[(String, usize)] {
        &self.eager
    }
}

/// Protocol thresholds in meta.json's MPI settings: names with `eager` and a positive size.
fn eager_limits(mpi: &lgate_rundir::MpiInfo) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = mpi
        .protocol()
        .iter()
        .filter(|(k, _)| k.contains("eager"))
        .filter_map(|(k, v)| Some((k.clone(), usize::try_from(v.positive()?).ok()?)))
        .collect();
    out.sort_by_key(|e| e.1);
    out.dedup_by_key(|e| e.1);
    out.truncate(3);
    out
}

/// The placement class of every pair: the finest level of the run's placement the two ranks
/// share (`same socket`), or `different <top level>`.
struct PairClasses {
    names: Vec<String>,
    /// Per level, finest first: a label per rank.
    levels: Vec<Vec<usize>>,
    /// Per class, keep one pair in this many.
    stride: Vec<u64>,
    /// Per class, its pairs among the run's ranks.
    counts: Vec<u64>,
}

impl PairClasses {
    fn of_run(run: &Path, ranks: usize) -> Result<PairClasses, PlotError> {
        let truth =
            lgate_rundir::KnownPlacement::read(run).map_err(|e| PlotError::Input(e.to_string()))?;
        // Levels that group something, finest (most groups) first.
        let mut levels: Vec<(String, Vec<usize>, usize)> = truth
            .levels
            .into_iter()
            .filter(|(_, l)| l.len() == ranks)
            .map(|(n, l)| {
                let groups = l.iter().max().map_or(0, |&m| m + 1);
                (n, l, groups)
            })
            .filter(|(_, _, g)| *g < ranks)
            .collect();
        levels.sort_by_key(|l| std::cmp::Reverse(l.2));
        let mut names: Vec<String> = levels.iter().map(|l| format!("same {}", l.0)).collect();
        let top = levels
            .iter()
            .rfind(|l| l.2 > 1)
            .map_or("host".to_string(), |l| l.0.clone());
        names.push(format!("different {top}"));
        let mut classes = PairClasses {
            names,
            levels: levels.into_iter().map(|l| l.1).collect(),
            stride: Vec::new(),
            counts: Vec::new(),
        };
        // Pairs per class, counted by the ranks' labels at every level together: ranks with
        // the same labels everywhere are alike (a few thousand kinds at 128 000 ranks, where
        // the pairs are 8 billion).
        let mut kinds: HashMap<Vec<usize>, u64> = HashMap::new();
        for r in 0..ranks {
            let key: Vec<usize> = classes.levels.iter().map(|l| l[r]).collect();
            *kinds.entry(key).or_default() += 1;
        }
        let kinds: Vec<(Vec<usize>, u64)> = kinds.into_iter().collect();
        let class_of =
            |a: &[usize], b: &[usize]| a.iter().zip(b).position(|(x, y)| x == y).unwrap_or(a.len());
        let mut counts = vec![0u64; classes.names.len()];
        for (x, (a, na)) in kinds.iter().enumerate() {
            counts[class_of(a, a)] += na * na.saturating_sub(1) / 2;
            for (b, nb) in &kinds[x + 1..] {
                counts[class_of(a, b)] += na * nb;
            }
        }
        classes.stride = counts
            .iter()
            .map(|&c| c.div_ceil(PAIRS_PER_CLASS as u64).max(1))
            .collect();
        classes.counts = counts;
        // Drop classes no pair is in.
        Ok(classes)
    }

    fn class(&self, a: usize, b: usize) -> usize {
        self.levels
            .iter()
            .position(|l| l.get(a).is_some() && l.get(a) == l.get(b))
            .unwrap_or(self.levels.len())
    }

    /// The pair's class if the pair is among those drawn for it.
    fn sampled(&self, a: usize, b: usize) -> Option<usize> {
        let c = self.class(a, b);
        let h = (a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (b as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        h.rotate_left(17)
            .is_multiple_of(self.stride[c])
            .then_some(c)
    }
}

/// Draws the marker of line `c` at `at` on `area`: a shape per line, so that lines of close
/// colours or of equal values can be told apart.
pub(crate) fn marker<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    c: usize,
    at: CT::From,
    colour: RGBColor,
) -> Result<(), PlotError>
where
    CT::From: Clone + 'static,
{
    let filled = colour.filled();
    match c % 4 {
        0 => area.draw(&Circle::new(at, 4, filled)),
        1 => area.draw(&TriangleMarker::new(at, 5, filled)),
        2 => area.draw(&Cross::new(at, 4, colour.stroke_width(2))),
        _ => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-3, -3), (3, 3)], filled))),
    }
    .map_err(PlotError::draw)
}

/// Ticks at 0 (drawn at 0.5) and every fourth power of two up to `max`.
pub(crate) fn size_ticks(max: f64) -> Vec<f64> {
    let mut t = vec![0.5];
    let mut m = 1.0;
    while m <= max {
        t.push(m);
        m *= 16.0;
    }
    t
}

pub(crate) fn size_label(x: f64) -> String {
    if x < 1.0 {
        return "0".into();
    }
    let n = x.round() as u64;
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}K", n >> 10),
        n => n.to_string(),
    }
}

impl Figure for Curves {
    fn size(&self) -> (u32, u32) {
        (1200, 820)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let body = crate::figure::titled(root, &self.title, 50, 19.0)?;
        let panels = body.split_evenly((2, 3));
        let max_size = self
            .lines
            .iter()
            .flat_map(|l| l.curves.values().flatten().map(|p| p.0))
            .max()
            .unwrap_or(1)
            .max(2) as f64;
        for (k, (param, label)) in PARAMETERS.iter().enumerate() {
            self.draw_parameter(&panels[k], k, param, label, max_size)?;
        }
        // L: one value per pair, shown per line with its band.
        self.draw_latency(&panels[4])?;
        self.draw_legend(&panels[5])
    }
}

impl Curves {
    /// The panel of one parameter against message size: each line's band and median.
    fn draw_parameter<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        k: usize,
        param: &str,
        label: &str,
        max_size: f64,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let points: Vec<f64> = self
            .lines
            .iter()
            .filter_map(|l| l.curves.get(param))
            .flatten()
            .flat_map(|p| [p.1, p.3])
            .filter(|v| *v > 0.0)
            .collect();
        let lo = points.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = points.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > lo {
            (lo / 1.3, hi * 1.3)
        } else {
            (1e-3, 1.0)
        };
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{label} [us]"), (FONT, 15.0))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(
                (0.5..max_size * 1.5)
                    .log_scale()
                    .with_key_points(size_ticks(max_size)),
                (lo..hi).log_scale(),
            )
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("message size [bytes]")
            .x_label_formatter(&|x| size_label(*x))
            .y_label_formatter(&|y| crate::figure::short(*y))
            .label_style((FONT, 13.0))
            .axis_desc_style((FONT, 14.0))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        for (_, limit) in &self.eager {
            let x = *limit as f64;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, lo), (x, hi)],
                    6,
                    4,
                    RGBColor(120, 120, 120).stroke_width(1),
                ))
                .map_err(e)?;
        }
        // The limits' sizes in the first panel, a step lower each so that close ones do
        // not overlap; their names are in the legend.
        if k == 0 {
            for (i, (_, limit)) in self.eager.iter().enumerate() {
                let x = *limit as f64;
                chart
                    .draw_series(std::iter::once(Text::new(
                        size_label(x),
                        (x, hi / 1.2 / (hi / lo).powf(0.07 * i as f64)),
                        anchored(13.0, HPos::Left, VPos::Top),
                    )))
                    .map_err(e)?;
            }
        }
        let xy = |s: usize| (s as f64).max(0.5);
        for (c, line) in self.lines.iter().enumerate() {
            let colour = COLOURS[c % COLOURS.len()];
            let Some(curve) = line.curves.get(param) else {
                continue;
            };
            let mut band: Vec<(f64, f64)> = curve.iter().map(|p| (xy(p.0), p.3.max(lo))).collect();
            band.extend(curve.iter().rev().map(|p| (xy(p.0), p.1.max(lo))));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band.clone(),
                    colour.mix(0.28),
                )))
                .map_err(e)?;
            // The band's edges, so that a narrow band still shows.
            band.push(band[0]);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    band,
                    colour.mix(0.55).stroke_width(1),
                )))
                .map_err(e)?;
        }
        // Medians over the bands, earlier lines wider so that lines of equal values
        // show as stripes instead of hiding each other; a marker shape per line.
        let n = self.lines.len();
        for (c, line) in self.lines.iter().enumerate() {
            let colour = COLOURS[c % COLOURS.len()];
            let Some(curve) = line.curves.get(param) else {
                continue;
            };
            let width = 2 + 2 * (n - 1 - c).min(3) as u32;
            chart
                .draw_series(LineSeries::new(
                    curve.iter().map(|p| (xy(p.0), p.2.max(lo))),
                    colour.stroke_width(width),
                ))
                .map_err(e)?;
            for p in curve {
                marker(chart.plotting_area(), c, (xy(p.0), p.2.max(lo)), colour)?;
            }
        }
        Ok(())
    }

    /// The panel of L, one bar per line with its p10-p90 whisker.
    fn draw_latency<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        let lat_hi = self
            .lines
            .iter()
            .map(|l| l.latency.2)
            .fold(0.0, f64::max)
            .max(1e-3)
            * 1.2;
        let n = self.lines.len().max(1);
        let mut chart = ChartBuilder::on(area)
            .caption("L [us]", (FONT, 15.0))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..lat_hi)
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_desc("one bar per line (median, p10-p90)")
            .y_label_formatter(&|y| crate::figure::short(*y))
            .label_style((FONT, 13.0))
            .axis_desc_style((FONT, 14.0))
            .draw()
            .map_err(e)?;
        for (c, line) in self.lines.iter().enumerate() {
            let colour = COLOURS[c % COLOURS.len()];
            let x = c as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.3, 0.0), (x + 0.3, line.latency.1)],
                    colour.mix(0.8).filled(),
                )))
                .map_err(e)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, line.latency.0), (x, line.latency.2)],
                    BLACK.stroke_width(2),
                )))
                .map_err(e)?;
        }
        Ok(())
    }

    /// The legend: each line's colour, marker, name and pairs, and the eager limits.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        legend: &DrawingArea<DB, Shift>,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        legend
            .draw(&Text::new("lines", (20, 20), (FONT, 15.0).into_font()))
            .map_err(e)?;
        for (c, line) in self.lines.iter().enumerate() {
            let y = 50 + c as i32 * 26;
            let colour = COLOURS[c % COLOURS.len()];
            legend
                .draw(&Rectangle::new([(20, y), (44, y + 12)], colour.filled()))
                .map_err(e)?;
            marker(legend, c, (32, y + 6), WHITE)?;
            let pairs = if line.pairs < line.class_pairs {
                format!("{} of {} pairs", line.pairs, line.class_pairs)
            } else {
                format!("{} pairs", line.pairs)
            };
            legend
                .draw(&Text::new(
                    format!("{} ({pairs})", line.name),
                    (52, y),
                    (FONT, 15.0).into_font(),
                ))
                .map_err(e)?;
        }
        let y = 60 + self.lines.len() as i32 * 26;
        legend
            .draw(&Text::new(
                "line: median; band: p10-p90",
                (20, y),
                (FONT, 14.0).into_font(),
            ))
            .map_err(e)?;
        if !self.eager.is_empty() {
            legend
                .draw(&Text::new(
                    "dashed: the MPI library's eager limits",
                    (20, y + 20),
                    (FONT, 14.0).into_font(),
                ))
                .map_err(e)?;
            for (i, (name, limit)) in self.eager.iter().enumerate() {
                legend
                    .draw(&Text::new(
                        format!("{} {name}", size_label(*limit as f64)),
                        (32, y + 38 + 17 * i as i32),
                        (FONT, 13.0).into_font(),
                    ))
                    .map_err(e)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_label(0.5), "0");
        assert_eq!(size_label(64.0), "64");
        assert_eq!(size_label(4096.0), "4K");
        assert_eq!(size_label(2097152.0), "2M");
    }

    #[test]
    fn eager_limits_come_from_the_protocol_settings() {
        let mpi: lgate_rundir::MpiInfo = serde_json::from_value(serde_json::json!({"control_variables": {"protocol": {"btl_sm_eager_limit": 4096, "btl_tcp_eager_limit": 65536, "btl_tcp_rndv_eager_limit": 65536, "other": 1}}}))
        .unwrap();
        let e = eager_limits(&mpi);
        assert_eq!(e.iter().map(|x| x.1).collect::<Vec<_>>(), [4096, 65536]);
    }
}
