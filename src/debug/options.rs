//! The debugging switches ([`DebugOptions`]) and the environment variables that set them: plain
//! configuration, fixed when a device opens, so it sits below the device that keeps it.

use crate::error::{Error, Result};
use std::path::PathBuf;
use std::time::Duration;

/// `KFDRT_LOG`: log filter, `level[,target=level]`.
pub const LOG_ENV: &str = "KFDRT_LOG";
/// `KFDRT_VALIDATE`: `1` checks packets before they are published.
pub const VALIDATE_ENV: &str = "KFDRT_VALIDATE";
/// `KFDRT_SERIALIZE`: `1` makes every submission wait for its completion.
pub const SERIALIZE_ENV: &str = "KFDRT_SERIALIZE";
/// `KFDRT_WAIT_TIMEOUT_MS`: bound on waits that have none, in milliseconds.
pub const WAIT_TIMEOUT_ENV: &str = "KFDRT_WAIT_TIMEOUT_MS";
/// `KFDRT_TRACE`: path of the Chrome trace-event JSON timeline.
pub const TRACE_ENV: &str = "KFDRT_TRACE";
/// `KFDRT_DEPGRAPH`: path of the DOT dependency graph.
pub const DEPGRAPH_ENV: &str = "KFDRT_DEPGRAPH";
/// `KFDRT_CAPTURE`: directory that records every submission.
pub const CAPTURE_ENV: &str = "KFDRT_CAPTURE";
/// `KFDRT_SUBSTITUTE`: `kernel_name=path.co`, several separated by `;`.
pub const SUBSTITUTE_ENV: &str = "KFDRT_SUBSTITUTE";
/// Environment variable that turns off the cheap per-dispatch checks kfdrt makes by default
/// (`1`): that every buffer a dispatch's [`crate::kernel_args::KernelArgs`] name is mapped on
/// the GPU that runs it, and that raw argument bytes cover the kernel's kernarg segment.
pub const UNCHECKED_ENV: &str = "KFDRT_UNCHECKED";

/// The debugging switches of an open device. Start from [`DebugOptions::default`] (all off) or
/// [`DebugOptions::from_env`] and change what you need.
///
/// ```
/// use kfdrt::DebugOptions;
/// let options = DebugOptions::default().validated().serialized();
/// assert!(options.validate && options.serialize);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DebugOptions {
    /// Log filter (`level[,target=level]`) to install when the program has no logger.
    pub log: Option<String>,
    /// Check packets before publishing them (`KFDRT_VALIDATE=1`).
    pub validate: bool,
    /// Wait for each submission's completion before returning it (`KFDRT_SERIALIZE=1`).
    pub serialize: bool,
    /// Bound on waits given no timeout (`KFDRT_WAIT_TIMEOUT_MS`).
    pub wait_timeout: Option<Duration>,
    /// Where to write the Chrome trace-event timeline (`KFDRT_TRACE`).
    pub trace: Option<PathBuf>,
    /// Where to write the DOT dependency graph (`KFDRT_DEPGRAPH`).
    pub depgraph: Option<PathBuf>,
    /// Directory to record submissions into (`KFDRT_CAPTURE`).
    pub capture: Option<PathBuf>,
    /// Kernels to dispatch from other code objects: `(kernel name, code object path)`.
    pub substitute: Vec<(String, PathBuf)>,
    /// Skip the cheap per-dispatch checks that are on by default (`KFDRT_UNCHECKED=1`): the
    /// buffers a dispatch's arguments name are mapped on its GPU, and raw argument bytes cover
    /// the kernel's kernarg segment (short ones are then zero-padded). Whether the kernel is
    /// loaded there is one comparison, always made.
    pub unchecked: bool,
}

