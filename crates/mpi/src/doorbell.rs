//! Wake-ups between ranks on the same host, so that a rank waiting for a message can sleep
//! until its peer has sent it instead of polling MPI.
//!
//! Each rank binds a Unix datagram socket in the abstract namespace, named by a token that
//! world rank 0 draws for the job and by the rank. After an untimed send to a rank on the same
//! host, the sender writes one byte to that rank's socket; the waiting rank sleeps in `ppoll`
//! on its socket and wakes at once. MPI has no such wait: a blocking MPI call spins (or yields
//! in a loop), which is what a waiting rank must not do when ranks outnumber cores. Ranks on
//! other hosts do not share cores with this one, so they need no bell. Linux only; elsewhere,
//! or when a socket cannot be made, waits fall back to sleeps that grow with the time waited.

use std::time::Duration;

use lgate_topology::Rank;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

/// This rank's bell and the ranks on its host that can ring it.
#[derive(Debug)]
pub struct Doorbells {
    #[cfg(target_os = "linux")]
    socket: std::os::fd::OwnedFd,
    token: u64,
    /// Per world rank: on this host and with a working bell.
    local: Vec<bool>,
}

impl Doorbells {
    /// Sets up the bells of `world`; every rank must call this (it is collective). `None` on
    /// this rank when its bell could not be made; its waits then fall back to polling.
    pub fn open(world: &SimpleCommunicator) -> Option<Doorbells> {
        let rank = world.rank();
        let mut token = [0u64];
        if rank == 0 {
            token[0] = draw_token();
        }
        world.process_at_rank(0).broadcast_into(&mut token[..]);
        let token = token[0];
        let socket = bind(token, rank as Rank);
        let host = world.split_shared(0);
        let mine = [rank, i32::from(socket.is_some())];
        let mut all = vec![0i32; 2 * host.size() as usize];
        host.all_gather_into(&mine[..], &mut all[..]);
        let mut local = vec![false; world.size() as usize];
        for pair in all.chunks_exact(2) {
            if pair[1] == 1 && pair[0] != rank {
                local[pair[0] as usize] = true;
            }
        }
        Some(Doorbells {
            #[cfg(target_os = "linux")]
            socket: socket?,
            token,
            local,
        })
    }

    /// Whether `rank` is on this host and can ring this rank's bell (and this rank its).
    pub fn is_local(&self, rank: Rank) -> bool {
        self.local.get(rank).copied().unwrap_or(false)
    }

    /// Rings `to`'s bell if it is on this host; never blocks, never fails (a lost ring only
    /// makes `to` notice later).
    pub fn ring(&self, to: Rank) {
        if !self.is_local(to) {
            return;
        }
        #[cfg(target_os = "linux")]
        linux::send_byte(&self.socket, &address(self.token, to));
    }

    /// Sleeps for `duration` or until this rank's bell rings, then clears it; true when it
    /// rang.
    pub fn sleep(&self, duration: Duration) -> bool {
        #[cfg(target_os = "linux")]
        return linux::wait_and_clear(&self.socket, duration);
        #[cfg(not(target_os = "linux"))]
        {
            std::thread::sleep(duration);
            false
        }
    }
}

/// A job-unique number: the clock and the process id of world rank 0.
fn draw_token() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// The abstract socket name of `rank`'s bell in the job `token`.
fn address(token: u64, rank: Rank) -> Vec<u8> {
    format!("lgate-plogp/{token:016x}/{rank}").into_bytes()
}

#[cfg(target_os = "linux")]
fn bind(token: u64, rank: Rank) -> Option<std::os::fd::OwnedFd> {
    linux::bind(&address(token, rank))
}

#[cfg(not(target_os = "linux"))]
fn bind(_token: u64, _rank: Rank) -> Option<()> {
    None
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    /// `sockaddr_un` for an abstract name (a leading NUL, no trailing one) and its length.
    fn sockaddr(name: &[u8]) -> Option<(libc::sockaddr_un, libc::socklen_t)> {
        // SAFETY: an all-zero sockaddr_un is a valid value of this plain C struct.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        if name.len() + 1 > addr.sun_path.len() {
            return None;
        }
        for (dst, &src) in addr.sun_path[1..].iter_mut().zip(name) {
            *dst = src as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
        Some((addr, len as libc::socklen_t))
    }

    pub(super) fn bind(name: &[u8]) -> Option<OwnedFd> {
        let (addr, len) = sockaddr(name)?;
        // SAFETY: plain socket creation; the descriptor is owned right away.
        let fd = unsafe {
            libc::socket(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
        let bound = unsafe {
            libc::bind(
                socket.as_raw_fd(),
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            )
        };
        (bound == 0).then_some(socket)
    }

    pub(super) fn send_byte(socket: &OwnedFd, name: &[u8]) {
        let Some((addr, len)) = sockaddr(name) else {
            return;
        };
        // SAFETY: one byte from a live buffer to a valid address; errors (a full queue, a
        // peer gone) are ignored on purpose.
        unsafe {
            libc::sendto(
                socket.as_raw_fd(),
                [1u8].as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT,
                (&addr as *const libc::sockaddr_un).cast(),
                len,
            );
        }
    }

    pub(super) fn wait_and_clear(socket: &OwnedFd, duration: Duration) -> bool {
        let mut poll = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = libc::timespec {
            tv_sec: duration.as_secs() as libc::time_t,
            tv_nsec: duration.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timeout, no signal mask change.
        let ready = unsafe { libc::ppoll(&mut poll, 1, &timeout, std::ptr::null()) };
        if ready > 0 {
            let mut buf = [0u8; 64];
            // SAFETY: reads into a live buffer of its own length; non-blocking socket.
            while unsafe { libc::recv(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) }
                > 0
            {}
        }
        ready > 0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_ring_wakes_a_sleeper_and_is_cleared() {
        let token = draw_token();
        let a = linux::bind(&address(token, 0)).unwrap();
        let b = linux::bind(&address(token, 1)).unwrap();
        linux::send_byte(&a, &address(token, 1));
        linux::send_byte(&a, &address(token, 1));
        let start = Instant::now();
        assert!(linux::wait_and_clear(&b, Duration::from_secs(20)));
        // Woken by the pending rings, not by the 20 s timeout (a margin no scheduler reaches).
        assert!(start.elapsed() < Duration::from_secs(10));
        // Both rings were cleared: the next sleep lasts its whole (short) duration.
        let start = Instant::now();
        assert!(!linux::wait_and_clear(&b, Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        // The same name cannot be bound twice, so two jobs never share a bell.
        assert!(linux::bind(&address(token, 1)).is_none());
    }
}
