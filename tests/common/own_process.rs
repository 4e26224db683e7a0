//! Tests that need a process of their own: they fork, count the process's open files, set
//! environment variables other tests read, install the process's logger, or run under
//! `LD_PRELOAD`. Each such test re-runs this test executable filtered to itself (`--exact`),
//! and the child, which runs nothing else, runs the test's body. The suite stays one binary.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in a child to the name of the test it runs.
const CHILD_ENV: &str = "KFDRT_TEST_OWN_PROCESS";

/// How a test's own process is started.
pub struct OwnProcess {
    env: Vec<(&'static str, Option<OsString>)>,
    timeout: Duration,
}

impl Default for OwnProcess {
    fn default() -> OwnProcess {
        OwnProcess {
            env: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }
}

impl OwnProcess {
    /// Sets `var` in the child.
    pub fn env(mut self, var: &'static str, value: impl Into<OsString>) -> OwnProcess {
        self.env.push((var, Some(value.into())));
        self
    }

    /// Removes `var` from the child's environment.
    pub fn env_remove(mut self, var: &'static str) -> OwnProcess {
        self.env.push((var, None));
        self
    }

    /// How long the child may run before it is killed and the test fails (default 120 s).
    pub fn timeout(mut self, timeout: Duration) -> OwnProcess {
        self.timeout = timeout;
        self
    }

    /// Runs `body` in a child process that runs only `test` (its full name in this binary,
    /// `fork::a_forked_child_is_refused`): in the parent, starts the child and fails if it
    /// fails, hangs past the timeout, or does not run exactly that one test.
    pub fn run(self, test: &str, body: impl FnOnce()) {
        if std::env::var_os(CHILD_ENV).is_some_and(|t| t == test) {
            body();
            return;
        }
        let exe = std::env::current_exe().expect("the test executable");
        let mut cmd = Command::new(exe);
        cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, test)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (var, value) in self.env {
            match value {
                Some(v) => cmd.env(var, v),
                None => cmd.env_remove(var),
            };
        }
        let mut child = cmd.spawn().expect("start the child");
        // Read the pipes on threads so a chatty child cannot block on them, and bound the wait
        // so a deadlock fails the test instead of hanging the suite.
        let mut pipe_out = child.stdout.take().expect("stdout");
        let mut pipe_err = child.stderr.take().expect("stderr");
        let out_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe_out, &mut s);
            s
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe_err, &mut s);
            s
        });
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for the child") {
                break Some(s);
            }
            if start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        let Some(status) = status else {
            panic!(
                "{test}: the child hung for {:?} and was killed:\n{stdout}\n{stderr}",
                self.timeout
            );
        };
        // "1 passed" also catches a misspelt name, for which the child would run no test.
        assert!(
            status.success() && stdout.contains("test result: ok. 1 passed"),
            "{test}: the child failed ({status}):\n{stdout}\n{stderr}"
        );
    }
}

/// Runs `body` in a process of its own (see [`OwnProcess::run`]).
pub fn in_own_process(test: &str, body: impl FnOnce()) {
    OwnProcess::default().run(test, body);
}
