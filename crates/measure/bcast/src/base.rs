//! The base algorithms (the reference thesis's Table 6.1) over a list of members, from the
//! member at a given place. Members are numbered virtually from the root: virtual rank v is
//! member `(root + v) mod n`.

use std::fmt;
use std::str::FromStr;

use lgate_topology::Rank;
use lgate_transport::Transport;
use serde::{Deserialize, Serialize};

use crate::{BcastError, BCAST};

/// A broadcast algorithm over point-to-point messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum BaseAlgorithm {
    /// The root sends the whole message to every other member.
    Flat,
    /// Each member receives the whole message from the one before it and passes it on.
    Chain,
    /// A chain in segments of `segment` bytes, so that the members forward at the same time.
    Pipeline {
        /// Bytes per segment.
        segment: usize,
    },
    /// A binary tree (member v's children are 2v + 1 and 2v + 2).
    Binary,
    /// Binary tree with swap: each half of the message goes down one subtree of the root,
    /// then members of the two subtrees swap halves pairwise.
    SplitBinary,
    /// A binomial scatter of n pieces, then a ring allgather.
    ScatterAllgather,
    /// A binomial tree (member v receives from v less its lowest set bit).
    Binomial,
    /// Flat, the root's sends all started at once (non-blocking).
    FlatNonBlocking,
    /// Pipeline whose members receive the next segment while they send the last one on.
    PipelineNonBlocking {
        /// Bytes per segment.
        segment: usize,
    },
    /// Binomial, each member's sends to its children started at once.
    BinomialNonBlocking,
}

impl BaseAlgorithm {
    /// Every algorithm, pipelines with the given segment sizes.
    pub fn all(segments: &[usize]) -> Vec<BaseAlgorithm> {
        let mut out = vec![BaseAlgorithm::Flat, BaseAlgorithm::Chain];
        out.extend(
            segments
                .iter()
                .map(|&segment| BaseAlgorithm::Pipeline { segment }),
        );
        out.extend([
            BaseAlgorithm::Binary,
            BaseAlgorithm::SplitBinary,
            BaseAlgorithm::ScatterAllgather,
            BaseAlgorithm::Binomial,
            BaseAlgorithm::FlatNonBlocking,
        ]);
        out.extend(
            segments
                .iter()
                .map(|&segment| BaseAlgorithm::PipelineNonBlocking { segment }),
        );
        out.push(BaseAlgorithm::BinomialNonBlocking);
        out
    }
}

/// Bytes as the shortest of `B`, `KiB`, `MiB` that divides them.
pub(crate) fn size_text(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}KiB", bytes >> 10)
    } else {
        format!("{bytes}")
    }
}

impl fmt::Display for BaseAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BaseAlgorithm::Flat => f.write_str("flat"),
            BaseAlgorithm::Chain => f.write_str("chain"),
            BaseAlgorithm::Pipeline { segment } => write!(f, "pipeline:{}", size_text(*segment)),
            BaseAlgorithm::Binary => f.write_str("binary"),
            BaseAlgorithm::SplitBinary => f.write_str("split-binary"),
            BaseAlgorithm::ScatterAllgather => f.write_str("scatter-allgather"),
            BaseAlgorithm::Binomial => f.write_str("binomial"),
            BaseAlgorithm::FlatNonBlocking => f.write_str("flat-nb"),
            BaseAlgorithm::PipelineNonBlocking { segment } => {
                write!(f, "pipeline-nb:{}", size_text(*segment))
            }
            BaseAlgorithm::BinomialNonBlocking => f.write_str("binomial-nb"),
        }
    }
}

/// The broadcast algorithms' names, as [`BaseAlgorithm`] reads them.
const KNOWN: &str = "flat, chain, pipeline:SIZE, binary, split-binary, scatter-allgather, \
                     binomial, flat-nb, pipeline-nb:SIZE, binomial-nb";

/// A broadcast algorithm that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlgorithmError {
    /// No algorithm of that name.
    #[error("`{name}` is not a broadcast algorithm ({KNOWN})")]
    Unknown {
        /// The name given.
        name: String,
    },
    /// A pipeline's segment size that is not a size.
    #[error("`{text}` is not a segment size (e.g. 64KiB)")]
    Segment {
        /// The text given.
        text: String,
    },
    /// A pipeline's segment of 0 bytes.
    #[error("the segment size of a pipeline must be at least 1 byte")]
    ZeroSegment,
}

impl FromStr for BaseAlgorithm {
    type Err = AlgorithmError;

