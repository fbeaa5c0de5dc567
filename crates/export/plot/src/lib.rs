//! Pictures of runs and topologies: distance matrices as heat maps, PLogP parameters against
//! message size (and as a table), dendrograms of topologies, and a self-contained HTML report
//! of a run. PNG or SVG by the output file's extension, drawn with plotters and an embedded
//! font.
#![deny(missing_docs)]

pub mod bcast;
pub mod curves;
pub mod dendrogram;
pub mod figure;
pub mod heatmap;
pub mod report;
pub mod sizes;

pub use bcast::BcastFigure;
pub use curves::Curves;
pub use dendrogram::Dendrogram;
pub use figure::{save, to_png, to_svg, Figure, ImageFormat, PlotError};
pub use heatmap::{diff_heatmap, Heatmap};
pub use report::{report_html, ReportDiff, ReportInputs};
pub use sizes::{BandwidthUnit, SizeTable};
