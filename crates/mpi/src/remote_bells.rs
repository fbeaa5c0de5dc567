//! Wake-ups between ranks on different hosts: a small datagram after an untimed send, so that a
//! rank waiting for a peer on another host can sleep until woken instead of polling MPI.
//!
//! On a virtual machine every sleep and wake-up costs some tens of microseconds of CPU, so a
//! rank that polls MPI while it waits for a barrier round or its turn, however politely, uses
//! a share of a core that grows with the number of its wake-ups. Each rank here keeps a UDP
//! socket on its host's address (its host name's, else its first interface's) and a thread
//! blocked on it; a sender, after an untimed MPI send to a rank on another host, sends that
//! rank a datagram (the job's token and the sender's rank), and the thread rings the rank's
//! own bell, which wakes its futex sleep. A peer counts as one that wakes this rank only once
//! one of its datagrams has arrived, so that where datagrams cannot pass (a firewall, hosts
//! without an address of their own) waits keep their sleeps that grow with the time waited.
//! A lost datagram costs one safety-net sleep.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use lgate_topology::Rank;
use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};

/// A datagram: the job's token, then the sending rank (little-endian).
const DATAGRAM: usize = 16;
/// The sender of the datagram that stops this rank's thread.
const STOP: u64 = u64::MAX;

/// This rank's socket, its peers' addresses and which peers have woken it.
#[derive(Debug)]
pub struct RemoteBells {
    socket: Arc<UdpSocket>,
    token: u64,
    rank: u64,
    /// Per world rank: its address packed as (IPv4 << 16 | port), 0 when it has none or is on
    /// this host (its bell is a futex).
    addresses: Vec<u64>,
    /// Per world rank: whether a datagram from it has arrived.
    heard: Arc<Vec<AtomicBool>>,
    thread: Option<JoinHandle<()>>,
}

impl RemoteBells {
    /// Sets up the sockets of `world` (collective: every rank calls it, even one that takes
    /// no part, `enabled` false); `local` tells the ranks on this host, `ring_me` rings this
    /// rank's own bell. `None` on this rank when it has no socket; its peers then never wake
    /// it this way.
    pub fn open(
        world: &SimpleCommunicator,
        token: u64,
        enabled: bool,
        local: impl Fn(Rank) -> bool,
        ring_me: impl Fn() + Send + 'static,
    ) -> Option<RemoteBells> {
        let bound = host_address()
            .filter(|_| enabled)
            .and_then(|ip| UdpSocket::bind(SocketAddrV4::new(ip, 0)).ok());
        let packed = bound
            .as_ref()
            .and_then(|s| s.local_addr().ok())
            .map_or(0, |a| match a {
                SocketAddr::V4(v4) => pack(v4),
                SocketAddr::V6(_) => 0,
            });
        let mut addresses = vec![0u64; world.size() as usize];
        world.all_gather_into(&packed, &mut addresses[..]);
        let socket = Arc::new(bound?);
        socket.set_nonblocking(false).ok()?;
        let rank = world.rank() as u64;
        for (r, address) in addresses.iter_mut().enumerate() {
            if r as u64 == rank || local(r) {
                *address = 0;
            }
        }
        // A job on one host (or whose other hosts have no socket) needs no thread.
        if addresses.iter().all(|&a| a == 0) {
            return None;
        }
        let heard: Arc<Vec<AtomicBool>> = Arc::new(
            (0..addresses.len())
                .map(|_| AtomicBool::new(false))
                .collect(),
        );
        let thread = {
            let socket = Arc::clone(&socket);
            let heard = Arc::clone(&heard);
            std::thread::Builder::new()
                .name("lgate-bells".into())
                .spawn(move || listen(&socket, token, &heard, ring_me))
                .ok()?
        };
        Some(RemoteBells {
            socket,
            token,
            rank,
            addresses,
            heard,
            thread: Some(thread),
        })
    }

    /// Sends `to` a wake-up if it is on another host with a socket; never blocks for long,
    /// never fails (a lost wake-up costs the receiver one safety-net sleep).
    pub fn ring(&self, to: Rank) {
        if let Some(&packed) = self.addresses.get(to).filter(|&&p| p != 0) {
            let _ = self
                .socket
                .send_to(&datagram(self.token, self.rank), unpack(packed));
        }
    }

    /// Whether `from`'s wake-ups reach this rank (one has arrived).
    pub fn heard(&self, from: Rank) -> bool {
        self.heard
            .get(from)
            .is_some_and(|h| h.load(Ordering::Relaxed))
    }
}