    /// `flat`, `chain`, `pipeline:SIZE` (e.g. `pipeline:64KiB`), `binary`, `split-binary`,
    /// `scatter-allgather`, `binomial`, or the non-blocking `flat-nb`, `pipeline-nb:SIZE`,
    /// `binomial-nb`.
    fn from_str(s: &str) -> Result<Self, AlgorithmError> {
        match s.trim() {
            "flat-nb" => Ok(BaseAlgorithm::FlatNonBlocking),
            "binomial-nb" => Ok(BaseAlgorithm::BinomialNonBlocking),
            "flat" => Ok(BaseAlgorithm::Flat),
            "chain" => Ok(BaseAlgorithm::Chain),
            "binary" => Ok(BaseAlgorithm::Binary),
            "split-binary" => Ok(BaseAlgorithm::SplitBinary),
            "scatter-allgather" => Ok(BaseAlgorithm::ScatterAllgather),
            "binomial" => Ok(BaseAlgorithm::Binomial),
            other => {
                let (size, blocking) = match (
                    other.strip_prefix("pipeline:"),
                    other.strip_prefix("pipeline-nb:"),
                ) {
                    (Some(size), _) => (size, true),
                    (_, Some(size)) => (size, false),
                    _ => {
                        return Err(AlgorithmError::Unknown {
                            name: other.to_string(),
                        })
                    }
                };
                let segment = parse_size(size).ok_or_else(|| AlgorithmError::Segment {
                    text: size.to_string(),
                })?;
                if segment == 0 {
                    return Err(AlgorithmError::ZeroSegment);
                }
                Ok(if blocking {
                    BaseAlgorithm::Pipeline { segment }
                } else {
                    BaseAlgorithm::PipelineNonBlocking { segment }
                })
            }
        }
    }
}

/// `1234`, `8KiB`, `1MiB`, `2k`, `1M`.
pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: usize = digits.parse().ok()?;
    let scale = match unit.trim() {
        "" | "B" => 1,
        "k" | "K" | "KiB" | "kB" | "KB" => 1 << 10,
        "m" | "M" | "MiB" | "MB" => 1 << 20,
        "g" | "G" | "GiB" | "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// One member's view of a broadcast among `members`.
struct Members<'a> {
    t: &'a dyn Transport,
    members: &'a [Rank],
    root: usize,
    /// This rank's virtual rank.
    v: usize,
}

impl Members<'_> {
    fn n(&self) -> usize {
        self.members.len()
    }

    fn rank_of(&self, v: usize) -> Rank {
        self.members[(self.root + v) % self.n()]
    }

    fn send(&self, to_v: usize, data: &[u8]) -> Result<(), BcastError> {
        Ok(self.t.send(self.rank_of(to_v), BCAST, data)?)
    }

    fn recv(&self, from_v: usize, buf: &mut [u8]) -> Result<(), BcastError> {
        let from = self.rank_of(from_v);
        let got = self.t.recv(from, BCAST, buf)?;
        crate::check_length(self.t, from, buf.len(), got)
    }

    /// Sends `data` to every member of `to_v`, all started at once.
    fn send_all(&self, to_v: &[usize], data: &[u8]) -> Result<(), BcastError> {
        let messages: Vec<(Rank, &[u8])> = to_v.iter().map(|&v| (self.rank_of(v), data)).collect();
        Ok(self.t.send_all(BCAST, &messages)?)
    }

    /// Sends to one member while receiving from another (MPI_Sendrecv).
    fn send_recv(
        &self,
        to_v: usize,
        data: &[u8],
        from_v: usize,
        buf: &mut [u8],
    ) -> Result<(), BcastError> {
        let from = self.rank_of(from_v);
        let got = self
            .t
            .send_recv(BCAST, self.rank_of(to_v), data, from, buf)?;
        crate::check_length(self.t, from, buf.len(), got)
    }

    /// Sends to one member and receives from another without deadlock in a ring or a pairing:
    /// even virtual ranks send first, odd ones receive first.
    fn exchange(
        &self,
        to_v: usize,
        send: std::ops::Range<usize>,
        from_v: usize,
        recv: std::ops::Range<usize>,
        buf: &mut [u8],
        send_first: bool,
    ) -> Result<(), BcastError> {
        if send_first {
            self.send(to_v, &buf[send])?;
            self.recv(from_v, &mut buf[recv])
        } else {
            self.recv(from_v, &mut buf[recv])?;
            self.send(to_v, &buf[send])
        }
    }
}

/// The lowest set bit of `v` (0 for 0).
fn lowbit(v: usize) -> usize {
    v & v.wrapping_neg()
}

