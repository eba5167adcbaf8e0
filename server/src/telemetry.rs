//! Logs: structured lines on stderr that can never take a request down, one line per error
//! with its cause chain, and database outages summarised instead of repeated per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use tidemark_store::{Fault, StoreError};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Structured logs on stderr: JSON in production, human-readable in development.
/// `RUST_LOG` overrides the default level (`info`).
///
/// A line that cannot be written (the log reader exited, stderr is `/dev/full` or on a full
/// disk) is dropped and counted (`tidemark_log_lines_dropped_total`): the formatting layer
/// would otherwise report the failure with `eprintln!`, which panics when stderr itself is
/// what failed, and the panic would unwind the request that logged.
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(LossyStderr)
        .log_internal_errors(false);
    // A second initialisation (tests) is harmless: keep the first subscriber.
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    install_panic_hook();
}

static LOG_LINES_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Log lines that could not be written since the process started.
pub fn log_lines_dropped() -> u64 {
    LOG_LINES_DROPPED.load(Ordering::Relaxed)
}

/// Standard error that never fails: what cannot be written is counted and dropped.
#[derive(Clone, Copy)]
struct LossyStderr;

impl<'a> MakeWriter<'a> for LossyStderr {
    type Writer = LossyStderr;
    fn make_writer(&'a self) -> Self::Writer {
        LossyStderr
    }
}

impl std::io::Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The formatting layer hands over one whole line per call.
        if std::io::stderr().write_all(buf).is_err() {
            LOG_LINES_DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// Panics are logged as one line (message and place), never with a backtrace: under
/// `RUST_BACKTRACE=1`, which containers often set, the default hook prints one per panic.
/// The request that panicked is answered by `http::panics`.
fn install_panic_hook() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        std::panic::set_hook(Box::new(|info| {
            tracing::error!(
                panic = panic_message(info.payload()),
                location = info.location().map(|l| l.to_string()).unwrap_or_default(),
                "panicked"
            );
        }));
    });
}

/// The text a panic was raised with, when it has one.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// The database [`Fault`] somewhere in an error's causes, if its cause is one.
pub fn fault_in(err: &anyhow::Error) -> Option<Fault> {
    err.chain().find_map(|cause| {
        cause
            .downcast_ref::<StoreError>()
            .and_then(StoreError::fault)
            .or_else(|| {
                cause
                    .downcast_ref::<tidemark_store::fault::SqlxError>()
                    .and_then(tidemark_store::fault::fault_of)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_found_anywhere_in_the_causes() {
        let err = anyhow::Error::new(StoreError::Closed).context("could not read the head");
        assert_eq!(fault_in(&err), Some(Fault::Unavailable));
        let bug = anyhow::Error::new(StoreError::Corrupt("bad")).context("x");
        assert_eq!(fault_in(&bug), None);
    }

    #[test]
    fn a_panics_message_is_its_text() {
        let payload: Box<dyn std::any::Any + Send> = Box::new(String::from("boom"));
        assert_eq!(panic_message(payload.as_ref()), "boom");
        let payload: Box<dyn std::any::Any + Send> = Box::new("static");
        assert_eq!(panic_message(payload.as_ref()), "static");
        let payload: Box<dyn std::any::Any + Send> = Box::new(3);
        assert_eq!(panic_message(payload.as_ref()), "(no message)");
    }
}
