//! The helper's side: new namespaces, the new root, the mounts, then the replica's command in
//! this process's place. Runs single-threaded (a process with threads cannot enter a user
//! namespace), before anything else of `trainctl`.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::os::unix::fs::DirBuilderExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, open, openat2};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::{Mode, SFlag};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{chdir, dup2_stdin, getegid, geteuid, pivot_root};

use super::{HELPER_FAILED, Mounts};
use crate::kubelet::volumes::{Mount, MountSource};

/// Where the old root is while the volumes are bound, in the new root.
const OLD_ROOT: &str = "/.trainctl-old-root";

/// The most symbolic links followed while finding a mount point.
const MAX_LINKS: usize = 40;

/// A failure, and the word the parent turns into an error kind.
struct Failure {
    kind: &'static str,
    message: String,
}

impl Failure {
    fn new(context: impl std::fmt::Display, errno: Errno) -> Failure {
        let kind = match errno {
            Errno::ENOENT => "not-found",
            Errno::EACCES | Errno::EPERM => "denied",
            _ => "other",
        };
        Failure {
            kind,
            message: format!("{context}: {}", errno.desc()),
        }
    }
}

/// Sets the replica's namespace up as `mounts` says and executes `argv`; returns only by
/// exiting, with [`HELPER_FAILED`] after telling the parent why on the pipe that is standard
/// input.
pub fn enter_and_exec(mounts: &Mounts, argv: &[OsString]) -> ! {
    // The pipe to the parent, kept past the exec only if the exec fails.
    let report = io::stdin().as_fd().try_clone_to_owned();
    let failure = match setup(mounts).and_then(|()| exec(argv)) {
        Ok(never) => match never {},
        Err(failure) => failure,
    };
    let line = format!("{}\t{}", failure.kind, failure.message);
    match report {
        Ok(fd) => {
            let mut pipe = fs::File::from(fd);
            let _ = pipe.write_all(line.as_bytes());
        }
        Err(_) => eprintln!("trainctl: {}", failure.message),
    }
    std::process::exit(HELPER_FAILED)
}

/// Standard input becomes `/dev/null`; `argv` runs in this process's place, found on `PATH`,
/// through the standard library's `exec`, which, as its `spawn` does, gives the command the
/// default `SIGPIPE` (this process ignores it, as every Rust program does) and an empty signal
/// mask: a replica with volumes behaves as one without (`gen | head` ends quietly).
fn exec(argv: &[OsString]) -> Result<std::convert::Infallible, Failure> {
    let null = open(
        "/dev/null",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| Failure::new("/dev/null", errno))?;
    dup2_stdin(&null).map_err(|errno| Failure::new("standard input", errno))?;
    let (program, arguments) = argv
        .split_first()
        .ok_or_else(|| Failure::new("the command", Errno::EINVAL))?;
    let error = std::process::Command::new(program).args(arguments).exec();
    Err(io_failure(
        format!("exec {}", program.to_string_lossy()),
        &error,
    ))
}

/// The namespaces, the new root and the mounts, then the working directory.
fn setup(spec: &Mounts) -> Result<(), Failure> {
    enter_namespaces()?;
    // Nothing mounted here reaches the machine's namespace; what the machine mounts later (a
    // dataset, an automounted home) still shows here.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|errno| Failure::new("cannot make the mounts private", errno))?;
    let sources = open_sources(&spec.mounts)?;
    new_root(&spec.staging)?;
    let mut ours = HashSet::from([PathBuf::from("/")]);
    let mut targets = Vec::with_capacity(spec.mounts.len());
    for (mount, source) in spec.mounts.iter().zip(&sources) {
        targets.push(apply(mount, source.as_ref(), &mut ours)?);
    }
    // Read-only once every mount point is made: one inside a read-only volume is made in it, as
    // a container runtime makes it.
    for (mount, target) in spec.mounts.iter().zip(&targets) {
        if mount.read_only {
            read_only(target).map_err(|errno| {
                Failure::new(format!("cannot mount {}", mount.target.display()), errno)
            })?;
        }
    }
    // The sources are bound: the old root goes.
    drop(sources);
    umount2(OLD_ROOT, MntFlags::MNT_DETACH)
        .map_err(|errno| Failure::new("cannot detach the old root", errno))?;
    fs::remove_dir(OLD_ROOT).map_err(|error| io_failure(OLD_ROOT, &error))?;
    chdir(&spec.working_dir)
        .map_err(|errno| Failure::new(format!("workingDir {}", spec.working_dir.display()), errno))
}