/// Broadcasts `buf` from `root` (a rank among `members`) to all of `members`; a rank outside
/// them returns at once.
pub(crate) fn run(
    t: &dyn Transport,
    members: &[Rank],
    root: Rank,
    buf: &mut [u8],
    algorithm: BaseAlgorithm,
) -> Result<(), BcastError> {
    let n = members.len();
    let (Some(me), Some(root)) = (
        members.iter().position(|&r| r == t.rank()),
        members.iter().position(|&r| r == root),
    ) else {
        return Ok(());
    };
    if n < 2 {
        return Ok(());
    }
    let m = Members {
        t,
        members,
        root,
        v: (me + n - root) % n,
    };
    match algorithm {
        BaseAlgorithm::Flat => flat(&m, buf),
        BaseAlgorithm::Chain => pipeline(&m, buf, buf.len().max(1)),
        BaseAlgorithm::Pipeline { segment } => {
            if segment == 0 {
                return Err(BcastError::ZeroSegment);
            }
            pipeline(&m, buf, segment)
        }
        BaseAlgorithm::Binary => binary(&m, buf),
        BaseAlgorithm::SplitBinary => split_binary(&m, buf),
        BaseAlgorithm::ScatterAllgather => scatter_allgather(&m, buf),
        BaseAlgorithm::Binomial => binomial(&m, buf),
        BaseAlgorithm::FlatNonBlocking => flat_non_blocking(&m, buf),
        BaseAlgorithm::PipelineNonBlocking { segment } => {
            if segment == 0 {
                return Err(BcastError::ZeroSegment);
            }
            pipeline_non_blocking(&m, buf, segment)
        }
        BaseAlgorithm::BinomialNonBlocking => binomial_non_blocking(&m, buf),
    }
}

fn flat_non_blocking(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    if m.v == 0 {
        let to: Vec<usize> = (1..m.n()).collect();
        m.send_all(&to, buf)
    } else {
        m.recv(0, buf)
    }
}

fn binomial_non_blocking(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    let (parent, children) = binomial_links(m.v, m.n());
    if let Some(p) = parent {
        m.recv(p, buf)?;
    }
    m.send_all(&children, buf)
}

/// A pipeline whose inner members pass segment k on while segment k + 1 comes in.
fn pipeline_non_blocking(
    m: &Members<'_>,
    buf: &mut [u8],
    segment: usize,
) -> Result<(), BcastError> {
    let len = buf.len();
    let segments = len.div_ceil(segment).max(1);
    let range = |s: usize| (s * segment).min(len)..((s + 1) * segment).min(len);
    let (first, last) = (m.v == 0, m.v + 1 == m.n());
    if first || last {
        // The ends only send or only receive: in order, as the blocking pipeline.
        return pipeline(m, buf, segment);
    }
    m.recv(m.v - 1, &mut buf[range(0)])?;
    for s in 0..segments - 1 {
        let (done, rest) = buf.split_at_mut(range(s + 1).start);
        let next = range(s + 1);
        let into = &mut rest[..next.end - next.start];
        m.send_recv(m.v + 1, &done[range(s)], m.v - 1, into)?;
    }
    m.send(m.v + 1, &buf[range(segments - 1)])
}

fn flat(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    if m.v == 0 {
        for w in 1..m.n() {
            m.send(w, buf)?;
        }
        Ok(())
    } else {
        m.recv(0, buf)
    }
}

/// A chain in segments (one segment, possibly empty, when the message fits in one).
fn pipeline(m: &Members<'_>, buf: &mut [u8], segment: usize) -> Result<(), BcastError> {
    let len = buf.len();
    let segments = len.div_ceil(segment).max(1);
    for s in 0..segments {
        let range = (s * segment).min(len)..((s + 1) * segment).min(len);
        if m.v > 0 {
            m.recv(m.v - 1, &mut buf[range.clone()])?;
        }
        if m.v + 1 < m.n() {
            m.send(m.v + 1, &buf[range])?;
        }
    }
    Ok(())
}

/// The binary heap tree over virtual ranks `0..n`, carrying `range` of the buffer.
fn binary_range(
    m: &Members<'_>,
    buf: &mut [u8],
    range: std::ops::Range<usize>,
) -> Result<(), BcastError> {
    if m.v > 0 {
        m.recv((m.v - 1) / 2, &mut buf[range.clone()])?;
    }
    for child in [2 * m.v + 1, 2 * m.v + 2] {
        if child < m.n() {
            m.send(child, &buf[range.clone()])?;
        }
    }
    Ok(())
}

fn binary(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    binary_range(m, buf, 0..buf.len())
}

/// Which subtree of the root's children a virtual rank is in: 1 (left) or 2 (right).
fn side(mut v: usize) -> usize {
    while v > 2 {
        v = (v - 1) / 2;
    }
    v
}

