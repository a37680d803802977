//! Who runs `trainctl`: this process's user, root without `CAP_SYS_ADMIN` (through `setpriv`),
//! or a user other than root (the first of `/etc/passwd`, else one made once), with a copy of
//! the binary that user can execute; and why a test is skipped where none can be had.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The user the tests make when the machine has none to run as.
const TEST_USER: &str = "trainctl-test";

/// Who runs `trainctl`: its uid and gid, and the binary that user can execute.
#[derive(Debug, Clone)]
pub struct User {
    /// The uid.
    pub uid: u32,
    /// The gid.
    pub gid: u32,
    /// Whether the test switches to this user (it is not the test's own).
    pub(super) switch: bool,
    /// The `trainctl` binary, where this user can run it.
    pub(super) binary: PathBuf,
    /// A program and its arguments that run the binary (`setpriv ...`), if any.
    pub(super) wrapper: Vec<&'static str>,
}

impl User {
    /// This test process's user (root where the tests run as root).
    pub fn invoker() -> User {
        let (uid, gid) = own_ids();
        User {
            uid,
            gid,
            switch: false,
            binary: PathBuf::from(trainctl_cli_harness::binary()),
            wrapper: Vec::new(),
        }
    }

    /// Root without the right to mount (`CAP_SYS_ADMIN`), as in a container: `trainctl` run
    /// through `setpriv`. `None`, with the reason printed, where the tests do not run as root,
    /// the machine has no `setpriv`, or it does not allow user namespaces.
    pub fn root_without_cap_sys_admin(test: &str) -> Option<User> {
        let skip = |why: &str| skipped(&format!("{test} as root without CAP_SYS_ADMIN: {why}"));
        if own_ids().0 != 0 {
            return skip("the tests do not run as root");
        }
        if let Some(setting) = user_namespaces_off() {
            return skip(&format!(
                "this machine does not allow user namespaces ({setting})"
            ));
        }
        let setpriv = Command::new("setpriv")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !setpriv.is_ok_and(|status| status.success()) {
            return skip("this machine has no setpriv (util-linux)");
        }
        Some(User {
            wrapper: vec![
                "setpriv",
                "--bounding-set=-sys_admin",
                "--inh-caps=-sys_admin",
                "--",
            ],
            ..User::invoker()
        })
    }

    /// A user other than root, made if the machine has none; `None`, with the reason printed,
    /// when this process is not root (it cannot switch users) or the machine does not let users
    /// other than root make user namespaces.
    pub fn unprivileged(test: &str) -> Option<User> {
        let skip = |why: &str| skipped(&format!("{test} as a user other than root: {why}"));
        if own_ids().0 != 0 {
            return skip(
                "the tests do not run as root, so they cannot switch to another user (the \
                 `as_invoker` variant runs as this user, which is not root)",
            );
        }
        if let Some(setting) = user_namespaces_off() {
            return skip(&format!(
                "this machine does not allow unprivileged user namespaces ({setting})"
            ));
        }
        let (uid, gid) = match unprivileged_ids() {
            Ok(ids) => ids,
            Err(why) => return skip(&why),
        };
        Some(User {
            uid,
            gid,
            switch: true,
            binary: binary_for_others(),
            wrapper: Vec::new(),
        })
    }
}

/// Says that a test is skipped and why, on the test process's standard error itself (not
/// captured with the test's output, which a passing test's hides), and gives no user.
fn skipped(what: &str) -> Option<User> {
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}");
    None
}

/// This process's effective uid and gid, from `/proc/self/status`.
fn own_ids() -> (u32, u32) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let effective = |field: &str| -> u32 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|ids| ids.split_whitespace().nth(1))
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
    };
    (effective("Uid:"), effective("Gid:"))
}

/// The setting that keeps users other than root from making user namespaces, if one does.
fn user_namespaces_off() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    [
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/user/max_user_namespaces", "0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
        ),
    ]
    .into_iter()
    .find(|(path, off)| read(path).as_deref() == Some(*off))
    .map(|(path, off)| format!("{path} is {off}"))
}

/// The uid and gid of a user other than root: the first of `/etc/passwd` with a uid of 1000 or
/// more (not `nobody`), else [`TEST_USER`], made once (`useradd --system`) for every test.
fn unprivileged_ids() -> Result<(u32, u32), String> {
    static IDS: OnceLock<Result<(u32, u32), String>> = OnceLock::new();
    IDS.get_or_init(|| {
        let users = passwd();
        if let Some((_, uid, gid)) = users.iter().find(|(_, uid, _)| (1000..65534).contains(uid)) {
            return Ok((*uid, *gid));
        }
        if let Some((_, uid, gid)) = users.iter().find(|(name, _, _)| name == TEST_USER) {
            return Ok((*uid, *gid));
        }
        let added = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/bin/false"])
            .arg(TEST_USER)
            .output()
            .map_err(|error| format!("cannot run useradd to make a user: {error}"))?;
        // 9: the user exists (made by another run of the tests meanwhile).
        if !added.status.success() && added.status.code() != Some(9) {
            return Err(format!(
                "useradd {TEST_USER} failed: {}",
                String::from_utf8_lossy(&added.stderr).trim()
            ));
        }
        passwd()
            .into_iter()
            .find(|(name, _, _)| name == TEST_USER)
            .map(|(_, uid, gid)| (uid, gid))
            .ok_or_else(|| format!("useradd made no {TEST_USER} in /etc/passwd"))
    })
    .clone()
}

/// `/etc/passwd` as `(name, uid, gid)`.
fn passwd() -> Vec<(String, u32, u32)> {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            Some((
                (*fields.first()?).to_owned(),
                fields.get(2)?.parse().ok()?,
                fields.get(3)?.parse().ok()?,
            ))
        })
        .collect()
}

/// The prefix of the directories in the temporary directory that hold a copy of the binary,
/// one per build of it.
const BINARY_COPIES: &str = "trainctl-volumes-bin-";

/// Removes the copies of earlier builds of the binary made more than a day ago: each holds on to
/// a binary of its own (about 170 MB) that no test run still uses.
fn remove_stale_copies() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .file_name()
            .to_string_lossy()
            .starts_with(BINARY_COPIES)
            && entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| {
                    modified
                        .elapsed()
                        .is_ok_and(|age| age > std::time::Duration::from_secs(24 * 3600))
                });
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The binary where any user can execute it: where cargo built it when every directory above
/// it lets others through, else a copy (a hard link where it can) in a directory of its own.
fn binary_for_others() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let built = PathBuf::from(trainctl_cli_harness::binary());
            let others_may = |path: &Path, bits: u32| {
                std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & bits == bits)
            };
            if others_may(&built, 0o005)
                && built.ancestors().skip(1).all(|dir| others_may(dir, 0o001))
            {
                return built;
            }
            let meta = std::fs::metadata(&built).expect("the built binary");
            let dir = std::env::temp_dir().join(format!(
                "{BINARY_COPIES}{}-{}",
                meta.ino(),
                meta.mtime()
            ));
            remove_stale_copies();
            std::fs::create_dir_all(&dir).expect("make the binary's directory");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the binary's directory");
            let copy = dir.join("trainctl");
            if !copy.exists() && std::fs::hard_link(&built, &copy).is_err() {
                let partial = dir.join(format!("trainctl.{}", std::process::id()));
                std::fs::copy(&built, &partial).expect("copy the binary");
                std::fs::rename(&partial, &copy).expect("put the binary in place");
            }
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the binary");
            copy
        })
        .clone()
}
