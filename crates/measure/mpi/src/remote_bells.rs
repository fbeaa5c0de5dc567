//! Wake-ups between ranks on different hosts: a small datagram after an untimed send, so that a
//! rank waiting for a peer on another host can sleep until woken instead of polling MPI.
//!
//! On a virtual machine every sleep and wake-up costs some tens of microseconds of CPU, so a
//! rank that polls MPI while it waits for a barrier round or its turn, however politely, uses
//! a share of a core that grows with the number of its wake-ups. Each rank here keeps a UDP
//! socket on its host's address (its host name's, else its first interface's) and a thread
//! blocked on it; a sender, after an untimed MPI send to a rank on another host, sends that
//! rank a datagram (the job's token and the sender's rank), and the thread rings the rank's
//! own bell, which wakes its futex sleep. A host's ranks count as ones that wake this rank once
//! a datagram from any of them has arrived (they send from the same address), and the ranks
//! of every host with a socket once one from any host has (datagrams pass between the hosts),
//! until a sleep for one of them runs out without its wake-up: its host then waits for a
//! datagram of its own. Where none pass (a firewall, hosts without an address of their own),
//! waits keep their sleeps that grow with the time waited. A lost datagram costs one
//! safety-net sleep.

use std::collections::HashMap;
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
    /// Which datagrams have arrived and which are expected.
    heard: Arc<Heard>,
    thread: Option<JoinHandle<()>>,
}

/// Per host of the job (told by its address), whether a datagram from one of its ranks has
/// arrived, and whether its ranks' wake-ups are doubted.
#[derive(Debug)]
struct Heard {
    /// Per world rank: its host's index, `None` when it has no socket or is on this host.
    host_of: Vec<Option<u32>>,
    /// Per host: a datagram from it has arrived.
    host: Vec<AtomicBool>,
    /// Per host: a sleep for one of its ranks ran out without the expected wake-up.
    doubted: Vec<AtomicBool>,
    /// A datagram from any host has arrived.
    any: AtomicBool,
    /// Per world rank: a datagram from it has arrived since [`Heard::take_rang`] last asked.
    rang: Vec<AtomicBool>,
}

impl Heard {
    /// Hosts told apart by the address (IPv4) of each rank's socket; 0 is no socket.
    fn new(addresses: &[u64]) -> Self {
        let mut hosts: HashMap<u64, u32> = HashMap::new();
        let host_of: Vec<Option<u32>> = addresses
            .iter()
            .map(|&a| {
                (a != 0).then(|| {
                    let n = hosts.len() as u32;
                    *hosts.entry(a >> 16).or_insert(n)
                })
            })
            .collect();
        let flags = || (0..hosts.len()).map(|_| AtomicBool::new(false)).collect();
        Heard {
            rang: (0..host_of.len()).map(|_| AtomicBool::new(false)).collect(),
            host_of,
            host: flags(),
            doubted: flags(),
            any: AtomicBool::new(false),
        }
    }

    /// Marks `rank`'s host heard; false when `rank` is none of the job's other hosts' ranks.
    fn mark(&self, rank: usize) -> bool {
        let Some(&Some(h)) = self.host_of.get(rank) else {
            return false;
        };
        self.rang[rank].store(true, Ordering::Relaxed);
        self.host[h as usize].store(true, Ordering::Relaxed);
        self.any.store(true, Ordering::Relaxed);
        true
    }

    /// Whether a datagram from `rank` has arrived since the last time this was asked.
    fn take_rang(&self, rank: usize) -> bool {
        self.rang
            .get(rank)
            .is_some_and(|r| r.swap(false, Ordering::Relaxed))
    }

    /// Whether `rank`'s wake-ups are expected.
    fn wakes(&self, rank: usize) -> bool {
        let Some(&Some(h)) = self.host_of.get(rank) else {
            return false;
        };
        let h = h as usize;
        self.host[h].load(Ordering::Relaxed)
            || (self.any.load(Ordering::Relaxed) && !self.doubted[h].load(Ordering::Relaxed))
    }

