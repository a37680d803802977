//! What the server and the shim say to each other: one JSON document a line each way on the
//! shim's socket.

use std::ffi::OsString;
use std::io::{self, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::process::cgroup::Limits;
use crate::process::logs::LogLimit;
use crate::process::mounts::Mounts;

/// What a server sends the shim.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Request {
    /// The server's environment, which the replicas it starts inherit.
    Hello { env: Vec<(OsString, OsString)> },
    /// Start a replica.
    Start(StartRequest),
    /// Start a replica with volumes: a request of its own, so that a shim from before volumes
    /// (which outlives servers) refuses it, rather than starting the command without them.
    StartMounted(StartRequest),
}

/// One replica to start.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StartRequest {
    pub(super) argv: Vec<String>,
    /// The pod's env and the job's marker, on top of the server's.
    pub(super) env: Vec<(String, String)>,
    pub(super) working_dir: Option<PathBuf>,
    pub(super) log_path: PathBuf,
    /// How large its log may grow (its output goes through a pump of the shim's, which rotates
    /// the log beyond it). The kubelet's default when a server from before this field does not
    /// say.
    #[serde(default)]
    pub(super) log_limit: LogLimit,
    pub(super) exit_file: PathBuf,
    /// The replica's volumes; none from a server before volumes.
    #[serde(default)]
    pub(super) mounts: Option<Mounts>,
    /// Its main container's limits, enforced in its cgroup; none from a server before limits.
    #[serde(default)]
    pub(super) limits: Limits,
}

/// What the shim sends a server.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Reply {
    /// The replica of the last `Start` runs with this pid (also its process group's id).
    Started { pid: i32 },
    /// The replica of the last `Start` could not be started.
    Failed { error: String, not_found: bool },
    /// A replica ended with this exit code; `oom_killed` when the kernel killed one of its
    /// processes for its memory limit (never, from a shim before limits).
    Exited {
        pid: i32,
        code: i32,
        #[serde(default)]
        oom_killed: bool,
    },
}

pub(super) fn send(stream: &mut UnixStream, message: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// A shim's refusal, said plainly when the shim is from before a request it was sent (one
/// started by an older trainctl, still running for the replicas it keeps).
pub(super) fn older_shim(error: String) -> String {
    if error.starts_with("not a shim request: unknown variant") {
        format!(
            "the shim that keeps this server's replicas was started by an older trainctl and \
             cannot mount volumes; stop the server, let its jobs end (or delete them), and start \
             it again ({error})"
        )
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The requests a shim from before volumes knew.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code, reason = "only deserialized, as an older shim does")]
    enum RequestBeforeVolumes {
        Hello { env: Vec<(OsString, OsString)> },
        Start(serde_json::Value),
    }

    fn start(mounts: Option<Mounts>) -> StartRequest {
        StartRequest {
            argv: vec!["true".to_owned()],
            env: Vec::new(),
            working_dir: None,
            log_path: PathBuf::from("/logs/worker-0.log"),
            log_limit: LogLimit::DEFAULT,
            exit_file: PathBuf::from("/logs/worker-0.exit"),
            mounts,
            limits: Limits::default(),
        }
    }

    #[test]
    fn a_shim_from_before_volumes_refuses_a_start_with_volumes_in_words_the_server_explains() {
        let mounts = Mounts {
            mounts: Vec::new(),
            staging: PathBuf::from("/state/mnt"),
            working_dir: PathBuf::from("/"),
        };
        let mounted =
            serde_json::to_string(&Request::StartMounted(start(Some(mounts)))).expect("serializes");
        let error = serde_json::from_str::<RequestBeforeVolumes>(&mounted)
            .expect_err("an older shim cannot read it");
        // What the older shim answers, and what the server makes of it.
        let said = older_shim(format!("not a shim request: {error}"));
        assert!(
            said.starts_with(
                "the shim that keeps this server's replicas was started by an older trainctl and \
                 cannot mount volumes; stop the server"
            ),
            "{said}"
        );
        // A start without volumes is the request it knew.
        let plain = serde_json::to_string(&Request::Start(start(None))).expect("serializes");
        assert!(serde_json::from_str::<RequestBeforeVolumes>(&plain).is_ok());
        assert_eq!(older_shim("no such file".to_owned()), "no such file");
    }
}
