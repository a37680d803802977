//! Giving the `memory` and `cpu` controllers of this process's cgroup v2 cgroup to the replicas'
//! cgroups under it, as far as the kernel allows.
//!
//! The kernel's rule ("no internal processes"): only the hierarchy's root, or a cgroup that holds
//! no process of its own, may give its children a domain controller such as `memory`. It does
//! let a cgroup that holds processes give `cpu` (a threaded controller), but that cgroup then
//! becomes the root of a threaded subtree, where no cgroup under it may hold a process: no
//! replica could enter its cgroup. So a non-root cgroup that holds processes gives nothing.
//!
//! A `trainctl` that is alone in its cgroup (`systemd-run --scope -p Delegate=yes trainctl ...`)
//! makes room, as systemd's delegation guide asks of a delegated unit's main process: it moves
//! itself into a child cgroup, [`SUPERVISOR`], and its cgroup, empty now, gives the controllers.
//! What it forks from then on (the watchdog, a server's shim) starts there too, and takes the
//! supervisor cgroup's parent for the one that holds the replicas' cgroups.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::limits::Controller;

/// The cgroup a `trainctl` alone in its cgroup moves itself into, under that cgroup.
pub(super) const SUPERVISOR: &str = "trainctl.supervisor";

/// Whether finding the cgroups gives the v2 controllers to the replicas' cgroups, or only
/// predicts whether the kernel would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Delegation {
    /// Move this process out of the way where it is alone, and write the controllers to
    /// `cgroup.subtree_control`.
    Give,
    /// Read what `trainctl run` started here would get, writing nothing.
    Predict,
}

/// Where a process's replicas' cgroups go in the v2 hierarchy, and where the process itself is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Place {
    /// The cgroup under which the jobs' cgroups are made.
    pub(super) base: PathBuf,
    /// The process's own cgroup: `base`, or its [`SUPERVISOR`] child.
    pub(super) home: PathBuf,
}

/// The place of a process whose v2 cgroup is `own`: under its own cgroup, or, in a
/// [`SUPERVISOR`] cgroup, under that cgroup's parent. To give (`Delegation::Give`), a process
/// alone in a cgroup that could give the controllers if it held no process moves itself into its
/// [`SUPERVISOR`] child first.
pub(super) fn place(own: PathBuf, delegation: Delegation) -> Place {
    if let Some(place) = supervised(&own) {
        return place;
    }
    if delegation == Delegation::Give && !is_hierarchy_root(&own) && makes_room(&own) {
        let home = own.join(SUPERVISOR);
        match move_into(&home) {
            Ok(()) => return Place { base: own, home },
            Err(error) => {
                tracing::debug!(%error, cgroup = %home.display(), "cannot move into a cgroup of trainctl's own");
                let _ = fs::remove_dir(&home);
            }
        }
    }
    Place {
        base: own.clone(),
        home: own,
    }
}

/// The place of a process in a [`SUPERVISOR`] cgroup: the jobs go under its parent.
fn supervised(own: &Path) -> Option<Place> {
    if own.file_name()? != SUPERVISOR {
        return None;
    }
    Some(Place {
        base: own.parent()?.to_owned(),
        home: own.to_owned(),
    })
}

/// Whether this process should move out of its cgroup `own` to let it give the controllers:
/// it is alone there, may write there, and a controller trainctl uses is offered there but not
/// given yet.
fn makes_room(own: &Path) -> bool {
    let procs = fs::read_to_string(own.join("cgroup.procs")).unwrap_or_default();
    occupancy(&procs, std::process::id()) == Occupancy::OnlyThis
        && is_writable(own)
        && Controller::ALL.iter().any(|controller| {
            lists(own, "cgroup.controllers", controller.name())
                && !lists(own, "cgroup.subtree_control", controller.name())
        })
}

/// Makes `cgroup` (if need be) and moves this process, all its threads, into it.
fn move_into(cgroup: &Path) -> io::Result<()> {
    match fs::create_dir(cgroup) {
        Err(error) if error.kind() != io::ErrorKind::AlreadyExists => return Err(error),
        _ => {}
    }
    fs::write(cgroup.join("cgroup.procs"), "0")
}

/// Who holds a cgroup, as its `cgroup.procs` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occupancy {
    /// No process.
    Empty,
    /// This process alone.
    OnlyThis,
    /// Another process (and maybe this one).
    Others,
}