    /// Expects `rank`'s wake-ups no longer, unless its host has been heard.
    fn doubt(&self, rank: usize) {
        if let Some(&Some(h)) = self.host_of.get(rank) {
            self.doubted[h as usize].store(true, Ordering::Relaxed);
        }
    }
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
        let heard = Arc::new(Heard::new(&addresses));
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

    /// Whether `from`'s wake-ups reach this rank: one from its host has arrived, or one from
    /// another host and none from its host has been missed.
    pub fn heard(&self, from: Rank) -> bool {
        self.heard.wakes(from)
    }

    /// Whether `from` has rung since this was last asked.
    pub fn rang(&self, from: Rank) -> bool {
        self.heard.take_rang(from)
    }

    /// A sleep for `from`'s wake-up ran out without it: expect its host's no longer until one
    /// of them arrives.
    pub fn missed(&self, from: Rank) {
        self.heard.doubt(from);
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
fn listen(socket: &UdpSocket, token: u64, heard: &Heard, ring_me: impl Fn()) {
    let own = socket.local_addr().ok();
    let mut buf = [0u8; 64];
    while let Ok((n, source)) = socket.recv_from(&mut buf) {
        let Some(from) = read_datagram(&buf[..n], token) else {
            continue;
        };
        if from == STOP && Some(source) == own {
            return;
        }
        if usize::try_from(from).is_ok_and(|f| heard.mark(f)) {
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
        // Rank 0 on this host, 1 on one other, 2 and 3 on another.
        let a = |ip: [u8; 4], port| pack(SocketAddrV4::new(Ipv4Addr::from(ip), port));
        let heard = Arc::new(Heard::new(&[
            0,
            a([10, 0, 0, 1], 7000),
            a([10, 0, 0, 2], 7000),
            a([10, 0, 0, 2], 7001),
        ]));
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
        assert!(heard.host[1].load(Ordering::Relaxed));
        assert!(!heard.host[0].load(Ordering::Relaxed));
        // A stop from another socket is not obeyed; from its own, it is.
        peer.send_to(&datagram(9, STOP), own).unwrap();
        socket.send_to(&datagram(9, STOP), own).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn a_hosts_ranks_wake_once_it_is_heard_the_others_until_one_is_missed() {
        let a = |ip: [u8; 4], port| pack(SocketAddrV4::new(Ipv4Addr::from(ip), port));
        // Rank 0 on this host, 1 on one other, 2 and 3 on another, 4 with no socket.
        let heard = Heard::new(&[
            0,
            a([10, 0, 0, 1], 7000),
            a([10, 0, 0, 2], 7000),
            a([10, 0, 0, 2], 7001),
            0,
        ]);
        // Nothing heard yet: no wake-up is expected.
        assert!((0..5).all(|r| !heard.wakes(r)));
        assert!(!heard.mark(0) && !heard.mark(4) && !heard.mark(9));
        assert!((0..5).all(|r| !heard.wakes(r)));
        // Rank 2's datagram: its host's ranks wake this one, and so, expected, does rank 1.
        assert!(heard.mark(2));
        assert_eq!(
            (0..5).map(|r| heard.wakes(r)).collect::<Vec<_>>(),
            [false, true, true, true, false]
        );
        // A sleep for rank 1 ran out: its host is expected no longer, rank 3's still is.
        heard.doubt(1);
        heard.doubt(3);
        assert!(!heard.wakes(1) && heard.wakes(3) && heard.wakes(2));
        // Until rank 1's own datagram comes.
        assert!(heard.mark(1));
        assert!(heard.wakes(1));
        // Who rang is told once.
        assert!(heard.take_rang(1) && !heard.take_rang(1));
        assert!(heard.take_rang(2) && !heard.take_rang(3) && !heard.take_rang(0));
    }
}
