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
    if let Some(bad) = filter.split(',').find(|d| !valid_directive(d.trim())) {
        return Err(Error::Environment {
            var: super::options::LOG_ENV,
            value: filter.to_string(),
            reason: format!(
                "{bad:?} is not `level`, `target` or `target=level` (levels: off, error, warn, \
                 info, debug, trace)"
            ),
        });
    }
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(filter);
    let logger = builder.build();
    let level = logger.filter();
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(level);
    } else if level > log::max_level() {
        // The program's own logger decides what to print; let it see what was asked for.
        log::set_max_level(level);
    }
    Ok(())
}

fn is_level(s: &str) -> bool {
    ["off", "error", "warn", "info", "debug", "trace"]
        .iter()
        .any(|l| l.eq_ignore_ascii_case(s))
}

fn is_target(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '-')
}

/// One directive of the filter: `level`, `target` or `target=level`.
fn valid_directive(d: &str) -> bool {
    match d.split_once('=') {
        Some((target, level)) => is_target(target.trim()) && is_level(level.trim()),
        None => is_level(d) || is_target(d),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn directives() {
        for ok in [
            "debug",
            "kfdrt=trace",
            "kfd_emu::engine=debug",
            "kfdrt",
            "OFF",
        ] {
            assert!(super::valid_directive(ok), "{ok}");
        }
        for bad in ["", "=", "kfdrt=loud", "a b", "=debug"] {
            assert!(!super::valid_directive(bad), "{bad}");
        }
    }
}
