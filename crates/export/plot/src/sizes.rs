//! The PLogP parameters per message size as a table, as OSU's `osu_latency`/`osu_bw` and
//! mpiGraph print theirs: per placement class (or chosen pair), the one-way latency RTT(m)/2
//! and the bandwidth m/g(m) in the unit asked for, then RTT, o_s, o_r and g. The values are the
//! medians that [`Curves`] draws.

use std::fmt::Write as _;
use std::str::FromStr;

use serde::Serialize;

use crate::curves::{Curve, Curves};

/// The unit bandwidths are given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BandwidthUnit {
    /// 10^6 bytes a second, as OSU prints (`MB/s`).
    #[default]
    MegabytesPerSecond,
    /// 2^20 bytes a second, as mpiGraph prints (`MiB/s`).
    MebibytesPerSecond,
    /// 10^9 bytes a second (`GB/s`).
    GigabytesPerSecond,
    /// 10^9 bits a second, as links are sold (`Gbit/s`).
    GigabitsPerSecond,
}

impl BandwidthUnit {
    /// Every unit's name, as `--units` takes it.
    pub const NAMES: [&'static str; 4] = ["MB/s", "MiB/s", "GB/s", "Gbit/s"];

    /// The unit's name.
    pub fn name(self) -> &'static str {
        match self {
            BandwidthUnit::MegabytesPerSecond => "MB/s",
            BandwidthUnit::MebibytesPerSecond => "MiB/s",
            BandwidthUnit::GigabytesPerSecond => "GB/s",
            BandwidthUnit::GigabitsPerSecond => "Gbit/s",
        }
    }

    /// A bandwidth of `bytes_per_us` (bytes a microsecond, 10^6 bytes a second) in this unit.
    pub fn of(self, bytes_per_us: f64) -> f64 {
        match self {
            BandwidthUnit::MegabytesPerSecond => bytes_per_us,
            BandwidthUnit::MebibytesPerSecond => bytes_per_us * 1e6 / (1u64 << 20) as f64,
            BandwidthUnit::GigabytesPerSecond => bytes_per_us / 1e3,
            BandwidthUnit::GigabitsPerSecond => bytes_per_us * 8.0 / 1e3,
        }
    }
}

impl FromStr for BandwidthUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "MB/s" => BandwidthUnit::MegabytesPerSecond,
            "MiB/s" => BandwidthUnit::MebibytesPerSecond,
            "GB/s" => BandwidthUnit::GigabytesPerSecond,
            "Gbit/s" => BandwidthUnit::GigabitsPerSecond,
            other => {
                return Err(format!(
                    "`{other}` is not a bandwidth unit (one of {})",
                    Self::NAMES.join(", ")
                ))
            }
        })
    }
}

/// One message size of one line: the medians over the line's pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRow {
    /// The message size, bytes.
    pub size_bytes: usize,
    /// RTT(m)/2, microseconds: what OSU's latency test reports.
    pub latency_us: Option<f64>,
    /// m/g(m) in the table's unit: what a stream of messages of this size sustains; none at
    /// 0 bytes or where g was not measured.
    pub bandwidth: Option<f64>,
    /// The round trip RTT(m), microseconds.
    pub rtt_us: Option<f64>,
    /// The send overhead o_s(m), microseconds.
    pub os_us: Option<f64>,
    /// The receive overhead o_r(m), microseconds.
    pub or_us: Option<f64>,
    /// The gap g(m), microseconds.
    pub g_us: Option<f64>,
}

impl SizeRow {
    /// The row's values after its size, in the columns' order.
    fn values(&self) -> [Option<f64>; 6] {
        [
            self.latency_us,
            self.bandwidth,
            self.rtt_us,
            self.os_us,
            self.or_us,
            self.g_us,
        ]
    }
}

/// The rows of one placement class or chosen pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeLine {
    /// `same socket`, `different node`, `pair 0-5`, ...
    pub name: String,
    /// The pairs behind the medians.
    pub pairs: usize,
    /// The pairs of the class among the run's ranks, measured or not.
    pub class_pairs: usize,
    /// The end-to-end latency L (PLogP's), microseconds.
    pub l_us: f64,
    /// One row per message size, smallest first.
    pub sizes: Vec<SizeRow>,
}

/// The PLogP parameters per message size of a run, per line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeTable {
    /// The unit of `bandwidth`.
    pub bandwidth_unit: &'static str,
    /// The lines, in the order the curves draw them.
    pub lines: Vec<SizeLine>,
}

/// The median at `size` of a curve, if it has that size.
fn at(curve: Option<&Curve>, size: usize) -> Option<f64> {
    curve?
        .iter()
        .find(|p| p.0 == size)
        .map(|p| p.2)
        .filter(|v| v.is_finite())
}

