//! Failed sign-ins per client address: after `limit` failures within `window`, the address is
//! refused every sign-in (429 with `Retry-After`) until its window ends, so a key cannot be
//! guessed at request speed. Counted in this process only (each replica counts its own), by
//! the connection's peer address: headers a client writes itself are not trusted for it.
//! Successful sign-ins neither count nor clear the count.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses remembered before expired windows are swept out.
const SWEEP_AT: usize = 10_000;

/// The failed sign-ins of each address in its current window.
pub struct SignInThrottle {
    limit: u32,
    window: Duration,
    failures: Mutex<HashMap<IpAddr, Window>>,
}

#[derive(Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl SignInThrottle {
    /// `limit` failed sign-ins per address per `window` (0: no limit).
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Seconds `addr` must wait before signing in again, if it used up its failures.
    pub fn blocked(&self, addr: IpAddr) -> Option<u64> {
        self.blocked_at(addr, Instant::now())
    }

    /// Counts a failed sign-in of `addr`.
    pub fn failed(&self, addr: IpAddr) {
        self.failed_at(addr, Instant::now());
    }

    fn blocked_at(&self, addr: IpAddr, now: Instant) -> Option<u64> {
        if self.limit == 0 {
            return None;
        }
        let map = self.failures.lock().expect("sign-in throttle lock");
        let w = map.get(&addr)?;
        let left = self.window.checked_sub(now.duration_since(w.started))?;
        (w.failures >= self.limit && !left.is_zero()).then(|| left.as_secs_f64().ceil() as u64)
    }

    fn failed_at(&self, addr: IpAddr, now: Instant) {
        if self.limit == 0 {
            return;
        }
        let mut map = self.failures.lock().expect("sign-in throttle lock");
        if map.len() >= SWEEP_AT {
            map.retain(|_, w| now.duration_since(w.started) < self.window);
        }
        let w = map.entry(addr).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now.duration_since(w.started) >= self.window {
            *w = Window {
                started: now,
                failures: 0,
            };
        }
        w.failures = w.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_failures_until_its_window_ends() {
        let t = SignInThrottle::new(3, Duration::from_secs(60));
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let start = Instant::now();
        for _ in 0..2 {
            t.failed_at(a, start);
        }
        assert_eq!(t.blocked_at(a, start), None, "two failures are allowed");
        t.failed_at(a, start);
        assert_eq!(
            t.blocked_at(a, start + Duration::from_millis(500)),
            Some(60)
        );
        assert_eq!(t.blocked_at(a, start + Duration::from_secs(45)), Some(15));
        assert_eq!(t.blocked_at(b, start), None, "another address is not held");
        assert_eq!(t.blocked_at(a, start + Duration::from_secs(60)), None);
        // A new window starts from zero.
        t.failed_at(a, start + Duration::from_secs(61));
        assert_eq!(t.blocked_at(a, start + Duration::from_secs(61)), None);
    }

    #[test]
    fn zero_turns_it_off() {
        let t = SignInThrottle::new(0, Duration::from_secs(60));
        let a: IpAddr = "::1".parse().unwrap();
        for _ in 0..100 {
            t.failed(a);
        }
        assert_eq!(t.blocked(a), None);
    }
}
