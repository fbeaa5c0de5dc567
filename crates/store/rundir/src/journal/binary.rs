//! The binary journal (`journal.bin`): a header, then one length-prefixed record per test,
//! about 56 bytes for a screening test of two sizes (a JSON line takes 470).
//!
//! ```text
//! file    := MAGIC record*
//! record  := varint(len) body                      len = bytes of body
//! body    := u8(kind | stage << 4) varint(i) varint(j) varint(sweep)
//!            f64(start_s) f32(end_s - start_s) payload
//! payload := kind 0: the result as JSON
//!            kind 1 (ping-pong): varint(n) { varint(size) summary }^n
//!            kind 2 (PLogP):     f64(clock_overhead_s) varint(n)
//!                                { varint(size) u8(flags) summary(rtt) summary(os) summary(or)
//!                                  [summary(g) varint(messages)] }^n
//!                                (a summary flagged exact: f64 of min p10 median p90 mean max,
//!                                 then its counts)
//! summary := f32(median) i16(min) i16(p10) i16(p90) i16(mean) i16(max)
//!            varint(count) varint(warmup) varint(outliers)
//! ```
//!
//! Numbers are little-endian; varints are unsigned LEB128. A statistic other than the median
//! is stored as `round(4096 log2(x / median))`, so it comes back within 0.009 % of what was
//! measured and in the same order (min <= p10 <= median <= p90 <= max); the median keeps
//! float precision (7 digits). A PLogP summary this cannot hold (a statistic at or below zero,
//! or more than 256 times from its median) is stored exactly (its size's flags say which); any
//! other result it cannot hold (such a ping-pong value, raw samples) is kept whole as JSON
//! (kind 0), so nothing is ever lost to the encoding.

use super::{JournalEntry, Stage};
use crate::records::{
    PairMeasurement, PairResult, PingPongResult, RoundTrips, Saturation, SizeResult,
};
use lgate_stats::Summary;

/// The first bytes of a binary journal: its name and format version.
pub const MAGIC: &[u8; 8] = b"LGJRNL1\n";

const KIND_JSON: u8 = 0;
const KIND_PINGPONG: u8 = 1;
const KIND_PLOGP: u8 = 2;

/// A statistic's offset from its median: steps of 1/4096 of an octave.
const STEPS_PER_OCTAVE: f64 = 4096.0;

const FLAG_ADAPTIVE: u8 = 1;
const FLAG_GAP: u8 = 2;
const FLAG_CONVERGED: u8 = 4;
/// A PLogP size's summaries (rtt, os, or, g: bits 3 to 6) stored exactly, each as its six
/// statistics in f64: one the compact form cannot hold (an overhead at or below zero once the
/// clock's is subtracted, a spread past 256 times its median).
const FLAG_EXACT: [u8; 4] = [8, 16, 32, 64];

/// Appends `entry` to `out` as one record, length prefix included.
pub fn encode(entry: &JournalEntry, out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(64);
    let (kind, payload) = compact_payload(&entry.result).unwrap_or_else(|| {
        (
            KIND_JSON,
            serde_json::to_vec(&entry.result).unwrap_or_default(),
        )
    });
    body.push(kind | (stage_code(entry.stage) << 4));
    put_varint(&mut body, entry.i as u64);
    put_varint(&mut body, entry.j as u64);
    put_varint(&mut body, u64::from(entry.sweep));
    body.extend_from_slice(&entry.start_s.to_le_bytes());
    body.extend_from_slice(&((entry.end_s - entry.start_s) as f32).to_le_bytes());
    body.extend_from_slice(&payload);
    put_varint(out, body.len() as u64);
    out.extend_from_slice(&body);
}

/// What the next record of `bytes` is: a whole record (its entry and length with prefix), or
/// too few bytes for one (a record cut short by a crash).
#[derive(Debug)]
pub enum Next {
    /// A whole record.
    Record(JournalEntry, usize),
    /// The bytes end inside a record.
    Short,
}

