//! One thread at lowered CPU priority for the writer's own CPU work: decoding spooled records
//! and counting their tokens. Acknowledging a capture needs CPU at once; draining the spool
//! only needs it eventually, so when the machine is busy the kernel runs the request handlers
//! and the spool's fsync thread first.

use std::sync::mpsc;

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// Handle to the thread; the thread ends when the last handle is dropped.
pub struct Background {
    jobs: mpsc::Sender<Job>,
}

/// Niceness of the thread: below every default-priority thread, yet never starved.
const NICENESS: i32 = 10;

impl Background {
    pub fn start(name: &str) -> std::io::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                lower_priority();
                while let Ok(job) = rx.recv() {
                    job();
                }
            })?;
        Ok(Self { jobs })
    }

    /// Queues `f` on the thread without waiting for it.
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) {
        self.jobs
            .send(Box::new(f))
            .expect("the background thread outlives its handles");
    }

    /// Runs `f` on the thread and waits for its result.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .expect("the background thread outlives its handles");
        rx.await.expect("background jobs do not panic")
    }
}

/// Lowers the calling thread's CPU priority (Linux keeps a niceness per thread). Raising it
/// back would need privileges, which is why only this dedicated thread is lowered.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority only reads its integer arguments; who = 0 is the calling thread.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS) };
        if rc != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not lower the capture writer's CPU priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_in_order_on_a_lowered_thread() {
        let bg = Background::start("cairn-test-bg").unwrap();
        let first = bg.run(|| 1 + 1).await;
        let name = bg
            .run(|| std::thread::current().name().map(str::to_string))
            .await;
        assert_eq!(first, 2);
        assert_eq!(name.as_deref(), Some("cairn-test-bg"));
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpriority only reads its integer arguments.
            let nice = bg
                .run(|| unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) })
                .await;
            assert!(nice >= NICENESS, "niceness {nice}");
        }
    }
}