/// A mount namespace; a user namespace first unless this process is root with the right to
/// mount (root in a container often has not), mapping its uid and gid to themselves.
fn enter_namespaces() -> Result<(), Failure> {
    let uid = geteuid();
    if uid.is_root() {
        match unshare(CloneFlags::CLONE_NEWNS) {
            Ok(()) => return Ok(()),
            // Without `CAP_SYS_ADMIN`: a user namespace gives it, as to any user.
            Err(Errno::EPERM) => {}
            Err(errno) => return Err(Failure::new("cannot make a mount namespace", errno)),
        }
    }
    let gid = getegid();
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|errno| {
        Failure::new(
            "cannot make a user namespace (are unprivileged user namespaces allowed? see \
             user.max_user_namespaces and kernel.unprivileged_userns_clone)",
            errno,
        )
    })?;
    let write =
        |path: &str, text: String| fs::write(path, text).map_err(|error| io_failure(path, &error));
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// A failure from a standard library call.
fn io_failure(context: impl std::fmt::Display, error: &io::Error) -> Failure {
    Failure::new(
        context,
        error.raw_os_error().map_or(Errno::EIO, Errno::from_raw),
    )
}

/// Each bind mount's source, opened before anything is mounted (`None` for a tmpfs, new or
/// mounted again).
fn open_sources(mounts: &[Mount]) -> Result<Vec<Option<OwnedFd>>, Failure> {
    mounts
        .iter()
        .map(|mount| match &mount.source {
            MountSource::Bind(source) => {
                open(source, OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())
                    .map(Some)
                    .map_err(|errno| Failure::new(source.display(), errno))
            }
            MountSource::Beneath { root, sub_path } => open_beneath(root, sub_path).map(Some),
            MountSource::Tmpfs(_) | MountSource::SameAs(_) => Ok(None),
        })
        .collect()
}

/// Opens `sub_path` from the directory `root` without leaving it (`openat2` with
/// `RESOLVE_BENEATH`: no `..` above it, no absolute link, no link that leads out of it).
fn open_beneath(root: &Path, sub_path: &Path) -> Result<OwnedFd, Failure> {
    let dir = open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| Failure::new(root.display(), errno))?;
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    openat2(&dir, sub_path, how).map_err(|errno| {
        let at = root.join(sub_path);
        if errno == Errno::EXDEV {
            Failure {
                kind: "denied",
                message: format!(
                    "{}: the subPath leads out of its volume {} (through a symbolic link); a \
                     subPath stays inside its volume",
                    at.display(),
                    root.display()
                ),
            }
        } else {
            Failure::new(at.display(), errno)
        }
    })
}

/// The path through which an opened file is reached (for `mount`, which takes paths).
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Makes a tmpfs at `staging` holding every entry of `/`, and makes it the root; the old root
/// stays at [`OLD_ROOT`] until the volumes, whose sources are in it, are bound (a mount can be
/// bound only from the namespace's tree).
fn new_root(staging: &Path) -> Result<(), Failure> {
    mount_tmpfs(staging, "mode=0755")?;
    // What is bound below must not hold the new root itself.
    mount(
        None::<&str>,
        staging,
        None::<&str>,
        MsFlags::MS_UNBINDABLE,
        None::<&str>,
    )
    .map_err(|errno| Failure::new("cannot prepare the new root", errno))?;
    replicate_entries(Path::new("/"), staging)?;
    chdir(staging).map_err(|errno| Failure::new(staging.display(), errno))?;
    let old_root = &OLD_ROOT[1..];
    fs::DirBuilder::new()
        .mode(0o700)
        .create(old_root)
        .map_err(|error| io_failure(OLD_ROOT, &error))?;
    pivot_root(".", old_root).map_err(|errno| Failure::new("cannot change the root", errno))?;
    chdir("/").map_err(|errno| Failure::new("/", errno))
}

/// A tmpfs at `target`.
fn mount_tmpfs(target: &Path, options: &str) -> Result<(), Failure> {
    mount(
        Some("tmpfs"),
        target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options),
    )
    .map_err(|errno| {
        Failure::new(
            format!("cannot mount a tmpfs at {}", target.display()),
            errno,
        )
    })
}

/// Puts into `to` (an empty tmpfs) each entry of the directory `from`: directories and files
/// bound (with what is mounted beneath them), symbolic links copied. An entry that cannot be
/// bound (one this user may not reach) is left out.
fn replicate_entries(from: &Path, to: &Path) -> Result<(), Failure> {
    let entries = fs::read_dir(from).map_err(|error| io_failure(from.display(), &error))?;
    for entry in entries.flatten() {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            if let Ok(link) = fs::read_link(&source) {
                let _ = std::os::unix::fs::symlink(link, &target);
            }
            continue;
        }
        let made = if kind.is_dir() {
            fs::DirBuilder::new().mode(0o755).create(&target)
        } else {
            fs::File::create(&target).map(drop)
        };
        if made.is_ok() && bind(&source, &target).is_err() {
            let _ = if kind.is_dir() {
                fs::remove_dir(&target)
            } else {
                fs::remove_file(&target)
            };
        }
    }
    Ok(())
}

