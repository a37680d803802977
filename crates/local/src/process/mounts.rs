//! A replica's volumes, mounted in a mount namespace of its own: nothing changes for the rest of
//! the machine, and the mounts end with the replica's last process (no mount can be left
//! behind: the kernel removes a namespace's mounts with it).
//!
//! A replica with volumes is started through a helper, this binary run as
//! `trainctl __mounts SPEC -- COMMAND...` ([`command`]): single-threaded and before anything
//! else, it enters new namespaces, mounts, and executes the replica's command in its place (same
//! pid, group, cgroup and env). Its side is in [`enter`].
//!
//! - As root, a mount namespace alone; otherwise a user namespace too, where the user's uid and
//!   gid map to themselves: the replica keeps them for the files it writes, and holds no
//!   privilege once its command runs.
//! - So that a mount point like `/data` can exist without writing to the real `/`, the replica's
//!   root is a tmpfs holding every entry of `/` (bound, with what is mounted beneath), and a
//!   directory that must hold a new mount point is shadowed the same way: a tmpfs over it holding
//!   its entries.
//! - Sources are opened before anything is mounted, so a `hostPath` is the host's path whatever
//!   the mounts cover.
//!
//! The helper reports a failure before the command runs (a mount refused, the command not found)
//! through the pipe that is its standard input until then: [`Pending::confirm`] turns it into the
//! spawn's error, as when a command without volumes is not found.

pub mod enter;

use std::ffi::OsString;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::kubelet::volumes::Mount;

/// The hidden command that runs the helper.
pub const HELPER_COMMAND: &str = "__mounts";

/// The program of the helper: this binary.
const HELPER_PROGRAM: &str = "/proc/self/exe";

/// The exit code of a helper that could not start the command (the shell's "not found").
pub const HELPER_FAILED: i32 = 127;

/// What a replica's mount namespace holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mounts {
    /// The mounts, parents first.
    pub mounts: Vec<Mount>,
    /// An empty directory of the user's, where the replica's new root is put together.
    pub staging: PathBuf,
    /// The directory the command starts in, as the replica sees it.
    pub working_dir: PathBuf,
}

/// A replica's command: `argv` as is, or through the helper when it has `mounts`. Its standard
/// input is `/dev/null` for the command either way.
pub fn command(argv: &[String], mounts: Option<&Mounts>) -> io::Result<(Command, Pending)> {
    let (program, arguments) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the command is empty"))?;
    let Some(mounts) = mounts else {
        let mut command = Command::new(program);
        command.args(arguments).stdin(Stdio::null());
        return Ok((command, Pending(None)));
    };
    let spec = serde_json::to_string(mounts).map_err(io::Error::other)?;
    let (report, writer) = io::pipe()?;
    let mut command = Command::new(HELPER_PROGRAM);
    command
        .arg(HELPER_COMMAND)
        .arg(spec)
        .arg("--")
        .args(argv)
        .stdin(writer);
    Ok((command, Pending(Some(report))))
}

/// What a replica started through the helper has yet to say: whether its command runs.
#[derive(Debug)]
#[must_use = "a helper's failure is known only once confirmed"]
pub struct Pending(Option<io::PipeReader>);

impl Pending {
    /// Waits for the helper to run the command (the pipe closes) or to fail (it says why); the
    /// command that built the child must have been dropped. A failed helper has exited, or is
    /// about to, with [`HELPER_FAILED`].
    pub fn confirm(self) -> io::Result<()> {
        let Some(mut report) = self.0 else {
            return Ok(());
        };
        let mut said = String::new();
        report.read_to_string(&mut said)?;
        match said.split_once('\t') {
            None if said.is_empty() => Ok(()),
            Some(("not-found", message)) => {
                Err(io::Error::new(io::ErrorKind::NotFound, message.to_owned()))
            }
            Some(("denied", message)) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                message.to_owned(),
            )),
            Some((_, message)) => Err(io::Error::other(message.to_owned())),
            None => Err(io::Error::other(said)),
        }
    }
}