/// Decodes the record at the start of `bytes`; an error says what does not decode.
pub(crate) fn decode(bytes: &[u8]) -> Result<Next, String> {
    let mut r = Reader { bytes, at: 0 };
    let Some(len) = r.varint_or_short()? else {
        return Ok(Next::Short);
    };
    let len = usize::try_from(len).map_err(|_| format!("a record of {len} bytes"))?;
    let Some(end) = r.at.checked_add(len).filter(|&e| e <= bytes.len()) else {
        return Ok(Next::Short);
    };
    let mut b = Reader {
        bytes: &bytes[..end],
        at: r.at,
    };
    let head = b.u8()?;
    let (kind, stage) = (head & 0x0f, stage_of(head >> 4)?);
    let i = b.usize()?;
    let j = b.usize()?;
    let sweep = u32::try_from(b.varint()?).map_err(|_| "a sweep past 2^32".to_string())?;
    let start_s = b.f64()?;
    let end_s = start_s + f64::from(b.f32()?);
    if !(start_s.is_finite() && end_s.is_finite()) {
        return Err(format!(
            "times {start_s} to {end_s} are not numbers of seconds"
        ));
    }
    let result = match kind {
        KIND_JSON => serde_json::from_slice(b.rest()).map_err(|e| format!("its result: {e}"))?,
        KIND_PINGPONG => PairResult::PingPong(b.pingpong()?),
        KIND_PLOGP => PairResult::PLogP(b.plogp()?),
        k => return Err(format!("record kind {k} is none of the kinds")),
    };
    if b.at != end {
        return Err(format!("{} bytes left over after the record", end - b.at));
    }
    let entry = JournalEntry {
        sweep,
        i,
        j,
        start_s,
        end_s,
        result,
        stage,
    };
    Ok(Next::Record(entry, end))
}

/// The stage's code in a record's first byte.
fn stage_code(stage: Option<Stage>) -> u8 {
    stage.map_or(0, |s| {
        1 + Stage::ALL.iter().position(|&a| a == s).unwrap_or(0) as u8
    })
}

fn stage_of(code: u8) -> Result<Option<Stage>, String> {
    match code {
        0 => Ok(None),
        c => Stage::ALL
            .get(usize::from(c) - 1)
            .map(|&s| Some(s))
            .ok_or_else(|| format!("stage {c} is none of the stages")),
    }
}

