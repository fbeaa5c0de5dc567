//! A switch hop with a delay and its jitter, for the emulated cluster (`scripts/testbed`) on
//! kernels without netem: a store-and-forward relay that moves every frame from one TAP
//! device to the other a set time later, give or take a jitter, in the order the frames came.
//!
//! [`DelayLine`] holds one direction's frames in flight; [`Tap`] is a TAP device; [`relay`]
//! joins two of them through two delay lines.

use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Why a hop could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HopError {
    /// A device name the kernel would not take.
    #[error("TAP device name {0:?}: 1 to 15 bytes, no NUL")]
    BadName(String),
    /// A TAP device that could not be attached.
    #[error("TAP device {name}: {source}")]
    Attach {
        /// The device.
        name: String,
        /// What the kernel said.
        source: io::Error,
    },
    /// Waiting for frames failed.
    #[error("waiting for frames: {0}")]
    Poll(io::Error),
}

/// The delay a hop gives each frame: `delay` give or take up to `jitter`, never below zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopDelay {
    /// The mean time a frame stays in the hop.
    pub delay: Duration,
    /// The most a frame's time differs from `delay` (uniformly either way).
    pub jitter: Duration,
}

/// One direction's frames in flight, each due at its time; jitter never reorders them.
#[derive(Debug)]
pub struct DelayLine {
    hop: HopDelay,
    frames: VecDeque<(Instant, Vec<u8>)>,
    last_due: Option<Instant>,
    rng: u64,
}

impl DelayLine {
    /// An empty line with its own seeded jitter.
    pub fn new(hop: HopDelay, seed: u64) -> Self {
        DelayLine {
            hop,
            frames: VecDeque::new(),
            last_due: None,
            // SplitMix64's increment keeps a zero seed from sticking at zero.
            rng: seed.wrapping_add(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    /// A uniform draw from [0, 1) (xorshift64*).
    fn uniform(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// When a frame that arrives at `now` is due: its delay and jitter, and no earlier than
    /// the frame before it.
    pub fn due(&mut self, now: Instant) -> Instant {
        let jitter = self.hop.jitter.as_secs_f64();
        let offset = if jitter > 0.0 {
            (2.0 * self.uniform() - 1.0) * jitter
        } else {
            0.0
        };
        let held = (self.hop.delay.as_secs_f64() + offset).max(0.0);
        let due = now + Duration::from_secs_f64(held);
        let due = self.last_due.map_or(due, |last| due.max(last));
        self.last_due = Some(due);
        due
    }

    /// Takes a frame that arrived at `now`; returns it back when it is due at once (nothing
    /// ahead of it and no delay), to be sent straight away.
    pub fn push(&mut self, now: Instant, frame: Vec<u8>) -> Option<Vec<u8>> {
        let due = self.due(now);
        if due <= now && self.frames.is_empty() {
            Some(frame)
        } else {
            self.frames.push_back((due, frame));
            None
        }
    }

    /// The next frame due by `now`, if any.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.frames.front().is_some_and(|(due, _)| *due <= now) {
            self.frames.pop_front().map(|(_, frame)| frame)
        } else {
            None
        }
    }

    /// When the next frame is due, if one is in flight.
    pub fn next_due(&self) -> Option<Instant> {
        self.frames.front().map(|(due, _)| *due)
    }
}

/// An attached TAP device (frames without packet information), non-blocking.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
}

/// `TUNSETIFF` and its flags (linux/if_tun.h), a stable kernel interface.
const TUNSETIFF: libc::c_ulong = 0x4004_54CA;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

impl Tap {
    /// Attaches to the existing TAP device `name` (made with `ip tuntap add mode tap`).
    pub fn attach(name: &str) -> Result<Tap, HopError> {
        let bad = || HopError::BadName(name.to_string());
        let cname = CString::new(name).map_err(|_| bad())?;
        let bytes = cname.as_bytes_with_nul();
        if bytes.len() > libc::IFNAMSIZ || bytes.len() < 2 {
            return Err(bad());
        }
        let attach_error = |source| HopError::Attach {
            name: name.to_string(),
            source,
        };
        // SAFETY: a NUL-terminated path literal; the descriptor is owned at once.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(attach_error(io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor no one else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // struct ifreq: the name, then the flags (the rest of its 40 bytes unused here).
        let mut ifreq = [0u8; 40];
        ifreq[..bytes.len()].copy_from_slice(bytes);
        ifreq[libc::IFNAMSIZ..libc::IFNAMSIZ + 2]
            .copy_from_slice(&(IFF_TAP | IFF_NO_PI).to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which `ifreq` is as large as.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, ifreq.as_mut_ptr()) } < 0 {
            return Err(attach_error(io::Error::last_os_error()));
        }
        Ok(Tap { fd })
    }

