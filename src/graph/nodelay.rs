//! Nagle's algorithm off on the Bolt connections.
//!
//! The driver writes a Bolt message larger than its 8 KiB write buffer in two `write` calls
//! (the chunk header, then the chunk) and leaves `TCP_NODELAY` unset. With Nagle's algorithm
//! on, the second write waits for the ACK of the first, and the server delays that ACK by up
//! to 40 ms: every statement with a sizeable parameter (a capture batch, a context's list of
//! paths) stalled for 40 ms on an otherwise 2 ms query. The driver does not expose its
//! sockets, so the store lists the process's open descriptors, at most once per [`EVERY`],
//! and sets `TCP_NODELAY` on connected TCP sockets whose peer is the Bolt port. A connection
//! the pool opens is fixed by the sweep after the statement that opened it.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// Least time between two sweeps.
pub const EVERY: Duration = Duration::from_millis(50);

/// Rate-limited sweeps for one Bolt port.
#[derive(Debug)]
pub struct Sweeper {
    port: u16,
    epoch: Instant,
    /// Milliseconds after `epoch` of the last sweep, plus one (0 = never).
    last: AtomicU64,
}

impl Sweeper {
    /// Sweeps for the port of a `bolt://`, `neo4j://` (or `+s` / `+ssc`) URI; 7687 when it
    /// names none.
    pub fn for_uri(uri: &str) -> Self {
        let port = uri
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| u.port_u16())
            .unwrap_or(7687);
        Self {
            port,
            epoch: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    /// Sweeps unless another sweep ran less than [`EVERY`] ago.
    pub fn sweep_if_due(&self) {
        let now = self.epoch.elapsed().as_millis() as u64 + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < EVERY.as_millis() as u64 {
            return;
        }
        if self
            .last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let fixed = sweep(self.port);
        if fixed > 0 {
            metrics::counter!("cairn_neo4j_nodelay_sockets_total").increment(fixed as u64);
            tracing::debug!(sockets = fixed, "TCP_NODELAY set on new Neo4j connections");
        }
    }
}

/// Sets `TCP_NODELAY` on every connected TCP socket of this process whose peer port is
/// `port` and that does not have it yet; returns how many it changed.
#[cfg(unix)]
pub fn sweep(port: u16) -> usize {
    use std::os::fd::RawFd;
    let listing = std::fs::read_dir("/proc/self/fd").or_else(|_| std::fs::read_dir("/dev/fd"));
    let Ok(listing) = listing else {
        return 0;
    };
    // Collected first so that the listing's own descriptor is closed before any is touched.
    let fds: Vec<RawFd> = listing
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.into_iter().filter(|&fd| set_on_bolt(fd, port)).count()
}

#[cfg(not(unix))]
pub fn sweep(_port: u16) -> usize {
    0
}

#[cfg(unix)]
fn set_on_bolt(fd: std::os::fd::RawFd, port: u16) -> bool {
    // SAFETY: the descriptor was open when listed and is only borrowed for three socket
    // option calls. Should another thread close it meanwhile, they fail with EBADF; should
    // the number be reused at once, the peer-port check runs on the new descriptor before
    // anything is changed, and the one option set is harmless on any TCP socket.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let socket = socket2::SockRef::from(&fd);
    let Ok(peer) = socket.peer_addr() else {
        return false;
    };
    if peer.as_socket().map(|a| a.port()) != Some(port) {
        return false;
    }
    matches!(socket.tcp_nodelay(), Ok(false)) && socket.set_tcp_nodelay(true).is_ok()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sets_nodelay_only_on_sockets_to_the_port() {
        let bolt = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = bolt.local_addr().unwrap().port();
        let to_bolt = TcpStream::connect(bolt.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_bolt.nodelay().unwrap());

        assert!(sweep(port) >= 1);
        assert!(to_bolt.nodelay().unwrap());
        assert!(!to_other.nodelay().unwrap());
        assert_eq!(sweep(port), 0, "a socket already set is not counted again");
    }

    #[test]
    fn the_port_comes_from_the_uri() {
        assert_eq!(Sweeper::for_uri("bolt://db.internal:7699").port, 7699);
        assert_eq!(Sweeper::for_uri("neo4j+s://db.internal").port, 7687);
        assert_eq!(Sweeper::for_uri("not a uri").port, 7687);
    }
}
