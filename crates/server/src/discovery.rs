//! How the CLI finds the server: `server.json` (its URL and pid) and `server.token` (the bearer
//! token), both written with mode 0600 in the state directory, each by a rename so that no reader
//! ever sees half a file ([`write_private`]: the temporary file is a new one, never a link or
//! another user's file).
//!
//! One server per state directory: a server holds `server.lock` locked ([`lock`]) from before it
//! starts anything until it exits, as the kubelet's `--lock-file` and Slurm's controller do. The
//! kernel releases the lock when the process ends, however it ends, so a server that crashed
//! leaves no stale lock behind.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use trainctl_local::state_dir::write_private;

/// The file with the server's address.
pub const ADDRESS_FILE: &str = "server.json";
/// The file with the server's bearer token.
pub const TOKEN_FILE: &str = "server.token";
/// The file a server holds locked while it runs.
pub const LOCK_FILE: &str = "server.lock";

/// What `server.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerAddress {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The server's process id.
    pub pid: u32,
    /// The server's version (`0.1.0`); empty from a server older than this field.
    #[serde(default)]
    pub version: String,
    /// The capacity the server admits jobs against (this machine's, or what its flags say);
    /// absent from a server older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<PublishedCapacity>,
}

/// A server's capacity, as `server.json` says it for `trainctl top node`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedCapacity {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes (`u64::MAX`: unknown).
    pub memory_bytes: u64,
    /// The GPUs' indices.
    pub gpus: Vec<u32>,
}

/// The state directory's lock, held until this value is dropped (or the process ends).
#[derive(Debug)]
pub struct ServerLock {
    _locked: Flock<File>,
}

/// Why the state directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another server holds it.
    #[error(
        "another trainctl server is running on the state directory {}{holder}: stop it first, or \
         give this one another --state-dir",
        dir.display()
    )]
    Held {
        /// The state directory.
        dir: PathBuf,
        /// The holder as its `server.json` names it (` (pid 123 at http://127.0.0.1:4242)`), or
        /// nothing when it has not published it yet.
        holder: String,
    },
    /// The lock file cannot be opened or locked.
    #[error("cannot lock {}: {error}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// Locks `state_dir` for this server, or says which server holds it. The lock file is opened
/// without following a symbolic link, and made with mode 0600.
pub fn lock(state_dir: &Path) -> Result<ServerLock, LockError> {
    let path = state_dir.join(LOCK_FILE);
    let io = |error| LockError::Io {
        path: path.clone(),
        error,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(io)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(ServerLock { _locked: locked }),
        Err((_, Errno::EWOULDBLOCK)) => Err(LockError::Held {
            dir: state_dir.to_owned(),
            holder: read_address(state_dir)
                .map(|address| format!(" (pid {} at {})", address.pid, address.url))
                .unwrap_or_default(),
        }),
        Err((_, errno)) => Err(io(errno.into())),
    }
}

/// What `server.json` in `state_dir` says, when it can be read.
fn read_address(state_dir: &Path) -> Option<ServerAddress> {
    let bytes = std::fs::read(state_dir.join(ADDRESS_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes the token, then the address, into `state_dir`.
pub fn publish(state_dir: &Path, address: &ServerAddress, token: &str) -> std::io::Result<()> {
    write_private(&state_dir.join(TOKEN_FILE), token.as_bytes())?;
    let json = serde_json::to_vec_pretty(address).map_err(std::io::Error::other)?;
    write_private(&state_dir.join(ADDRESS_FILE), &json)
}

/// Removes `server.json` when it still names this process (on a clean stop).
pub fn withdraw(state_dir: &Path) {
    let ours = read_address(state_dir).is_some_and(|address| address.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(state_dir.join(ADDRESS_FILE));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = lock(dir.path()).expect("the first lock");
        let refused = lock(dir.path()).expect_err("held");
        assert_eq!(
            refused.to_string(),
            format!(
                "another trainctl server is running on the state directory {}: stop it first, \
                 or give this one another --state-dir",
                dir.path().display()
            )
        );
        let address = ServerAddress {
            url: "http://127.0.0.1:4242".to_owned(),
            pid: 4242,
            version: "0.1.0".to_owned(),
            capacity: None,
        };
        publish(dir.path(), &address, "token").expect("publish");
        let refused = lock(dir.path()).expect_err("held");
        assert!(
            refused
                .to_string()
                .contains(" (pid 4242 at http://127.0.0.1:4242): stop it first"),
            "{refused}"
        );
        drop(first);
        let _again = lock(dir.path()).expect("free again");
        let mode = std::fs::metadata(dir.path().join(LOCK_FILE))
            .expect("the lock file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_lock_file_that_is_a_symbolic_link_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(LOCK_FILE)).expect("a link");
        let error = lock(dir.path()).expect_err("a link");
        assert!(error.to_string().starts_with("cannot lock "), "{error}");
        assert!(!elsewhere.exists());
    }

    #[test]
    fn files_are_private_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let address = ServerAddress {
            version: "0.1.0".to_owned(),
            capacity: None,
            url: "http://127.0.0.1:4242".to_owned(),
            pid: std::process::id(),
        };
        let token = trainctl_dashboard::auth::new_token();
        publish(dir.path(), &address, &token).expect("publish");
        for file in [ADDRESS_FILE, TOKEN_FILE] {
            let mode = std::fs::metadata(dir.path().join(file))
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let read: ServerAddress =
            serde_json::from_slice(&std::fs::read(dir.path().join(ADDRESS_FILE)).expect("read"))
                .expect("json");
        assert_eq!(read, address);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(TOKEN_FILE)).expect("read"),
            token
        );
        withdraw(dir.path());
        assert!(!dir.path().join(ADDRESS_FILE).exists());
    }
}
