//! The state directory is its owner's alone: it holds the database (jobs, their Secrets), the
//! replicas' logs (whatever they print), the server's token and the shim's socket (a connection
//! runs commands as its owner).
//!
//! [`prepare`] is the one way in, for every command that uses the directory: it creates it with
//! mode 0700, restricts an existing one that others may enter to 0700, and refuses, as ssh does,
//! one owned by another user. Files are created with mode 0600 whatever the umask
//! ([`create_private`], [`write_private`]); [`restrict_file`] tightens one an older trainctl left
//! readable by others.

use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

use nix::unistd::{Uid, User, geteuid};

/// The mode of the state directory and of every directory in it.
pub const DIR_MODE: u32 = 0o700;

/// The mode of every file trainctl creates in the state directory.
pub const FILE_MODE: u32 = 0o600;

/// The permission bits that let users other than the owner in.
const OTHERS: u32 = 0o077;

/// Why the state directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    /// The directory could not be created (or is not a directory).
    #[error("cannot create the state directory {dir}: {source}")]
    Create {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The directory's owner and mode could not be read.
    #[error("cannot read the owner and mode of the state directory {dir}: {source}")]
    Inspect {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Another user owns the directory.
    #[error(
        "the state directory {dir} is owned by {owner}, not by you ({me}): refusing to use it, \
         since its owner could read and change what trainctl keeps there (Secrets in the database \
         and logs, the server's token, the socket that starts replicas as you); use a directory \
         of your own (--state-dir or TRAINCTL_HOME), or have {owner} give it to you (chown)"
    )]
    NotOwned {
        /// The state directory.
        dir: PathBuf,
        /// Its owner: `name (uid N)`.
        owner: String,
        /// This process's user: `name (uid N)`.
        me: String,
    },
    /// The directory's path is a symbolic link of another user's, who could point it elsewhere
    /// at any time.
    #[error(
        "the state directory {dir} is a symbolic link owned by {owner}, not by you ({me}): \
         refusing to follow it, since its owner could point it at another directory at any time; \
         use a directory of your own (--state-dir or TRAINCTL_HOME), or the link's target itself"
    )]
    ForeignLink {
        /// The state directory.
        dir: PathBuf,
        /// The link's owner: `name (uid N)`.
        owner: String,
        /// This process's user: `name (uid N)`.
        me: String,
    },
    /// The directory could not be restricted to its owner.
    #[error(
        "the state directory {dir} is open to other users (mode {mode:03o}) and cannot be \
         restricted to you (chmod 700): {source}"
    )]
    Restrict {
        /// The state directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Why.
        source: io::Error,
    },
}

/// An existing state directory that [`prepare`] restricted to its owner: to be said once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restricted {
    /// The state directory.
    pub dir: PathBuf,
    /// Its permission bits before.
    pub was: u32,
}

impl fmt::Display for Restricted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the state directory {} was open to other users (mode {:03o}): restricted it to you \
             (mode 700)",
            self.dir.display(),
            self.was
        )
    }
}

/// Makes `dir` ready for trainctl: creates it (and missing parents) with mode 0700, refuses it
/// when another user owns it (or owns the symbolic link it is), and restricts it to 0700 when
/// others may enter it, answering [`Restricted`] then (for the caller to say so).
pub fn prepare(dir: &Path) -> Result<Option<Restricted>, StateDirError> {
    let me = geteuid();
    if let Ok(link) = fs::symlink_metadata(dir)
        && link.is_symlink()
        && link.uid() != me.as_raw()
        && link.uid() != 0
    {
        return Err(StateDirError::ForeignLink {
            dir: dir.to_owned(),
            owner: user_name(Uid::from_raw(link.uid())),
            me: user_name(me),
        });
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|source| StateDirError::Create {
            dir: dir.to_owned(),
            source,
        })?;
    let metadata = fs::metadata(dir).map_err(|source| StateDirError::Inspect {
        dir: dir.to_owned(),
        source,
    })?;
    if metadata.uid() != me.as_raw() {
        return Err(StateDirError::NotOwned {
            dir: dir.to_owned(),
            owner: user_name(Uid::from_raw(metadata.uid())),
            me: user_name(me),
        });
    }
    let mode = metadata.mode() & 0o777;
    if mode & OTHERS == 0 {
        return Ok(None);
    }
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(|source| {
        StateDirError::Restrict {
            dir: dir.to_owned(),
            mode,
            source,
        }
    })?;
    Ok(Some(Restricted {
        dir: dir.to_owned(),
        was: mode,
    }))
}

/// Creates the file `path`, which must not exist (not even as a symbolic link), with mode 0600
/// whatever the umask, open for reading and writing.
pub fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .mode(FILE_MODE)
        .open(path)
}

/// Restricts the file `path` to mode 0600 when it is this user's and others may read it; a
/// missing file, or another user's, is left as it is.
pub fn restrict_file(path: &Path) -> io::Result<()> {
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let ours = metadata.is_file() && metadata.uid() == geteuid().as_raw();
    if ours && metadata.mode() & OTHERS != 0 {
        fs::set_permissions(path, Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` with mode 0600 so that no reader ever sees half of it: to a new
/// temporary file beside it (`<path>.<pid>.tmp`, opened without following a link, failing if it
/// exists), then a rename. A temporary file left by an earlier process of this user with the same
/// pid is removed first; anything else in its place is refused.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let mut file = match create_private(&temporary) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            remove_stale(&temporary)?;
            create_private(&temporary)?
        }
        created => created?,
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// Removes the temporary file `path` when it is a file of this user's; refuses anything else.
fn remove_stale(path: &Path) -> io::Result<()> {
    let metadata = fs::symlink_metadata(path)?;
    let owner = Uid::from_raw(metadata.uid());
    if !metadata.is_file() || owner != geteuid() {
        let what = if metadata.is_symlink() {
            "a symbolic link"
        } else if metadata.is_file() {
            "a file"
        } else {
            "something other than a file"
        };
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} is in the way: it is {what} owned by {}, not a temporary file of yours; remove it",
                path.display(),
                user_name(owner)
            ),
        ));
    }
    fs::remove_file(path)
}

/// How much of a reserve is written at a time.
const RESERVE_BLOCK: usize = 64 * 1024;

/// Keeps `size` bytes in the file `path` (mode 0600), writing what it lacks: room that a write
/// on a full disk takes by deleting it ([`release_reserve`]). The bytes do not compress: a
/// filesystem that compresses (btrfs, ZFS) would keep zeros in no space at all. On a full disk,
/// what could be written stays kept.
pub fn keep_reserve(path: &Path, size: u64) -> io::Result<()> {
    if fs::metadata(path).is_ok_and(|metadata| metadata.len() >= size) {
        return Ok(());
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)?;
    let block = incompressible_block();
    let mut kept = file.metadata()?.len();
    while kept < size {
        let length = block
            .len()
            .min(usize::try_from(size - kept).unwrap_or(usize::MAX));
        file.write_all(&block[..length])?;
        kept += length as u64;
    }
    Ok(())
}

/// Deletes the reserve `path`, giving its space to the write that needs it; whether there was
/// one to delete.
pub fn release_reserve(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// [`RESERVE_BLOCK`] bytes of a xorshift sequence: nothing a filesystem could compress.
fn incompressible_block() -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..RESERVE_BLOCK / 8)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()
        })
        .collect()
}

/// `name (uid N)`, or `uid N` for a uid with no user.
fn user_name(uid: Uid) -> String {
    match User::from_uid(uid) {
        Ok(Some(user)) => format!("{} (uid {uid})", user.name),
        _ => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests;