    /// Reads one frame into `buffer`; `None` when none is waiting.
    fn read(&self, buffer: &mut [u8]) -> Option<usize> {
        // SAFETY: `buffer` is valid for its length.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        (n > 0).then_some(n as usize)
    }

    /// Writes one frame; a full or downed device drops it, as a switch port would.
    fn write(&self, frame: &[u8]) {
        // SAFETY: `frame` is valid for its length.
        unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
    }
}

/// Wakes up within a microsecond of a deadline instead of the default 50.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a number of nanoseconds and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0) };
}

/// How late timed wake-ups come on this machine (a moving average), so that a hop asks to
/// wake that much before a frame is due: a virtual machine's timer can add tens of
/// microseconds to every sleep, more than the delays a hop is asked for.
#[derive(Debug, Default)]
pub struct Lateness {
    mean: Duration,
}

impl Lateness {
    /// The most a wake-up is brought forward.
    const MAX: Duration = Duration::from_micros(200);

    /// The time to ask to wake for something due at `due`.
    pub fn wake_for(&self, due: Instant) -> Instant {
        due.checked_sub(self.mean).unwrap_or(due)
    }

    /// Learns from a sleep that was to end at `asked` and ended at `woke`.
    pub fn learn(&mut self, asked: Instant, woke: Instant) {
        let late = woke.saturating_duration_since(asked).min(Self::MAX);
        // An average over about the last eight sleeps.
        self.mean = (self.mean * 7 + late) / 8;
    }

    /// The current estimate.
    pub fn mean(&self) -> Duration {
        self.mean
    }
}