impl DebugOptions {
    /// Reads every `KFDRT_*` debugging variable; unset or empty ones stay off. A value that does
    /// not parse is an [`Error::Environment`] naming the variable.
    pub fn from_env() -> Result<DebugOptions> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// [`DebugOptions::from_env`] over any variable lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<DebugOptions> {
        let get = |var: &str| get(var).filter(|v| !v.trim().is_empty());
        let flag = |var: &'static str| -> Result<bool> {
            match get(var) {
                None => Ok(false),
                Some(v) => match v.trim() {
                    "1" | "true" | "on" | "yes" => Ok(true),
                    "0" | "false" | "off" | "no" => Ok(false),
                    _ => Err(Error::Environment {
                        var,
                        value: v,
                        reason: "expected 1 or 0".into(),
                    }),
                },
            }
        };
        let wait_timeout = match get(WAIT_TIMEOUT_ENV) {
            None => None,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                _ => {
                    return Err(Error::Environment {
                        var: WAIT_TIMEOUT_ENV,
                        value: v,
                        reason: "expected a positive number of milliseconds".into(),
                    })
                }
            },
        };
        let substitute = match get(SUBSTITUTE_ENV) {
            None => Vec::new(),
            Some(v) => parse_substitutions(&v).map_err(|reason| Error::Environment {
                var: SUBSTITUTE_ENV,
                value: v.clone(),
                reason,
            })?,
        };
        Ok(DebugOptions {
            log: get(LOG_ENV),
            validate: flag(VALIDATE_ENV)?,
            serialize: flag(SERIALIZE_ENV)?,
            wait_timeout,
            trace: get(TRACE_ENV).map(PathBuf::from),
            depgraph: get(DEPGRAPH_ENV).map(PathBuf::from),
            capture: get(CAPTURE_ENV).map(PathBuf::from),
            substitute,
            unchecked: flag(UNCHECKED_ENV)?,
        })
    }

    /// Log with this filter (`level[,target=level]`).
    pub fn with_log(mut self, filter: impl Into<String>) -> Self {
        self.log = Some(filter.into());
        self
    }

    /// Check packets before publishing them.
    pub fn validated(mut self) -> Self {
        self.validate = true;
        self
    }

    /// Skip the cheap per-dispatch checks ([`DebugOptions::unchecked`]).
    pub fn unchecked(mut self) -> Self {
        self.unchecked = true;
        self
    }

    /// Wait for each submission's completion before returning it.
    pub fn serialized(mut self) -> Self {
        self.serialize = true;
        self
    }

    /// Bound waits given no timeout; they fail with a hang report.
    pub fn with_wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = Some(timeout);
        self
    }

    /// Write a Chrome trace-event timeline to `path` when the device drops.
    pub fn with_trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// Write the dependency graph as DOT to `path` when the device drops.
    pub fn with_depgraph(mut self, path: impl Into<PathBuf>) -> Self {
        self.depgraph = Some(path.into());
        self
    }

    /// Record every submission into directory `dir`.
    pub fn with_capture(mut self, dir: impl Into<PathBuf>) -> Self {
        self.capture = Some(dir.into());
        self
    }

    /// Dispatch kernel `name` from the code object at `path`.
    pub fn with_substitution(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.substitute.push((name.into(), path.into()));
        self
    }
}

impl DebugOptions {
    /// With `KFDRT_SERIALIZE`, how long a submission waits for its own completion before it
    /// returns: `Some(None)` waits as long as it takes (or `KFDRT_WAIT_TIMEOUT_MS`).
    pub(crate) fn serialize_wait(&self) -> Option<Option<std::time::Duration>> {
        // A capture records each dispatch's inputs as it finds them: nothing may run under it.
        (self.serialize || self.capture.is_some()).then_some(self.wait_timeout)
    }

    /// What the switches need when a device opens: the logger.
    pub(crate) fn apply_at_open(&self) -> Result<()> {
        if let Some(filter) = &self.log {
            super::log::install(filter)?;
        }
        Ok(())
    }
}

fn parse_substitutions(value: &str) -> std::result::Result<Vec<(String, PathBuf)>, String> {
    value
        .split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|entry| match entry.split_once('=') {
            Some((name, path)) if !name.trim().is_empty() && !path.trim().is_empty() => {
                Ok((name.trim().to_string(), PathBuf::from(path.trim())))
            }
            _ => Err(format!("{entry:?} is not kernel_name=path.co")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Result<DebugOptions> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        DebugOptions::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn unset_is_all_off() {
        assert_eq!(parse(&[]).unwrap(), DebugOptions::default());
        assert_eq!(
            parse(&[(VALIDATE_ENV, " ")]).unwrap(),
            DebugOptions::default()
        );
    }

    #[test]
    fn every_switch_parses() {
        let o = parse(&[
            (LOG_ENV, "debug,kfd_emu=trace"),
            (VALIDATE_ENV, "1"),
            (SERIALIZE_ENV, "true"),
            (WAIT_TIMEOUT_ENV, "250"),
            (TRACE_ENV, "/tmp/t.json"),
            (DEPGRAPH_ENV, "/tmp/g.dot"),
            (CAPTURE_ENV, "/tmp/cap"),
            (SUBSTITUTE_ENV, "a=/x/a.co; b = /y/b.co;"),
        ])
        .unwrap();
        assert_eq!(o.log.as_deref(), Some("debug,kfd_emu=trace"));
        assert!(o.validate && o.serialize);
        assert_eq!(o.wait_timeout, Some(Duration::from_millis(250)));
        assert_eq!(o.trace, Some(PathBuf::from("/tmp/t.json")));
        assert_eq!(o.depgraph, Some(PathBuf::from("/tmp/g.dot")));
        assert_eq!(o.capture, Some(PathBuf::from("/tmp/cap")));
        assert_eq!(
            o.substitute,
            vec![
                ("a".to_string(), PathBuf::from("/x/a.co")),
                ("b".to_string(), PathBuf::from("/y/b.co"))
            ]
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (var, value) in [
            (VALIDATE_ENV, "maybe"),
            (WAIT_TIMEOUT_ENV, "soon"),
            (WAIT_TIMEOUT_ENV, "0"),
            (SUBSTITUTE_ENV, "no_equals_sign"),
            (SUBSTITUTE_ENV, "=/x.co"),
        ] {
            match parse(&[(var, value)]) {
                Err(Error::Environment { var: v, .. }) => assert_eq!(v, var),
                other => panic!("{var}={value}: {other:?}"),
            }
        }
    }
}