/// Spawns `command` built by [`command`] and waits for [`Pending::confirm`].
pub fn spawn_confirmed(mut command: Command, pending: Pending) -> io::Result<Child> {
    let child = command.spawn()?;
    drop(command);
    pending.confirm().map(|()| child)
}

/// The directory a replica's command starts in: its `workingDir`, else this process's.
pub fn working_dir(working_dir: Option<&Path>) -> io::Result<PathBuf> {
    match working_dir {
        Some(dir) => Ok(dir.to_path_buf()),
        None => std::env::current_dir(),
    }
}

/// The arguments of the helper, `SPEC -- COMMAND...`, read back.
pub fn parse_helper_args(words: &[OsString]) -> Result<(Mounts, Vec<OsString>), String> {
    let usage = || format!("usage: {HELPER_COMMAND} SPEC -- COMMAND...");
    let [spec, separator, command @ ..] = words else {
        return Err(usage());
    };
    if separator != "--" || command.is_empty() {
        return Err(usage());
    }
    let spec = spec.to_str().ok_or("the spec is not UTF-8")?;
    let mounts = serde_json::from_str(spec).map_err(|error| format!("the spec: {error}"))?;
    Ok((mounts, command.to_vec()))
}

/// The settings by which a system switches unprivileged user namespaces off: the file, the
/// setting's name, the value that means off, and one that means on.
const SWITCHES: [(&str, &str, &str, &str); 3] = [
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "kernel.unprivileged_userns_clone",
        "0",
        "1",
    ),
    (
        "/proc/sys/user/max_user_namespaces",
        "user.max_user_namespaces",
        "0",
        "15000",
    ),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "kernel.apparmor_restrict_unprivileged_userns",
        "1",
        "0",
    ),
];

/// Why this machine cannot give a replica a mount namespace, when it cannot: a user other than
/// root needs unprivileged user namespaces, which some systems switch off. The message names
/// the setting.
#[must_use]
pub fn unavailable() -> Option<String> {
    if nix::unistd::geteuid().is_root() {
        return None;
    }
    refusal(|path| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    })
}

/// The message for the first of [`SWITCHES`] that is off, as `read` gives their values.
fn refusal(read: impl Fn(&str) -> Option<String>) -> Option<String> {
    SWITCHES
        .into_iter()
        .find(|(path, _, off, _)| read(path).as_deref() == Some(*off))
        .map(|(_, name, off, on)| {
            format!(
                "this machine does not allow unprivileged user namespaces ({name} = {off}), which \
                 trainctl needs to mount the job's volumes where its manifest says; allow them \
                 (`sudo sysctl -w {name}={on}`), run as root, or run without the volumes \
                 (--no-volumes)"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_that_is_off_is_named_with_the_way_out() {
        let message =
            refusal(|path| (path == "/proc/sys/user/max_user_namespaces").then(|| "0".to_owned()))
                .expect("refused");
        assert_eq!(
            message,
            "this machine does not allow unprivileged user namespaces (user.max_user_namespaces = \
             0), which trainctl needs to mount the job's volumes where its manifest says; allow \
             them (`sudo sysctl -w user.max_user_namespaces=15000`), run as root, or run without \
             the volumes (--no-volumes)"
        );
        let apparmor =
            refusal(|path| path.contains("apparmor").then(|| "1".to_owned())).expect("refused");
        assert!(
            apparmor.contains("(kernel.apparmor_restrict_unprivileged_userns = 1)")
                && apparmor.contains("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"),
            "{apparmor}"
        );
    }

    #[test]
    fn switches_that_are_on_or_absent_refuse_nothing() {
        assert_eq!(refusal(|_| None), None);
        assert_eq!(
            refusal(|_| Some("1".to_owned())).filter(|m| !m.contains("apparmor")),
            None
        );
        assert_eq!(
            refusal(|path| Some(
                if path.contains("apparmor") {
                    "0"
                } else {
                    "15000"
                }
                .to_owned()
            )),
            None
        );
    }
}