impl Drop for RemoteBells {
    fn drop(&mut self) {
        // The thread stops at a datagram from this rank's own socket that says so.
        if let Ok(own) = self.socket.local_addr() {
            let _ = self.socket.send_to(&datagram(self.token, STOP), own);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread's loop: each datagram of this job marks its sender heard and rings the rank.
fn listen(socket: &UdpSocket, token: u64, heard: &[AtomicBool], ring_me: impl Fn()) {
    let own = socket.local_addr().ok();
    let mut buf = [0u8; 64];
    while let Ok((n, source)) = socket.recv_from(&mut buf) {
        let Some(from) = read_datagram(&buf[..n], token) else {
            continue;
        };
        if from == STOP && Some(source) == own {
            return;
        }
        if let Some(h) = usize::try_from(from).ok().and_then(|f| heard.get(f)) {
            h.store(true, Ordering::Relaxed);
            ring_me();
        }
    }
}

fn datagram(token: u64, from: u64) -> [u8; DATAGRAM] {
    let mut d = [0u8; DATAGRAM];
    d[..8].copy_from_slice(&token.to_le_bytes());
    d[8..].copy_from_slice(&from.to_le_bytes());
    d
}

/// The sender of a datagram of this job, if it is one.
fn read_datagram(d: &[u8], token: u64) -> Option<u64> {
    if d.len() != DATAGRAM || d[..8] != token.to_le_bytes() {
        return None;
    }
    Some(u64::from_le_bytes(d[8..].try_into().ok()?))
}

fn pack(a: SocketAddrV4) -> u64 {
    (u64::from(u32::from(*a.ip())) << 16) | u64::from(a.port())
}

fn unpack(p: u64) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from((p >> 16) as u32), (p & 0xFFFF) as u16)
}

/// This host's address as its peers reach it: its host name's first IPv4 address that is not
/// a loopback one, else the first such address of an interface that is up.
fn host_address() -> Option<Ipv4Addr> {
    let usable = |ip: &Ipv4Addr| !ip.is_loopback() && !ip.is_unspecified();
    let name = host_name()?;
    let by_name = (name.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .into_iter()
        .flatten()
        .find_map(|a| match a.ip() {
            IpAddr::V4(ip) if usable(&ip) => Some(ip),
            _ => None,
        });
    by_name.or_else(|| interface_addresses().into_iter().find(usable))
}

fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for its length; gethostname NUL-terminates within it on success.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0)?;
    String::from_utf8(buf[..end].to_vec()).ok()
}

/// The IPv4 addresses of the interfaces that are up.
fn interface_addresses() -> Vec<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut cursor = list;
    while !cursor.is_null() {
        // SAFETY: a node of the list getifaddrs returned, valid until freeifaddrs.
        let entry = unsafe { &*cursor };
        let up = entry.ifa_flags & libc::IFF_UP as u32 != 0;
        if up && !entry.ifa_addr.is_null() {
            // SAFETY: a non-null address whose family says how to read it.
            let family = unsafe { (*entry.ifa_addr).sa_family };
            if i32::from(family) == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*entry.ifa_addr.cast::<libc::sockaddr_in>() };
                found.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: the list getifaddrs made, freed once.
    unsafe { libc::freeifaddrs(list) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_names_its_job_and_sender() {
        let d = datagram(0xDEAD_BEEF, 42);
        assert_eq!(read_datagram(&d, 0xDEAD_BEEF), Some(42));
        // Another job's, or anything else, is not a wake-up.
        assert_eq!(read_datagram(&d, 7), None);
        assert_eq!(read_datagram(&d[..15], 0xDEAD_BEEF), None);
        assert_eq!(read_datagram(b"hello, world....", 0xDEAD_BEEF), None);
    }

    #[test]
    fn addresses_pack_into_one_word_and_back() {
        let a = SocketAddrV4::new(Ipv4Addr::new(198, 18, 3, 7), 40123);
        assert_eq!(unpack(pack(a)), a);
        assert_ne!(pack(a), 0);
    }

    #[test]
    fn a_datagram_wakes_the_listener_and_marks_its_sender() {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        let heard: Arc<Vec<AtomicBool>> =
            Arc::new((0..4).map(|_| AtomicBool::new(false)).collect());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = {
            let (socket, heard) = (Arc::clone(&socket), Arc::clone(&heard));
            std::thread::spawn(move || listen(&socket, 9, &heard, move || tx.send(()).unwrap()))
        };
        let own = socket.local_addr().unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.send_to(&datagram(8, 1), own).unwrap(); // another job's: ignored
        peer.send_to(&datagram(9, 2), own).unwrap();
        rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
        assert!(heard[2].load(Ordering::Relaxed));
        assert!(!heard[1].load(Ordering::Relaxed));
        // A stop from another socket is not obeyed; from its own, it is.
        peer.send_to(&datagram(9, STOP), own).unwrap();
        socket.send_to(&datagram(9, STOP), own).unwrap();
        thread.join().unwrap();
    }
}
