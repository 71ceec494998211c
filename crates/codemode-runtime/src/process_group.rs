//! Killing a child's process group without ever signalling someone else's.
//!
//! A command hook (`codemode-facade`'s `pipeline/command.rs`) and a stdio MCP server
//! (`codemode-mcp`'s `process.rs`) are started as the leader of a new process group
//! (`process_group(0)`, so the group id is the child's pid), and the group gets SIGKILL so
//! helpers they started do not outlive them. It lives here, below both, because the runtime is
//! the one lower crate that already manages OS resources with tokio (docs/architecture.md,
//! "Layers").
//!
//! **Why the order matters.** `kill(-pgid)` reaches exactly the child's group only while the
//! leader has not been reaped: until then its pid (a zombie's too) stays allocated, so no new
//! process, and therefore no new process group, can get that id. Once the leader is reaped and
//! the group is empty, the id can be reused, by a concurrent hook's new group for instance, and a
//! late `kill(-pgid)` would kill that group. [`ProcessGroup`] therefore kills only while the
//! leader is unreaped: on a timeout, error or abandon path (the child was never waited for), or
//! after [`ProcessGroup::leader_exited`], which waits for the leader's exit *without* reaping it,
//! and before the caller reaps it with `Child::wait`.

use std::time::Duration;

/// A child's process group (Unix; a no-op elsewhere). Armed from [`of`](Self::of) until
/// [`kill`](Self::kill) (also run on drop) or [`disarm`](Self::disarm).
///
/// Contract: the child must have been spawned with `process_group(0)`, and the guard must be
/// killed or disarmed **before** the child is reaped (`Child::wait`, `try_wait` or `kill`
/// returning its status). Dropping `tokio::process::Child` does not reap synchronously, but its
/// orphan reaper may do so at any time afterwards, so kill the group before dropping the child.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<i32>,
}

impl ProcessGroup {
    /// The group led by `child` (its pid), armed; disarmed off Unix or when the pid is unknown
    /// (the child was already reaped).
    pub fn of(child: &tokio::process::Child) -> Self {
        ProcessGroup {
            pgid: child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .filter(|&pid| pid > 1 && cfg!(unix)),
        }
    }

    /// True while the guard will still kill the group.
    pub fn is_armed(&self) -> bool {
        self.pgid.is_some()
    }

    /// Waits until the leader has exited, **without reaping it** (`waitid` with `WNOWAIT`,
    /// polled every 1 to 20 ms), so [`kill`](Self::kill) is still safe afterwards. If its state
    /// cannot be read (it was reaped elsewhere, or off Linux) the guard is disarmed instead:
    /// killing would no longer be safe.
    pub async fn leader_exited(&mut self) {
        let Some(pid) = self.pgid else {
            return;
        };
        let mut delay = Duration::from_millis(1);
        loop {
            match exited_unreaped(pid) {
                Some(true) => return,
                Some(false) => {}
                None => {
                    self.disarm();
                    return;
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(20));
        }
    }

    /// Sends SIGKILL to the whole group once and disarms the guard. Call it only while the
    /// leader is unreaped (see the type's contract).
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_process_group(pgid);
        }
    }

    /// Disarms the guard without signalling anything.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(unix)]
fn kill_process_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours. That the group
        // is still ours is the caller's contract (ProcessGroup: the leader is not reaped yet).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_process_group(_pgid: i32) {}

/// `Some(true)` when the child `pid` has exited and is waiting to be reaped, `Some(false)` while
/// it runs, `None` when that cannot be told (not our child, already reaped, not Linux).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exited_unreaped(pid: i32) -> Option<bool> {
    loop {
        // SAFETY: siginfo_t is a plain C struct for which all-zero bytes are a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) only writes into `info`, which we own and which outlives the call;
        // WNOWAIT leaves the child waitable (not reaped), WNOHANG makes the call return at once.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // SAFETY: after a successful waitid, si_pid is the field the kernel filled in
            // (0 when no child changed state).
            return Some(unsafe { info.si_pid() } != 0);
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exited_unreaped(_pid: i32) -> Option<bool> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::ProcessGroup;

    #[tokio::test]
    async fn a_process_group_waits_for_its_leader_without_reaping_it() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .process_group(0)
            .spawn()
            .unwrap();
        let mut group = ProcessGroup::of(&child);
        assert!(group.is_armed());
        group.leader_exited().await;
        // Still armed and the exit status still there: nobody reaped the leader, so killing the
        // group now cannot reach a process group that reused its id.
        assert!(group.is_armed());
        group.kill();
        assert!(!group.is_armed());
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(3));
        // A reaped child gives a disarmed guard.
        assert!(!ProcessGroup::of(&child).is_armed());
    }
}
