//! Broadcast benchmark results: time against message size per broadcast (log-log), and the
//! speedup of each over MPI_Bcast, from a `bcast-tuning.json`.

use std::collections::BTreeMap;
use std::path::Path;

use lgate_rundir::bcast_tuning::{Tuning, LIBRARY};
use lgate_rundir::RunDirError;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::curves::{size_label, size_ticks, COLOURS};
use crate::figure::{Figure, PlotError, FONT};

/// How many broadcasts are drawn besides MPI_Bcast: the fastest by geometric mean time.
const DRAWN: usize = 7;

/// The figure of a broadcast benchmark.
#[derive(Debug, Clone)]
pub struct BcastFigure {
    title: String,
    /// Per broadcast (MPI_Bcast first if measured): (size, trimmed mean in us) by size.
    lines: Vec<(String, Vec<(usize, f64)>)>,
}

impl BcastFigure {
    /// Reads a tuning file and keeps MPI_Bcast and the fastest other broadcasts.
    pub fn of_file(path: &Path) -> Result<BcastFigure, PlotError> {
        let io = |message: String| PlotError::Io {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| io(e.to_string()))?;
        let tuning = Tuning::read_text(&text, path).map_err(|e| match e {
            RunDirError::BadFile { message, .. } => io(message),
            other => io(other.to_string()),
        })?;
        let mut by_name: BTreeMap<String, Vec<(usize, f64)>> = BTreeMap::new();
        for t in tuning.timings.iter().filter(|t| t.correct) {
            by_name
                .entry(t.candidate.clone())
                .or_default()
                .push((t.size, t.trimmed_us));
        }
        let mut others: Vec<(String, Vec<(usize, f64)>)> = by_name
            .iter()
            .filter(|(n, _)| n.as_str() != LIBRARY)
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        let score = |v: &[(usize, f64)]| {
            v.iter().map(|p| p.1.max(1e-3).ln()).sum::<f64>() / v.len().max(1) as f64
        };
        others.sort_by(|a, b| score(&a.1).total_cmp(&score(&b.1)));
        others.truncate(DRAWN);
        let mut lines = Vec::new();
        if let Some(lib) = by_name.get(LIBRARY) {
            lines.push((LIBRARY.to_string(), lib.clone()));
        }
        lines.extend(others);
        if lines.is_empty() {
            return Err(io("no correct timings to draw".into()));
        }
        for (_, v) in &mut lines {
            v.sort_by_key(|p| p.0);
        }
        Ok(BcastFigure {
            title: format!(
                "{}: broadcast on {} ranks from root {}",
                path.display(),
                tuning.ranks,
                tuning.root
            ),
            lines,
        })
    }

    /// The broadcasts drawn, MPI_Bcast first when measured.
    pub fn names(&self) -> Vec<&str> {
        self.lines.iter().map(|l| l.0.as_str()).collect()
    }
}

impl Figure for BcastFigure {
    fn size(&self) -> (u32, u32) {
        (1200, 590)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let body = crate::figure::titled(root, &self.title, 46, 18.0)?;
        // The bottom line explains the lines.
        let (body, _) = body.split_vertically(body.dim_in_pixel().1.saturating_sub(28));
        let (left, right) = body.split_horizontally(600);
        let max_size = self
            .lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.0))
            .max()
            .unwrap_or(1)
            .max(2) as f64;
        self.draw_times(&left, max_size)?;
        self.draw_speedups(&right, max_size)?;
        root.draw(&Text::new(
            "dots: measured sizes; solid between neighbouring sizes (at most 2x apart), dashed \
             across sizes not measured",
            (12, self.size().1 as i32 - 18),
            (FONT, 14.0).into_font(),
        ))
        .map_err(PlotError::draw)?;
        Ok(())
    }
}

/// The message-size axis up to `max_size`, in powers of two.
fn size_axis(max_size: f64) -> WithKeyPoints<LogCoord<f64>> {
    (0.5..max_size * 1.5)
        .log_scale()
        .with_key_points(size_ticks(max_size))
}