/// Moves frames between `a` and `b` for ever, each held by its direction's delay line.
pub fn relay(a: &Tap, b: &Tap, hop: HopDelay, seed: u64) -> Result<(), HopError> {
    let taps = [a, b];
    let mut lines = [
        DelayLine::new(hop, seed),
        DelayLine::new(hop, seed ^ 0xA5A5),
    ];
    let mut lateness = Lateness::default();
    let mut buffer = vec![0u8; 65536];
    loop {
        let now = Instant::now();
        let mut due: Option<Instant> = None;
        for (from, line) in lines.iter_mut().enumerate() {
            while let Some(frame) = line.pop_due(now) {
                taps[1 - from].write(&frame);
            }
            if let Some(next) = line.next_due() {
                due = Some(due.map_or(next, |d| d.min(next)));
            }
        }
        let mut fds = taps.map(|t| libc::pollfd {
            fd: t.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        // Wake early by the usual lateness; what is left after waking early is polled out.
        let asked = due.map(|d| lateness.wake_for(d));
        let timeout = asked.map(|w| {
            let left = w.saturating_duration_since(now);
            libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            }
        });
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: two valid pollfds; the timeout, when given, lives across the call.
        let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
        let before = now;
        let now = Instant::now();
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(HopError::Poll(error));
        }
        if ready == 0 {
            // Only a real sleep tells how late wake-ups come.
            if let Some(w) = asked.filter(|w| *w > before) {
                lateness.learn(w, now);
            }
            continue;
        }
        for (from, fd) in fds.iter().enumerate() {
            if fd.revents & libc::POLLIN == 0 {
                continue;
            }
            while let Some(n) = taps[from].read(&mut buffer) {
                if let Some(frame) = lines[from].push(now, buffer[..n].to_vec()) {
                    taps[1 - from].write(&frame);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn without_delay_a_frame_passes_at_once() {
        let mut line = DelayLine::new(
            HopDelay {
                delay: us(0),
                jitter: us(0),
            },
            1,
        );
        let now = Instant::now();
        assert_eq!(line.push(now, vec![1, 2]), Some(vec![1, 2]));
        assert_eq!(line.next_due(), None);
    }

    #[test]
    fn a_frame_is_held_for_the_delay() {
        let mut line = DelayLine::new(
            HopDelay {
                delay: us(20),
                jitter: us(0),
            },
            1,
        );
        let now = Instant::now();
        assert_eq!(line.push(now, vec![7]), None);
        assert_eq!(line.next_due(), Some(now + us(20)));
        assert_eq!(line.pop_due(now + us(19)), None);
        assert_eq!(line.pop_due(now + us(20)), Some(vec![7]));
        assert_eq!(line.pop_due(now + us(40)), None);
    }

    #[test]
    fn jitter_spreads_the_delay_within_its_bounds_and_keeps_the_order() {
        let hop = HopDelay {
            delay: us(50),
            jitter: us(20),
        };
        let mut line = DelayLine::new(hop, 42);
        let start = Instant::now();
        let mut held = Vec::new();
        let mut previous = start;
        for i in 0..2000u64 {
            // Frames a millisecond apart: each one's own delay shows.
            let now = start + Duration::from_millis(i);
            let due = line.due(now);
            assert!(due >= previous, "frame {i} overtook the one before it");
            previous = due;
            held.push((due - now).as_secs_f64() * 1e6);
        }
        let min = held.iter().cloned().fold(f64::MAX, f64::min);
        let max = held.iter().cloned().fold(f64::MIN, f64::max);
        let mean = held.iter().sum::<f64>() / held.len() as f64;
        assert!((30.0..33.0).contains(&min), "min {min}");
        assert!((67.0..=70.0).contains(&max), "max {max}");
        assert!((48.0..52.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn a_burst_leaves_in_the_order_it_came() {
        let hop = HopDelay {
            delay: us(30),
            jitter: us(30),
        };
        let mut line = DelayLine::new(hop, 3);
        let now = Instant::now();
        let mut out: Vec<u8> = (0..50u8)
            .filter_map(|i| line.push(now, vec![i]))
            .map(|f| f[0])
            .collect();
        // Nothing is held past the longest delay.
        out.extend(std::iter::from_fn(|| line.pop_due(now + us(60))).map(|f| f[0]));
        assert_eq!(out, (0..50).collect::<Vec<u8>>());
        assert_eq!(line.next_due(), None);
    }

    #[test]
    fn wake_ups_come_earlier_by_how_late_they_have_been() {
        let mut lateness = Lateness::default();
        let start = Instant::now();
        assert_eq!(lateness.wake_for(start + us(100)), start + us(100));
        for k in 0..64 {
            let asked = start + Duration::from_millis(k);
            lateness.learn(asked, asked + us(24));
        }
        let mean = lateness.mean().as_secs_f64() * 1e6;
        assert!((23.0..=24.0).contains(&mean), "{mean}");
        // A wake-up far too late (a preempted hop) counts at most MAX.
        lateness.learn(start, start + Duration::from_secs(1));
        assert!(lateness.mean() < us(24 + 200 / 8 + 1));
    }

    #[test]
    fn names_the_kernel_would_refuse_are_refused_before_asking_it() {
        assert!(matches!(Tap::attach(""), Err(HopError::BadName(_))));
        assert!(matches!(
            Tap::attach("a-name-far-too-long"),
            Err(HopError::BadName(_))
        ));
        assert!(matches!(Tap::attach("ta\0p"), Err(HopError::BadName(_))));
    }
}