/// Who holds a cgroup whose `cgroup.procs` is `procs`, for the process `pid`.
fn occupancy(procs: &str, pid: u32) -> Occupancy {
    let mut listed = procs.split_whitespace().peekable();
    if listed.peek().is_none() {
        return Occupancy::Empty;
    }
    let this = pid.to_string();
    if listed.all(|listed| listed == this) {
        Occupancy::OnlyThis
    } else {
        Occupancy::Others
    }
}

/// Whether the kernel lets a cgroup give a domain controller to its children: the root always,
/// another cgroup only while it holds no process. A prediction counts this process alone there
/// as none, since it would make room ([`place`]).
fn may_give(is_root: bool, occupancy: Occupancy, delegation: Delegation) -> bool {
    is_root
        || occupancy == Occupancy::Empty
        || (occupancy == Occupancy::OnlyThis && delegation == Delegation::Predict)
}

/// Whether the replicas' cgroups, made under the v2 cgroup `base`, have `controller`: given
/// now, or (predicted) given already or givable. Never where this process cannot make cgroups
/// in `base`, even if its children have the controller (the root's do, given by root, where
/// another user runs trainctl): the limits would not be written.
pub(super) fn delegates(base: &Path, controller: Controller, delegation: Delegation) -> bool {
    let name = controller.name();
    if !lists(base, "cgroup.controllers", name) || !is_writable(base) {
        return false;
    }
    if lists(base, "cgroup.subtree_control", name) {
        return true;
    }
    let procs = fs::read_to_string(base.join("cgroup.procs")).unwrap_or_default();
    let occupancy = occupancy(&procs, std::process::id());
    if !may_give(is_hierarchy_root(base), occupancy, delegation) {
        return false;
    }
    match delegation {
        Delegation::Give => {
            fs::write(base.join("cgroup.subtree_control"), format!("+{name}")).is_ok()
        }
        Delegation::Predict => true,
    }
}

/// Whether `cgroup` is the root of the whole hierarchy, the one cgroup without a `cgroup.type`
/// (the root of a cgroup namespace, a container's `/sys/fs/cgroup`, is not: the rule holds there).
fn is_hierarchy_root(cgroup: &Path) -> bool {
    !cgroup.join("cgroup.type").exists()
}

/// Whether the cgroup file `file` of `cgroup` lists `controller`.
fn lists(cgroup: &Path, file: &str, controller: &str) -> bool {
    fs::read_to_string(cgroup.join(file))
        .is_ok_and(|text| text.split_whitespace().any(|listed| listed == controller))
}

/// Whether this process may make cgroups in `dir`.
pub(super) fn is_writable(dir: &Path) -> bool {
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroups_occupancy_is_read_from_its_procs() {
        assert_eq!(occupancy("", 7), Occupancy::Empty);
        assert_eq!(occupancy("\n", 7), Occupancy::Empty);
        assert_eq!(occupancy("7\n", 7), Occupancy::OnlyThis);
        assert_eq!(occupancy("70\n", 7), Occupancy::Others);
        assert_eq!(occupancy("7\n8\n", 7), Occupancy::Others);
        assert_eq!(occupancy("8\n", 7), Occupancy::Others);
    }

    #[test]
    fn only_the_root_or_an_empty_cgroup_gives_controllers() {
        use Delegation::{Give, Predict};
        use Occupancy::{Empty, OnlyThis, Others};
        // The root, whoever is in it.
        assert!(may_give(true, Others, Give));
        // Another cgroup: a `cpu` written there by a process in it would make it a threaded
        // subtree's root, where no replica could enter its cgroup.
        assert!(may_give(false, Empty, Give));
        assert!(!may_give(false, OnlyThis, Give));
        assert!(!may_give(false, Others, Give));
        assert!(!may_give(false, Others, Predict));
        // A `trainctl run` alone there would make room.
        assert!(may_give(false, OnlyThis, Predict));
    }

    #[test]
    fn a_process_in_a_supervisor_cgroup_makes_the_jobs_under_its_parent() {
        let own = PathBuf::from("/sys/fs/cgroup/run-1.scope/trainctl.supervisor");
        assert_eq!(
            supervised(&own),
            Some(Place {
                base: PathBuf::from("/sys/fs/cgroup/run-1.scope"),
                home: own,
            })
        );
        assert_eq!(supervised(Path::new("/sys/fs/cgroup/run-1.scope")), None);
    }
}
