//! The CPU time a stretch of requests costs, by this process (cairn served in it, and the
//! benchmark's client) and by the local Neo4j (the pid `scripts/neo4j-local` records), read
//! from `/proc/<pid>/stat`. On two shared cores a request's wall time moves with whatever
//! else runs; the work it costs does not, so a change that saves work shows here first.

use std::path::Path;

/// Where the CPU time of this process and of Neo4j is read.
pub struct Meter {
    neo4j: Option<u32>,
    /// Clock ticks per second of `/proc`'s figures.
    ticks: f64,
}

/// CPU milliseconds spent so far, each `None` when it cannot be read.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    own: Option<f64>,
    neo4j: Option<f64>,
}

impl Meter {
    /// A meter for this process and the Neo4j whose pid is in `pid_file` (none when the file
    /// is missing or names no running process: a remote Neo4j is not measured).
    pub fn new(pid_file: &Path) -> Self {
        let neo4j = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|pid| Path::new(&format!("/proc/{pid}/stat")).exists());
        // SAFETY: sysconf only reads a configuration value.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Meter {
            neo4j,
            ticks: if ticks > 0 { ticks as f64 } else { 100.0 },
        }
    }

    pub fn read(&self) -> Reading {
        let ms = |stat: &str| cpu_ticks(stat).map(|t| t as f64 * 1000.0 / self.ticks);
        Reading {
            own: ms("/proc/self/stat"),
            neo4j: self.neo4j.and_then(|pid| ms(&format!("/proc/{pid}/stat"))),
        }
    }
}

impl Reading {
    /// The share of one core Neo4j used between `self` and the `later` reading, `wall` apart
    /// (`None` when Neo4j's time is not read).
    pub fn neo4j_cores(&self, later: &Reading, wall: std::time::Duration) -> Option<f64> {
        let secs = wall.as_secs_f64();
        (secs > 0.0).then_some(())?;
        Some((later.neo4j? - self.neo4j?) / 1000.0 / secs)
    }

    /// Milliseconds per request between `self` and the `later` reading, over `requests`:
    /// `(this process, Neo4j)`.
    pub fn per_request(&self, later: &Reading, requests: usize) -> (Option<f64>, Option<f64>) {
        let n = requests.max(1) as f64;
        let per = |a: Option<f64>, b: Option<f64>| Some((b? - a?) / n);
        (per(self.own, later.own), per(self.neo4j, later.neo4j))
    }
}

/// User plus system clock ticks of a `/proc/<pid>/stat` file (fields 14 and 15; the command
/// name before them is in parentheses and may hold spaces).
fn cpu_ticks(stat_file: &str) -> Option<u64> {
    parse_ticks(&std::fs::read_to_string(stat_file).ok()?)
}

fn parse_ticks(stat: &str) -> Option<u64> {
    let after_name = stat.rsplit_once(')')?.1;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_user_plus_system_whatever_the_command_name() {
        let stat = "4242 (a (b) c) S 1 2 3 0 -1 4194560 10 0 0 0 250 40 0 0 20 0 9 0 1 2 3";
        assert_eq!(parse_ticks(stat), Some(290));
        assert_eq!(parse_ticks("4242 (x) S 1"), None);
        assert!(cpu_ticks("/proc/self/stat").is_some());
    }

    #[test]
    fn a_missing_pid_file_measures_this_process_alone() {
        let m = Meter::new(Path::new("/nonexistent/neo4j.pid"));
        let r = m.read();
        assert!(r.own.is_some());
        assert!(r.neo4j.is_none());
        let (own, neo4j) = r.per_request(&m.read(), 10);
        assert!(own.unwrap() >= 0.0);
        assert_eq!(neo4j, None);
        assert_eq!(
            r.neo4j_cores(&m.read(), std::time::Duration::from_secs(1)),
            None
        );
    }

    #[test]
    fn neo4j_s_share_of_a_core_is_its_time_over_the_wall_time() {
        let at = |ms| Reading {
            own: None,
            neo4j: Some(ms),
        };
        let ten = std::time::Duration::from_secs(10);
        assert_eq!(at(1_000.0).neo4j_cores(&at(6_000.0), ten), Some(0.5));
        assert_eq!(at(0.0).neo4j_cores(&at(20_000.0), ten), Some(2.0));
        assert_eq!(
            at(0.0).neo4j_cores(&at(5.0), std::time::Duration::ZERO),
            None
        );
    }
}
