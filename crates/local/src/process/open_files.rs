//! The open-file limit of the process that runs replicas (`trainctl run`, the server). Each
//! running replica holds [`FILES_PER_REPLICA`] files open there, so the soft limit a desktop
//! usually gives (1,024) would stop a job of a few hundred replicas half-started with "Too many
//! open files". Both raise the soft limit to the hard one at start ([`raise`]), and a job that
//! cannot fit under it is refused before any of its replicas starts ([`fits`]).

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Files a running replica holds open in the process that runs it: the pipe of its output, its
/// log file and the log's index (measured: 315 open with 100 replicas running).
pub const FILES_PER_REPLICA: u64 = 3;

/// Files that process holds whatever its replicas (the terminal, the state database and its
/// journal, the reaper's and the watchdog's pipes and sockets), with room to spare.
pub const FILES_BESIDE_REPLICAS: u64 = 64;

/// The limit assumed when it cannot be read: the usual soft limit.
const USUAL_LIMIT: u64 = 1024;

/// The open-file limit after [`raise`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit now: what the process may open.
    pub limit: u64,
    /// The soft limit before.
    pub before: u64,
    /// Why the soft limit could not be raised or read, when it could not.
    pub problem: Option<nix::Error>,
}

/// Raises the soft limit of open files to the hard one.
#[must_use]
pub fn raise() -> OpenFiles {
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => OpenFiles {
                limit: hard,
                before: soft,
                problem: None,
            },
            Err(problem) => OpenFiles {
                limit: soft,
                before: soft,
                problem: Some(problem),
            },
        },
        Ok((soft, _)) => OpenFiles {
            limit: soft,
            before: soft,
            problem: None,
        },
        Err(problem) => OpenFiles {
            limit: USUAL_LIMIT,
            before: USUAL_LIMIT,
            problem: Some(problem),
        },
    }
}

/// The open files a process running `replicas` replicas at once needs.
#[must_use]
pub fn needed(replicas: u64) -> u64 {
    replicas
        .saturating_mul(FILES_PER_REPLICA)
        .saturating_add(FILES_BESIDE_REPLICAS)
}

/// Whether this process may hold the files of `replicas` replicas running at once (besides
/// those of the jobs it runs already, which it is for the caller to count in); why not, and how
/// to make room, when it may not.
pub fn fits(replicas: u64) -> Result<(), String> {
    let limit = getrlimit(Resource::RLIMIT_NOFILE).map_or(USUAL_LIMIT, |(soft, _)| soft);
    let needed = needed(replicas);
    if needed <= limit {
        return Ok(());
    }
    Err(format!(
        "the job's {replicas} replicas need about {needed} open files ({FILES_PER_REPLICA} each, \
         and {FILES_BESIDE_REPLICAS} for trainctl), more than this process may open: {limit}; \
         raise the hard limit (`ulimit -Hn {needed}` as root, or `nofile` in \
         /etc/security/limits.conf) or run fewer replicas"
    ))
}

#[cfg(test)]
mod tests {
    use super::{needed, raise};

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let files = raise();
        let (soft, hard) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .expect("the limit reads");
        assert_eq!((files.limit, soft, hard), (hard, hard, hard));
        assert_eq!(files.problem, None);
    }

    #[test]
    fn each_replica_needs_its_files_beside_the_process_own() {
        assert_eq!(needed(0), 64);
        assert_eq!(needed(400), 1_264);
        assert_eq!(needed(u64::MAX), u64::MAX);
    }
}
