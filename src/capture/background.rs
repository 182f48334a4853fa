//! The writer's own thread: a single-threaded async runtime at lowered CPU priority.
//! Acknowledging a capture needs CPU at once; draining the spool only needs it eventually.
//! On its own thread the writer's CPU work (decoding records, counting tokens, encoding Bolt
//! messages) never sits in front of a request on the handlers' runtime, and when the machine
//! is busy the kernel runs the handlers and the spool's fsync thread first.

use std::future::Future;

use tokio::sync::oneshot;
use tracing::Instrument;

/// Niceness of the thread: below every default-priority thread, yet never starved.
const NICENESS: i32 = 10;

/// Runs the future `make` builds on a new thread named `name`, on a runtime of its own.
/// The receiver resolves to the future's output, or to an error if it panicked.
pub fn spawn<F, Fut>(name: &str, make: F) -> std::io::Result<oneshot::Receiver<Fut::Output>>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tx, rx) = oneshot::channel();
    let span = tracing::info_span!("job", job.name = %name);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            lower_priority();
            let _ = tx.send(runtime.block_on(make().instrument(span)));
        })?;
    Ok(rx)
}

/// Lowers the calling thread's CPU priority (Linux keeps a niceness per thread). Raising it
/// back would need privileges, which is why only a dedicated thread is lowered.
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
    async fn runs_on_its_own_lowered_thread_with_timers() {
        let done = spawn("cairn-test-bg", || async {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let name = std::thread::current().name().map(str::to_string);
            // SAFETY: getpriority only reads its integer arguments.
            #[cfg(target_os = "linux")]
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            #[cfg(not(target_os = "linux"))]
            let nice = NICENESS;
            (name, nice)
        })
        .unwrap();
        let (name, nice) = done.await.unwrap();
        assert_eq!(name.as_deref(), Some("cairn-test-bg"));
        assert!(nice >= NICENESS, "niceness {nice}");
    }

    #[tokio::test]
    async fn a_panic_is_reported_to_the_receiver() {
        let done = spawn("cairn-test-bg-panic", || async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
        })
        .unwrap();
        assert!(done.await.is_err());
    }
}
