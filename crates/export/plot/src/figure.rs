//! Rendering a figure to PNG or SVG (chosen by the output file's extension), to bytes or to a
//! file written atomically, with the embedded font every figure uses.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

/// The font family every figure uses: DejaVu Sans, embedded (see `fonts/LICENSE-DejaVu.txt`).
pub const FONT: &str = "sans-serif";

static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Makes the embedded font known to plotters (once per process).
pub fn register_font() {
    REGISTER.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES)
            .map_err(|_| ())
            .expect("the embedded font parses");
    });
}

/// An error of plotting.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The output's extension is neither .png nor .svg.
    #[error("{0}: the output must end in .png or .svg")]
    Format(String),
    /// Drawing failed.
    #[error("cannot draw: {0}")]
    Draw(String),
    /// The input does not fit the figure.
    #[error("{0}")]
    Input(String),
    /// Reading or writing a file failed.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
}

impl PlotError {
    pub(crate) fn draw<E: std::fmt::Debug>(e: E) -> PlotError {
        PlotError::Draw(format!("{e:?}"))
    }
}

/// A picture that can be drawn on any plotters backend.
pub trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws the figure on `root`, which is `size()` large.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>;
}

/// The image formats of figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG.
    Png,
    /// SVG.
    Svg,
}

impl ImageFormat {
    /// The format a file name asks for by its extension.
    pub fn of(path: &Path) -> Result<ImageFormat, PlotError> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref()
        {
            Some("png") => Ok(ImageFormat::Png),
            Some("svg") => Ok(ImageFormat::Svg),
            _ => Err(PlotError::Format(path.display().to_string())),
        }
    }
}

/// Fills `root` white and writes `title` in a band of `band` pixels at its top (in `points`
/// type); returns the area below the band.
pub(crate) fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    band: u32,
    points: f64,
) -> Result<DrawingArea<DB, Shift>, PlotError> {
    root.fill(&WHITE).map_err(PlotError::draw)?;
    let (top, body) = root.split_vertically(band);
    top.draw(&Text::new(
        title.to_string(),
        (20, 14),
        (FONT, points).into_font(),
    ))
    .map_err(PlotError::draw)?;
    Ok(body)
}

/// The figure as PNG bytes.
pub fn to_png(figure: &impl Figure) -> Result<Vec<u8>, PlotError> {
    register_font();
    let (w, h) = figure.size();
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(PlotError::draw)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(PlotError::draw)?;
    Ok(png)
}

/// The figure as SVG text.
pub fn to_svg(figure: &impl Figure) -> Result<String, PlotError> {
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, figure.size()).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(PlotError::draw)?;
    }
    // plotters-svg 0.3.7 writes images as `data:png`, which browsers do not read.
    Ok(svg.replace("href=\"data:png;base64,", "href=\"data:image/png;base64,"))
}

/// Writes the figure to `path`, PNG or SVG by its extension, atomically.
pub fn save(figure: &impl Figure, path: &Path) -> Result<(), PlotError> {
    let bytes = match ImageFormat::of(path)? {
        ImageFormat::Png => to_png(figure)?,
        ImageFormat::Svg => to_svg(figure)?.into_bytes(),
    };
    lgate_output::write_atomic(path, &bytes).map_err(|e| PlotError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

use image::ImageEncoder as _;

/// The figure font at `size` points, anchored as given.
pub(crate) fn anchored(
    size: f64,
    h: plotters::style::text_anchor::HPos,
    v: plotters::style::text_anchor::VPos,
) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(plotters::style::text_anchor::Pos::new(h, v))
}

/// Ticks for an axis from `lo` to `hi`: about `count` round values.
pub(crate) fn nice_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    if hi <= lo || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let raw = (hi - lo) / count.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|f| f * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// A value with as many decimals as its size needs.
pub(crate) fn short(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            nice_ticks(0.0, 1.0, 5),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        let t = nice_ticks(0.43, 1.87, 4);
        assert!(
            t.len() >= 3 && t[0] >= 0.43 && *t.last().unwrap() <= 1.87,
            "{t:?}"
        );
        assert_eq!(short(1.23456), "1.23");
        assert_eq!(short(0.0123), "0.012");
    }

    #[test]
    fn formats_by_extension() {
        assert_eq!(
            ImageFormat::of(Path::new("a.PNG")).unwrap(),
            ImageFormat::Png
        );
        assert_eq!(
            ImageFormat::of(Path::new("a.svg")).unwrap(),
            ImageFormat::Svg
        );
        assert!(ImageFormat::of(Path::new("a.pdf")).is_err());
    }
}