impl SizeTable {
    /// The table of what `curves` draws, bandwidths in `unit`.
    pub fn of(curves: &Curves, unit: BandwidthUnit) -> SizeTable {
        let lines = curves
            .lines()
            .iter()
            .map(|line| {
                let mut sizes: Vec<usize> = (line.curves.values())
                    .flat_map(|c| c.iter().map(|p| p.0))
                    .collect();
                sizes.sort_unstable();
                sizes.dedup();
                let curve = |name: &str| line.curves.get(name);
                let rows = sizes
                    .into_iter()
                    .map(|m| {
                        let rtt = at(curve("rtt"), m);
                        let g = at(curve("g"), m);
                        SizeRow {
                            size_bytes: m,
                            latency_us: rtt.map(|r| r / 2.0),
                            bandwidth: g
                                .filter(|&g| m > 0 && g > 0.0)
                                .map(|g| unit.of(m as f64 / g)),
                            rtt_us: rtt,
                            os_us: at(curve("os"), m),
                            or_us: at(curve("or"), m),
                            g_us: g,
                        }
                    })
                    .collect();
                SizeLine {
                    name: line.name.clone(),
                    pairs: line.pairs,
                    class_pairs: line.class_pairs,
                    l_us: line.latency.1,
                    sizes: rows,
                }
            })
            .collect();
        SizeTable {
            bandwidth_unit: unit.name(),
            lines,
        }
    }

    /// The table for people: a block per line, `#` comments over aligned columns.
    pub fn to_text(&self, title: &str) -> String {
        let mut out = format!(
            "# {title}: PLogP parameters per message size, the median over each line's pairs\n\
             # latency = RTT/2 (as osu_latency); bandwidth = size/g, a stream's rate (as osu_bw)\n"
        );
        let unit = self.bandwidth_unit;
        let cell = |v: Option<f64>| v.map_or("-".to_string(), fixed);
        for line in &self.lines {
            let _ = writeln!(
                out,
                "\n# {}: {} of {} pairs; L = {} us",
                line.name,
                line.pairs,
                line.class_pairs,
                fixed(line.l_us)
            );
            let _ = writeln!(
                out,
                "# {:>10} {:>14} {:>18} {:>12} {:>12} {:>12} {:>12}",
                "size (B)",
                "latency (us)",
                format!("bandwidth ({unit})"),
                "RTT (us)",
                "o_s (us)",
                "o_r (us)",
                "g (us)"
            );
            for r in &line.sizes {
                let [latency, bandwidth, rtt, os, or, g] = r.values().map(cell);
                let _ = writeln!(
                    out,
                    "{:>12} {latency:>14} {bandwidth:>18} {rtt:>12} {os:>12} {or:>12} {g:>12}",
                    r.size_bytes
                );
            }
        }
        out
    }

    /// The table for programs: one CSV row per line and size, empty where not measured.
    pub fn to_csv(&self) -> String {
        let unit = self
            .bandwidth_unit
            .to_lowercase()
            .replace("/s", "_per_s")
            .replace('/', "_");
        let mut out =
            format!("line,pairs,size_bytes,latency_us,bandwidth_{unit},rtt_us,os_us,or_us,g_us\n");
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        for line in &self.lines {
            for r in &line.sizes {
                let values: Vec<String> = r.values().into_iter().map(cell).collect();
                let _ = writeln!(
                    out,
                    "{},{},{},{}",
                    csv_field(&line.name),
                    line.pairs,
                    r.size_bytes,
                    values.join(",")
                );
            }
        }
        out
    }
}

/// A CSV field, quoted when it holds a comma or a quote.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A number as people read it: three significant digits below 100, whole above.
fn fixed(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::BandwidthUnit;

    #[test]
    fn bandwidth_units_convert_from_bytes_a_microsecond() {
        // 1 byte a microsecond is 10^6 bytes a second.
        let b = 1000.0;
        assert_eq!(BandwidthUnit::MegabytesPerSecond.of(b), 1000.0);
        assert!((BandwidthUnit::MebibytesPerSecond.of(b) - 953.674).abs() < 1e-3);
        assert_eq!(BandwidthUnit::GigabytesPerSecond.of(b), 1.0);
        assert_eq!(BandwidthUnit::GigabitsPerSecond.of(b), 8.0);
        for name in BandwidthUnit::NAMES {
            assert_eq!(name.parse::<BandwidthUnit>().unwrap().name(), name);
        }
        let err = "kB/s".parse::<BandwidthUnit>().unwrap_err();
        assert!(err.contains("MB/s, MiB/s, GB/s, Gbit/s"), "{err}");
    }
}