/// The result as a compact payload when every number fits and a PLogP result keeps no raw
/// samples.
fn compact_payload(result: &PairResult) -> Option<(u8, Vec<u8>)> {
    let mut out = Vec::with_capacity(48);
    let m = match result {
        PairResult::PingPong(p) => {
            put_varint(&mut out, p.sizes.len() as u64);
            for s in &p.sizes {
                put_varint(&mut out, s.size as u64);
                put_summary(&mut out, &s.rtt)?;
            }
            return Some((KIND_PINGPONG, out));
        }
        PairResult::PLogP(m) if m.sizes.iter().all(|s| s.raw.is_none()) => m,
        PairResult::PLogP(_) => return None,
    };
    out.extend_from_slice(&m.clock_overhead_s.to_le_bytes());
    put_varint(&mut out, m.sizes.len() as u64);
    for s in &m.sizes {
        put_varint(&mut out, s.size as u64);
        let mut flags = if s.adaptive { FLAG_ADAPTIVE } else { 0 };
        if let Some(g) = &s.g {
            flags |= FLAG_GAP | if g.converged { FLAG_CONVERGED } else { 0 };
        }
        let summaries = [
            Some(&s.rtt),
            Some(&s.os),
            Some(&s.or),
            s.g.as_ref().map(|g| &g.gap),
        ];
        for (summary, exact) in summaries.iter().zip(FLAG_EXACT) {
            if summary.is_some_and(|s| !fits_compact(s)) {
                flags |= exact;
            }
        }
        out.push(flags);
        for (summary, exact) in summaries.iter().zip(FLAG_EXACT) {
            let Some(summary) = summary else { continue };
            if flags & exact != 0 {
                put_exact(&mut out, summary);
            } else {
                put_summary(&mut out, summary)?;
            }
        }
        if let Some(g) = &s.g {
            put_varint(&mut out, g.messages as u64);
        }
    }
    Some((KIND_PLOGP, out))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Whether the compact form holds the summary: every statistic positive and within 2^8 of the
/// median.
fn fits_compact(s: &Summary) -> bool {
    put_summary(&mut Vec::new(), s).is_some()
}

/// The summary's six statistics in f64 and its counts.
fn put_exact(out: &mut Vec<u8>, s: &Summary) {
    for x in [s.min, s.p10, s.median, s.p90, s.mean, s.max] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    for n in [s.count, s.warmup, s.outliers] {
        put_varint(out, n as u64);
    }
}

/// The summary in 14 bytes and its counts, or `None` when a statistic does not fit.
fn put_summary(out: &mut Vec<u8>, s: &Summary) -> Option<()> {
    let median = s.median as f32;
    let m = f64::from(median);
    if !(m.is_finite() && m > 0.0 && median.is_normal()) {
        return None;
    }
    out.extend_from_slice(&median.to_le_bytes());
    for x in [s.min, s.p10, s.p90, s.mean, s.max] {
        if !(x.is_finite() && x > 0.0) {
            return None;
        }
        let steps = ((x / m).log2() * STEPS_PER_OCTAVE).round();
        if steps.abs() > f64::from(i16::MAX) {
            return None;
        }
        out.extend_from_slice(&(steps as i16).to_le_bytes());
    }
    for n in [s.count, s.warmup, s.outliers] {
        put_varint(out, n as u64);
    }
    Some(())
}

/// Bytes being decoded, and how far.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let b = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| "the record ends early".to_string())?;
        self.at += N;
        Ok(b.try_into().expect("N bytes"))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }

    fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_le_bytes(self.take()?))
    }

    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take()?))
    }

    /// A varint, or `None` when the bytes end inside it.
    fn varint_or_short(&mut self) -> Result<Option<u64>, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Ok(None);
            };
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(Some(v));
            }
        }
        Err("a number longer than 64 bits".to_string())
    }

    fn varint(&mut self) -> Result<u64, String> {
        self.varint_or_short()?
            .ok_or_else(|| "the record ends early".to_string())
    }

    fn usize(&mut self) -> Result<usize, String> {
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| format!("{v} does not fit this machine's numbers"))
    }

    fn rest(&mut self) -> &[u8] {
        let rest = &self.bytes[self.at..];
        self.at = self.bytes.len();
        rest
    }

    fn summary(&mut self) -> Result<Summary, String> {
        let median = f64::from(self.f32()?);
        if !(median.is_finite() && median > 0.0) {
            return Err(format!("a median of {median}, not a positive number"));
        }
        let mut stat = || -> Result<f64, String> {
            let steps = i16::from_le_bytes(self.take()?);
            Ok(median * (f64::from(steps) / STEPS_PER_OCTAVE).exp2())
        };
        let (min, p10, p90, mean, max) = (stat()?, stat()?, stat()?, stat()?, stat()?);
        Ok(Summary {
            min,
            p10,
            median,
            p90,
            mean,
            max,
            count: self.usize()?,
            warmup: self.usize()?,
            outliers: self.usize()?,
        })
    }

    /// A summary [`put_exact`] wrote.
    fn exact_summary(&mut self) -> Result<Summary, String> {
        let [min, p10, median, p90, mean, max] = [(); 6].map(|_| self.f64());
        Ok(Summary {
            min: min?,
            p10: p10?,
            median: median?,
            p90: p90?,
            mean: mean?,
            max: max?,
            count: self.usize()?,
            warmup: self.usize()?,
            outliers: self.usize()?,
        })
    }

    /// The summary of bit `exact` of a PLogP size's `flags`, exact or compact.
    fn summary_by(&mut self, flags: u8, exact: u8) -> Result<Summary, String> {
        if flags & exact != 0 {
            self.exact_summary()
        } else {
            self.summary()
        }
    }

    /// A count of items that follow, each at least a byte.
    fn count(&mut self) -> Result<usize, String> {
        let n = self.usize()?;
        if n > self.bytes.len() - self.at {
            return Err(format!("{n} sizes in {} bytes", self.bytes.len() - self.at));
        }
        Ok(n)
    }

    fn pingpong(&mut self) -> Result<PingPongResult, String> {
        let n = self.count()?;
        let sizes = (0..n)
            .map(|_| {
                Ok(RoundTrips {
                    size: self.usize()?,
                    rtt: self.summary()?,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(PingPongResult { sizes })
    }

    fn plogp(&mut self) -> Result<PairMeasurement, String> {
        let clock_overhead_s = self.f64()?;
        let n = self.count()?;
        let sizes = (0..n)
            .map(|_| {
                let size = self.usize()?;
                let flags = self.u8()?;
                let rtt = self.summary_by(flags, FLAG_EXACT[0])?;
                let os = self.summary_by(flags, FLAG_EXACT[1])?;
                let or = self.summary_by(flags, FLAG_EXACT[2])?;
                let g = if flags & FLAG_GAP != 0 {
                    Some(Saturation {
                        gap: self.summary_by(flags, FLAG_EXACT[3])?,
                        messages: self.usize()?,
                        converged: flags & FLAG_CONVERGED != 0,
                    })
                } else {
                    None
                };
                Ok(SizeResult {
                    size,
                    rtt,
                    os,
                    or,
                    g,
                    adaptive: flags & FLAG_ADAPTIVE != 0,
                    raw: None,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(PairMeasurement {
            clock_overhead_s,
            sizes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(median: f64) -> Summary {
        Summary {
            min: median * 0.8,
            p10: median * 0.9,
            median,
            p90: median * 1.3,
            mean: median * 1.05,
            max: median * 1.9,
            count: 11,
            warmup: 5,
            outliers: 2,
        }
    }

    fn entry(result: impl Into<PairResult>) -> JournalEntry {
        let result = result.into();
        JournalEntry {
            sweep: 3,
            i: 70_000,
            j: 127_999,
            start_s: 12_345.678_901_234,
            end_s: 12_345.680_1,
            result,
            stage: Some(Stage::Between),
        }
    }

    fn round_trip(e: &JournalEntry) -> (JournalEntry, usize) {
        let mut bytes = Vec::new();
        encode(e, &mut bytes);
        match decode(&bytes).unwrap() {
            Next::Record(back, len) => {
                assert_eq!(len, bytes.len());
                (back, len)
            }
            Next::Short => panic!("a whole record reads as short"),
        }
    }

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * b.abs()
    }

    fn assert_summary_close(a: &Summary, b: &Summary) {
        assert!(close(a.median, b.median, 1e-7), "{a:?} {b:?}");
        for (x, y) in [
            (a.min, b.min),
            (a.p10, b.p10),
            (a.p90, b.p90),
            (a.mean, b.mean),
        ] {
            assert!(close(x, y, 1e-4), "{a:?} {b:?}");
        }
        assert!(close(a.max, b.max, 1e-4));
        assert_eq!(
            (a.count, a.warmup, a.outliers),
            (b.count, b.warmup, b.outliers)
        );
        assert!(a.min <= a.p10 && a.p10 <= a.median && a.median <= a.p90 && a.p90 <= a.max);
    }

    #[test]
    fn a_screening_test_takes_under_64_bytes_and_comes_back_within_a_ten_thousandth() {
        let result = PingPongResult {
            sizes: vec![
                RoundTrips {
                    size: 0,
                    rtt: summary(1.195_919e-6),
                },
                RoundTrips {
                    size: 65_536,
                    rtt: summary(7.574_918_999e-6),
                },
            ],
        };
        let e = entry(result.clone());
        let (back, len) = round_trip(&e);
        // Ranks past 65 536 take three bytes each; a 64-rank run's take one.
        assert!(len <= 64, "{len} bytes");
        assert_eq!(
            (back.sweep, back.i, back.j, back.stage),
            (3, 70_000, 127_999, e.stage)
        );
        assert_eq!(back.start_s, e.start_s);
        assert!((back.end_s - e.end_s).abs() < 1e-9);
        let back = back.result.pingpong().expect("a ping-pong result").clone();
        assert_eq!(back.sizes.len(), 2);
        for (a, b) in back.sizes.iter().zip(&result.sizes) {
            assert_eq!(a.size, b.size);
            assert_summary_close(&a.rtt, &b.rtt);
        }
    }

    #[test]
    fn a_plogp_test_keeps_its_shape() {
        let size = |size, g: bool| SizeResult {
            size,
            rtt: summary(2e-6),
            os: summary(1e-6),
            or: summary(5e-7),
            g: g.then(|| Saturation {
                gap: summary(3e-7),
                messages: 2560,
                converged: true,
            }),
            adaptive: size == 3,
            raw: None,
        };
        let m = PairMeasurement {
            clock_overhead_s: 2.6748e-8,
            sizes: vec![size(0, true), size(3, true), size(1 << 20, false)],
        };
        let (back, _) = round_trip(&entry(m.clone()));
        let back = back.result.plogp().expect("a PLogP result").clone();
        assert_eq!(back.clock_overhead_s, m.clock_overhead_s);
        for (a, b) in back.sizes.iter().zip(&m.sizes) {
            assert_eq!(
                (a.size, a.adaptive, a.g.is_some()),
                (b.size, b.adaptive, b.g.is_some())
            );
            assert_summary_close(&a.rtt, &b.rtt);
            assert_summary_close(&a.or, &b.or);
            if let (Some(x), Some(y)) = (&a.g, &b.g) {
                assert_summary_close(&x.gap, &y.gap);
                assert_eq!((x.messages, x.converged), (y.messages, y.converged));
            }
        }
    }

    #[test]
    fn a_plogp_overhead_at_or_below_zero_is_kept_exactly_in_its_record() {
        let mut or = summary(5e-7);
        or.min = -2e-8; // below zero once the clock's overhead is subtracted
        let m = PairMeasurement {
            clock_overhead_s: 2.6748e-8,
            sizes: vec![SizeResult {
                size: 0,
                rtt: summary(2e-6),
                os: summary(1e-6),
                or,
                g: Some(Saturation {
                    gap: Summary {
                        min: 0.0,
                        ..summary(3e-7)
                    },
                    messages: 2560,
                    converged: false,
                }),
                adaptive: false,
                raw: None,
            }],
        };
        let value = PairResult::from(m.clone());
        let (kind, _) = compact_payload(&value).expect("a compact record");
        assert_eq!(kind, KIND_PLOGP);
        let (back, _) = round_trip(&entry(value));
        let back = back.result.plogp().expect("a PLogP result").clone();
        assert_eq!(back.sizes[0].or, or);
        assert_eq!(back.sizes[0].g.as_ref().unwrap().gap.min, 0.0);
        assert_summary_close(&back.sizes[0].rtt, &m.sizes[0].rtt);
    }

    #[test]
    fn what_the_compact_kinds_cannot_hold_is_kept_whole() {
        let mut odd = summary(1e-6);
        odd.min = 0.0; // not positive: no ratio to its median
        let result = PingPongResult {
            sizes: vec![RoundTrips { size: 8, rtt: odd }],
        };
        let raw = PairMeasurement {
            clock_overhead_s: 2.6748e-8,
            sizes: vec![SizeResult {
                size: 0,
                rtt: summary(2e-6),
                os: summary(1e-6),
                or: summary(5e-7),
                g: None,
                adaptive: false,
                raw: Some(crate::records::RawSamples {
                    rtt: vec![2e-6, 2.1e-6],
                    ..Default::default()
                }),
            }],
        };
        for value in [PairResult::from(result), PairResult::from(raw)] {
            assert_eq!(compact_payload(&value), None);
            let (back, _) = round_trip(&entry(value.clone()));
            assert_eq!(back.result, value);
        }
    }

    #[test]
    fn a_record_whose_json_is_no_pair_result_is_an_error() {
        let mut body = vec![KIND_JSON];
        for v in [1, 2, 0] {
            put_varint(&mut body, v);
        }
        body.extend_from_slice(&1.0f64.to_le_bytes());
        body.extend_from_slice(&0.5f32.to_le_bytes());
        body.extend_from_slice(br#"{"x": 1}"#);
        let mut bytes = Vec::new();
        put_varint(&mut bytes, body.len() as u64);
        bytes.extend_from_slice(&body);
        assert!(decode(&bytes).unwrap_err().contains("its result"));
    }

    #[test]
    fn a_cut_record_is_short_and_a_bad_one_an_error() {
        let mut bytes = Vec::new();
        let screening = PingPongResult {
            sizes: vec![RoundTrips {
                size: 8,
                rtt: summary(1e-6),
            }],
        };
        encode(&entry(screening), &mut bytes);
        // A record under 128 bytes: one byte of length, then the kind and stage.
        assert!(bytes.len() < 128);
        for cut in 0..bytes.len() {
            assert!(
                matches!(decode(&bytes[..cut]), Ok(Next::Short)),
                "cut at {cut}"
            );
        }
        let mut bad = bytes.clone();
        bad[1] = 0x0f | (2 << 4); // kind 15
        assert!(decode(&bad).unwrap_err().contains("kind 15"));
        let mut bad = bytes;
        bad[1] = 7 << 4; // stage 7
        assert!(decode(&bad).unwrap_err().contains("stage 7"));
    }
}
