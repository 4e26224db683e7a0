//! `KFDRT_LOG`: logging for programs that installed no logger.
//!
//! kfdrt and kfd-emu log through the `log` facade: queue and memory lifecycle at `debug`,
//! every packet at `trace`, decoded. A program with its own logger sees that output its own
//! way. A program without one gets a stderr logger with the `KFDRT_LOG` filter
//! (`level[,target=level]`, `env_logger`'s syntax) when the first device opens.

use crate::error::{Error, Result};

/// Installs a stderr logger filtered by `filter`, unless the program already has a logger;
/// then only raises `log`'s maximum level if `filter` asks for more. A filter that does not
/// parse is an [`Error::Environment`].
pub(crate) fn install(filter: &str) -> Result<()> {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter);
    let logger = builder.build();
    let level = logger.filter();
    if level == log::LevelFilter::Off && !filter.trim().eq_ignore_ascii_case("off") {
        return Err(Error::Environment {
            var: super::LOG_ENV,
            value: filter.to_string(),
            reason: "expected a level (error, warn, info, debug, trace) or target=level pairs"
                .into(),
        });
    }
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(level);
    } else if level > log::max_level() {
        // The program's own logger decides what to print; let it see what was asked for.
        log::set_max_level(level);
    }
    Ok(())
}
