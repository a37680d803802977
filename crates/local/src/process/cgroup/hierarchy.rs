//! Where this process's cgroups are: the cgroup v2 (unified) hierarchy, and on a hybrid or
//! cgroup v1 system the v1 hierarchies of the `memory` and `cpu` controllers, read from this
//! process's mount table and `/proc/self/cgroup`.

use std::fs;
use std::path::{Path, PathBuf};

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
/// hybrid system), from this process's mount table.
#[must_use]
pub fn hierarchy() -> Option<PathBuf> {
    mount_point(|fs_type, _| fs_type == "cgroup2")
}

/// Where the cgroup v1 hierarchy that holds `controller` is mounted (`/sys/fs/cgroup/memory`);
/// `None` where that controller is not bound to a v1 hierarchy.
pub(super) fn legacy_hierarchy(controller: &str) -> Option<PathBuf> {
    mount_point(|fs_type, options| {
        fs_type == "cgroup" && options.split(',').any(|option| option == controller)
    })
}

/// Where a filesystem that `accepts` (its type, its super options) is mounted whole (its root
/// is the filesystem's).
fn mount_point(accepts: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    let table = fs::read_to_string("/proc/self/mountinfo").ok()?;
    table.lines().find_map(|line| {
        let (mount, source) = line.split_once(" - ")?;
        let mut about = source.split_whitespace();
        let fs_type = about.next()?;
        // Fields after the separator: type, source, super options.
        let options = about.nth(1).unwrap_or("");
        if !accepts(fs_type, options) {
            return None;
        }
        let mut fields = mount.split_whitespace();
        // Fields: id, parent id, major:minor, root, mount point.
        let root = fields.nth(3)?;
        let point = fields.next()?;
        (root == "/").then(|| PathBuf::from(point))
    })
}

/// This process's cgroup in the cgroup v2 hierarchy; `None` where there is none.
pub(super) fn own_cgroup() -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    Some(within(&hierarchy()?, unified_path(&text)?))
}

/// This process's cgroup in the cgroup v1 hierarchy of `controller`; `None` where there is none.
pub(super) fn own_legacy_cgroup(controller: &str) -> Option<PathBuf> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    Some(within(
        &legacy_hierarchy(controller)?,
        legacy_path(&text, controller)?,
    ))
}

/// The cgroup at `path` (from `/proc/self/cgroup`) in the hierarchy mounted at `mount`.
fn within(mount: &Path, path: &str) -> PathBuf {
    mount.join(path.trim_start_matches('/'))
}

/// The path of the cgroup v2 entry (`0::PATH`) of a `/proc/PID/cgroup`.
pub(super) fn unified_path(text: &str) -> Option<&str> {
    text.lines().find_map(|line| line.strip_prefix("0::"))
}

/// The path of the entry of the v1 hierarchy holding `controller` (`4:memory:PATH`,
/// `2:cpu,cpuacct:PATH`) of a `/proc/PID/cgroup`.
fn legacy_path<'a>(text: &'a str, controller: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let _id = fields.next()?;
        let controllers = fields.next()?;
        let path = fields.next()?;
        controllers
            .split(',')
            .any(|name| name == controller)
            .then_some(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_entry_of_a_hybrid_system() {
        let text =
            "12:pids:/\n4:memory:/x\n2:cpu,cpuacct:/y\n1:name=systemd:/\n0::/user.slice/a.scope\n";
        assert_eq!(unified_path(text), Some("/user.slice/a.scope"));
        assert_eq!(unified_path("4:memory:/x\n"), None);
        assert_eq!(legacy_path(text, "memory"), Some("/x"));
        assert_eq!(legacy_path(text, "cpu"), Some("/y"));
        assert_eq!(legacy_path(text, "cpuacct"), Some("/y"));
        assert_eq!(legacy_path(text, "cpuset"), None);
        // The unified entry names no controller.
        assert_eq!(legacy_path("0::/a\n", "memory"), None);
    }

    #[test]
    fn a_cgroup_path_is_joined_under_its_mount() {
        assert_eq!(
            within(Path::new("/sys/fs/cgroup/memory"), "/a/b"),
            PathBuf::from("/sys/fs/cgroup/memory/a/b")
        );
        assert_eq!(
            within(Path::new("/sys/fs/cgroup"), "/"),
            PathBuf::from("/sys/fs/cgroup/")
        );
    }
}