/// Binds `source` (and what is mounted beneath it) at `target`.
fn bind(source: &Path, target: &Path) -> Result<(), Errno> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
}

/// Mounts one volume at its target, made where missing (writable: [`setup`] makes it read-only
/// after); the target, found in the new root.
fn apply(
    mount: &Mount,
    source: Option<&OwnedFd>,
    ours: &mut HashSet<PathBuf>,
) -> Result<PathBuf, Failure> {
    let is_dir = match source {
        Some(fd) => nix::sys::stat::fstat(fd)
            .map(|stat| SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR)
            .map_err(|errno| Failure::new(mount.target.display(), errno))?,
        None => true,
    };
    let target = mount_point(&mount.target, is_dir, ours)?;
    let context = || format!("cannot mount {}", mount.target.display());
    match (&mount.source, source) {
        (MountSource::Tmpfs(size), _) => {
            let options = size.map_or_else(
                || "mode=0777".to_owned(),
                |size| format!("mode=0777,size={size}"),
            );
            mount_tmpfs(&target, &options)?;
        }
        (MountSource::Bind(_) | MountSource::Beneath { .. }, Some(fd)) => {
            bind(&fd_path(fd), &target).map_err(|errno| Failure::new(context(), errno))?;
        }
        (MountSource::SameAs(first), _) => {
            // Mounted already (the mounts are in order, none read-only yet): found as then.
            let first = mount_point(first, true, ours)?;
            bind(&first, &target).map_err(|errno| Failure::new(context(), errno))?;
        }
        (MountSource::Bind(_) | MountSource::Beneath { .. }, None) => {
            return Err(Failure::new(mount.target.display(), Errno::EBADF));
        }
    }
    Ok(target)
}

/// Remounts the mount at `target` read-only, keeping the other flags it has (a user namespace
/// may not drop them).
fn read_only(target: &Path) -> Result<(), Errno> {
    let kept = statvfs(target)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (has, keep) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(has) {
            flags |= keep;
        }
    }
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
}

/// The mount point for `target` in the new root, with symbolic links resolved inside it: made
/// (a directory, or an empty file for a file's mount) where missing, in a directory of ours or
/// one shadowed for it.
fn mount_point(
    target: &Path,
    is_dir: bool,
    ours: &mut HashSet<PathBuf>,
) -> Result<PathBuf, Failure> {
    let mut pending: Vec<OsString> = components(target);
    pending.reverse();
    let mut at = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop() {
        let next = at.join(&name);
        let last = pending.is_empty();
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Failure::new(target.display(), Errno::ELOOP));
                }
                let link =
                    fs::read_link(&next).map_err(|error| io_failure(next.display(), &error))?;
                if link.is_absolute() {
                    at = PathBuf::from("/");
                }
                let mut more = components(&link);
                more.reverse();
                pending.extend(more);
            }
            Ok(meta) if meta.is_dir() => at = next,
            Ok(_) if last && !is_dir => at = next,
            Ok(_) => return Err(Failure::new(next.display(), Errno::ENOTDIR)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                if !ours.contains(&at) {
                    shadow(&at)?;
                    ours.insert(at.clone());
                }
                let made = if last && !is_dir {
                    fs::File::create(&next).map(drop)
                } else {
                    fs::DirBuilder::new().mode(0o755).create(&next)
                };
                made.map_err(|error| io_failure(next.display(), &error))?;
                ours.insert(next.clone());
                at = next;
            }
            Err(error)
                if error.kind() == io::ErrorKind::PermissionDenied && !ours.contains(&at) =>
            {
                // A directory this user may not search (`/root`): shadowed by an empty one, as
                // nothing in it is the replica's to see; then looked into again.
                shadow(&at)?;
                ours.insert(at.clone());
                pending.push(name);
            }
            Err(error) => return Err(io_failure(next.display(), &error)),
        }
    }
    Ok(at)
}

/// A path's normal components (`.` and the root left out; `..` kept, for links).
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsStr::new("..").to_os_string()),
            _ => None,
        })
        .collect()
}

/// Covers the directory `dir` with a tmpfs holding its entries (bound from beneath), so that a
/// mount point can be made in it without writing to the directory itself; with none when this
/// user may not list them.
fn shadow(dir: &Path) -> Result<(), Failure> {
    let under = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| Failure::new(dir.display(), errno))?;
    mount_tmpfs(dir, "mode=0755")?;
    match replicate_entries(&fd_path(&under), dir) {
        Err(failure) if failure.kind == "denied" => Ok(()),
        done => done,
    }
}