/// A message size where a log axis can put it (0 B at half a byte).
fn at_size(s: usize) -> f64 {
    (s as f64).max(0.5)
}

impl BcastFigure {
    /// The time of each line against message size, with the legend.
    fn draw_times<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        max_size: f64,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        // Time.
        let times: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.1))
            .collect();
        let lo = times
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(1e-3)
            / 1.5;
        let hi = times.iter().copied().fold(0.0, f64::max).max(lo * 10.0) * 1.5;
        let mut chart = ChartBuilder::on(area)
            .caption("time per broadcast [us]", (FONT, 15.0))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(60)
            .build_cartesian_2d(size_axis(max_size), (lo..hi).log_scale())
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
        for (c, (name, points)) in self.lines.iter().enumerate() {
            let colour = COLOURS[c % COLOURS.len()];
            let width = if name == LIBRARY { 3 } else { 2 };
            let points: Vec<(f64, f64)> =
                points.iter().map(|p| (at_size(p.0), p.1.max(lo))).collect();
            joined(&mut chart, &points, colour.stroke_width(width))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 13.0))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(e)?;
        Ok(())
    }

    /// Each line's speedup over MPI_Bcast against message size.
    fn draw_speedups<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        max_size: f64,
    ) -> Result<(), PlotError> {
        let e = PlotError::draw;
        // Speedup over MPI_Bcast at each size.
        let library: BTreeMap<usize, f64> = self
            .lines
            .iter()
            .find(|l| l.0 == LIBRARY)
            .map(|l| l.1.iter().copied().collect())
            .unwrap_or_default();
        let speedups: Vec<(usize, Vec<(usize, f64)>)> = self
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.0 != LIBRARY)
            .map(|(c, l)| {
                let v =
                    l.1.iter()
                        .filter_map(|&(s, t)| library.get(&s).map(|&lib| (s, lib / t.max(1e-9))))
                        .collect();
                (c, v)
            })
            .collect();
        let top = speedups
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(1.0, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption("speedup over MPI_Bcast", (FONT, 15.0))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(50)
            .build_cartesian_2d(size_axis(max_size), 0.0..top)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("message size [bytes]")
            .x_label_formatter(&|x| size_label(*x))
            .label_style((FONT, 13.0))
            .axis_desc_style((FONT, 14.0))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.5, 1.0), (max_size * 1.5, 1.0)],
                6,
                4,
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(e)?;
        for (c, points) in &speedups {
            let colour = COLOURS[c % COLOURS.len()];
            let points: Vec<(f64, f64)> = points.iter().map(|p| (at_size(p.0), p.1)).collect();
            joined(&mut chart, &points, colour.stroke_width(2))?;
        }
        Ok(())
    }
}

/// The largest ratio of two sizes drawn as measured neighbours.
const NEIGHBOURS: f64 = 2.0;

/// Draws measured points with a dot each, joined solid where the sizes are neighbours
/// ([`NEIGHBOURS`]) and dashed across sizes not measured; returns the dots' series for the
/// legend.
fn joined<'c, 'b, DB, CT>(
    chart: &'c mut ChartContext<'b, DB, CT>,
    points: &[(f64, f64)],
    style: ShapeStyle,
) -> Result<&'c mut plotters::chart::SeriesAnno<'b, DB>, PlotError>
where
    DB: DrawingBackend + 'b,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let e = PlotError::draw;
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        // Size 0 is drawn at 0.5: 0 and 1 byte are neighbours.
        if b.0 <= a.0 * NEIGHBOURS || a.0 < 1.0 && b.0 <= NEIGHBOURS {
            chart
                .draw_series(LineSeries::new([a, b], style))
                .map_err(e)?;
        } else {
            chart
                .draw_series(DashedLineSeries::new([a, b], 5, 4, style.stroke_width(1)))
                .map_err(e)?;
        }
    }
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 3, style.filled())))
        .map_err(e)
}
