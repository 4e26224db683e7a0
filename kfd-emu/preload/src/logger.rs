//! A small stderr logger for the interposer and the emulator inside it, configured by
//! `KFDRT_EMU_LOG` (`error`, `warn` (default), `info`, `debug`, `trace`, `off`).
//!
//! A preloaded library cannot assume the host program set up `log`; it installs this one if no
//! logger is installed yet.

use log::{LevelFilter, Log, Metadata, Record};

/// Environment variable choosing the log level.
pub const LOG_ENV: &str = "KFDRT_EMU_LOG";

struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let line = format!(
                "[{} {}] {}\n",
                record.level(),
                std::process::id(),
                record.args()
            );
            // One write per line, so lines of concurrent threads do not interleave; stderr is
            // unbuffered and this avoids std's stderr lock inside hooks.
            // SAFETY: writes an owned buffer to descriptor 2.
            unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// Installs the logger (once; later calls and an already installed logger are left alone).
pub(crate) fn init() {
    if log::set_logger(&LOGGER).is_ok() {
        let level = std::env::var(LOG_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<LevelFilter>().ok())
            .unwrap_or(LevelFilter::Warn);
        log::set_max_level(level);
    }
}
