//! Child processes for tests: spawn with pipes, run with a given stdin, and talk to a child
//! that answers one JSON line per request line (`codemode session`, a line-protocol server).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use serde_json::Value;

/// Spawns `command` with the given stdin, stdout and stderr (`Stdio::piped()`, `Stdio::null()`,
/// a file such as a terminal's slave side, …). Panics (failing the test) when it cannot start.
pub fn spawn_with(
    command: &mut Command,
    stdin: impl Into<Stdio>,
    stdout: impl Into<Stdio>,
    stderr: impl Into<Stdio>,
) -> Child {
    command
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"))
}

/// Spawns `command` with stdin, stdout and stderr piped ([`spawn_with`]).
pub fn spawn_piped(command: &mut Command) -> Child {
    spawn_with(command, Stdio::piped(), Stdio::piped(), Stdio::piped())
}

/// Runs `command` with stdin, stdout and stderr piped: writes `stdin` (any bytes, empty for
/// none), closes it, and waits for the output.
pub fn run_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    let mut child = spawn_piped(command);
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin)
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A child that reads one request per line on stdin and answers one JSON line per request on
/// stdout (stderr is whatever the command set up; [`LineChild::spawn`] leaves it as configured).
pub struct LineChild {
    /// The child, for its pid, `kill` and `wait`.
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl LineChild {
    /// Spawns `command` with stdin and stdout piped (stderr as the command has it, inherited by
    /// default).
    pub fn spawn(command: &mut Command) -> LineChild {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        LineChild {
            child,
            stdin,
            stdout,
        }
    }

    /// Writes `request` as one line and flushes.
    pub fn send(&mut self, request: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads the next line as it is (empty at end of output).
    pub fn read_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line
    }

    /// Sends `request` and parses the next line as JSON; panics with the line when it is not
    /// JSON or not a whole line (ending in `\n`).
    pub fn ask(&mut self, request: &Value) -> Value {
        self.send(request);
        let line = self.read_line();
        assert!(line.ends_with('\n'), "not a whole line: {line:?}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// The parts, for a test that reads stdout its own way (on a thread, with a timeout): the
    /// child, its stdin and its buffered stdout.
    pub fn into_parts(self) -> (Child, ChildStdin, BufReader<ChildStdout>) {
        let stdin = self.stdin.expect("stdin is still open");
        (self.child, stdin, self.stdout)
    }

    /// Closes stdin (the child sees end of input) and waits for the whole output.
    pub fn finish(mut self) -> Output {
        drop(self.stdin.take());
        let mut stdout = Vec::new();
        std::io::Read::read_to_end(&mut self.stdout, &mut stdout).unwrap();
        let mut output = self.child.wait_with_output().unwrap();
        stdout.extend_from_slice(&output.stdout);
        output.stdout = stdout;
        output
    }
}