fn split_binary(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    let n = m.n();
    if n < 3 {
        return binary(m, buf);
    }
    let len = buf.len();
    let half = len.div_ceil(2);
    let (a, b) = (0..half, half..len);
    // Down the tree: the left subtree carries the first half, the right one the second.
    if m.v == 0 {
        m.send(1, &buf[a.clone()])?;
        m.send(2, &buf[b.clone()])?;
    } else {
        let mine = if side(m.v) == 1 { a.clone() } else { b.clone() };
        m.recv((m.v - 1) / 2, &mut buf[mine.clone()])?;
        for child in [2 * m.v + 1, 2 * m.v + 2] {
            if child < n {
                m.send(child, &buf[mine.clone()])?;
            }
        }
    }
    // The swap: the k-th member of the left subtree with the k-th of the right one; left
    // members without a partner (the left subtree is never smaller) get the second half from
    // the root.
    let left: Vec<usize> = (1..n).filter(|&v| side(v) == 1).collect();
    let right: Vec<usize> = (1..n).filter(|&v| side(v) == 2).collect();
    if m.v == 0 {
        for &v in &left[right.len()..] {
            m.send(v, &buf[b.clone()])?;
        }
        return Ok(());
    }
    if let Some(k) = left.iter().position(|&v| v == m.v) {
        match right.get(k) {
            Some(&partner) => m.exchange(partner, a, partner, b, buf, true),
            None => m.recv(0, &mut buf[b]),
        }
    } else {
        let k = right
            .iter()
            .position(|&v| v == m.v)
            .expect("every non-root member is in one subtree");
        m.exchange(left[k], b, left[k], a, buf, false)
    }
}

/// The binomial tree's parent and children of virtual rank `v` among `n`.
fn binomial_links(v: usize, n: usize) -> (Option<usize>, Vec<usize>) {
    let top = if v == 0 {
        n.next_power_of_two()
    } else {
        lowbit(v)
    };
    let parent = (v > 0).then(|| v - lowbit(v));
    let mut children = Vec::new();
    let mut mask = top >> 1;
    while mask > 0 {
        if v + mask < n {
            children.push(v + mask);
        }
        mask >>= 1;
    }
    (parent, children)
}

fn binomial(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    let (parent, children) = binomial_links(m.v, m.n());
    if let Some(p) = parent {
        m.recv(p, buf)?;
    }
    for c in children {
        m.send(c, buf)?;
    }
    Ok(())
}

fn scatter_allgather(m: &Members<'_>, buf: &mut [u8]) -> Result<(), BcastError> {
    let (n, len) = (m.n(), buf.len());
    // Piece c (for virtual rank c) is bytes [start(c), start(c + 1)).
    let start = |c: usize| (c as u128 * len as u128 / n as u128) as usize;
    let (parent, children) = binomial_links(m.v, n);
    // Scatter: each member receives the pieces of its binomial subtree.
    if let Some(p) = parent {
        let end = (m.v + lowbit(m.v)).min(n);
        m.recv(p, &mut buf[start(m.v)..start(end)])?;
    }
    for c in children {
        let end = (c + lowbit(c)).min(n);
        m.send(c, &buf[start(c)..start(end)])?;
    }
    // Allgather around the ring: in step s, pass on piece v - s, take piece v - s - 1.
    let (right, left) = ((m.v + 1) % n, (m.v + n - 1) % n);
    for s in 0..n - 1 {
        let out = (m.v + n - s) % n;
        let into = (m.v + 2 * n - s - 1) % n;
        m.exchange(
            right,
            start(out)..start(out + 1),
            left,
            start(into)..start(into + 1),
            buf,
            m.v.is_multiple_of(2),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in BaseAlgorithm::all(&[1, 8192, 3 << 20, 1000]) {
            assert_eq!(a.to_string().parse::<BaseAlgorithm>(), Ok(a), "{a}");
        }
        assert_eq!(
            "pipeline:64KiB".parse::<BaseAlgorithm>(),
            Ok(BaseAlgorithm::Pipeline { segment: 65536 })
        );
        assert_eq!(
            "pipeline:0".parse::<BaseAlgorithm>(),
            Err(AlgorithmError::ZeroSegment)
        );
        assert_eq!(
            "pipeline:x".parse::<BaseAlgorithm>(),
            Err(AlgorithmError::Segment { text: "x".into() })
        );
        assert!("tree"
            .parse::<BaseAlgorithm>()
            .unwrap_err()
            .to_string()
            .contains("binomial"));
    }

    #[test]
    fn binomial_tree_covers_every_rank_once() {
        for n in 1..40 {
            let mut parents = vec![0; n];
            for v in 0..n {
                let (parent, children) = binomial_links(v, n);
                assert_eq!(parent.is_none(), v == 0);
                for c in children {
                    assert_eq!(binomial_links(c, n).0, Some(v));
                    parents[c] += 1;
                }
            }
            assert!(parents[1..].iter().all(|&p| p == 1), "n = {n}");
        }
    }
}
