//! `trainctl version`: this client's version and, when one runs, the local server's version and
//! address, as `kubectl version` prints a client's and a server's version. The server is found
//! as the other commands find it (`server.json` in the state directory, which also says its
//! version) and asked `GET /healthz`, so that the file a killed server left behind is not taken
//! for a running server.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::VersionArgs;
use crate::client::SERVER_FILE;
use crate::output;

/// How long the server has to answer `/healthz`: it is on this machine.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// The versions, as `-o json|yaml` prints them (kubectl's `clientVersion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client_version: VersionInfo,
    /// The running server's version; absent when none runs (or with `--client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<VersionInfo>,
    /// The running server's URL; absent when none runs (or with `--client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    server_address: Option<String>,
}

/// A build's version, in the fields of Kubernetes' `version.Info` that trainctl knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionInfo {
    major: String,
    minor: String,
    git_version: String,
    platform: String,
}

impl VersionInfo {
    /// This binary's.
    fn this_binary() -> VersionInfo {
        VersionInfo::of(env!("CARGO_PKG_VERSION"))
    }

    /// A trainctl of `version` (`0.1.0`) on this platform (a server runs on this machine).
    fn of(version: &str) -> VersionInfo {
        let mut parts = version.split('.');
        VersionInfo {
            major: parts.next().unwrap_or_default().to_owned(),
            minor: parts.next().unwrap_or_default().to_owned(),
            git_version: format!("v{version}"),
            platform: format!(
                "{}/{}",
                std::env::consts::OS,
                go_arch(std::env::consts::ARCH)
            ),
        }
    }
}

/// The architecture as Go (and so kubectl's `platform`) names it: `amd64`, `arm64`.
fn go_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// What `server.json` holds that matters here.
#[derive(Deserialize)]
struct ServerFile {
    url: String,
    /// Empty from a server older than this field.
    #[serde(default)]
    version: String,
}

/// A server that answers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunningServer {
    url: String,
    /// Its version, when it says it.
    version: Option<String>,
}

/// Prints the versions. `in_cluster` (`--kube`): the client's only, as the local server is not
/// the cluster's.
pub fn run(args: &VersionArgs, state: Option<&Path>, in_cluster: bool) -> anyhow::Result<ExitCode> {
    let server = if args.client || in_cluster {
        None
    } else {
        Some(running_server(state))
    };
    let running = server.clone().flatten();
    let versions = Versions {
        client_version: VersionInfo::this_binary(),
        server_version: running
            .as_ref()
            .and_then(|server| server.version.as_deref())
            .map(VersionInfo::of),
        server_address: running.map(|server| server.url),
    };
    let mut out = io::stdout().lock();
    if let Some(format) = args.output {
        output::write(&mut out, &versions, format)?;
    } else {
        writeln!(
            out,
            "Client Version: {}",
            versions.client_version.git_version
        )?;
        match server {
            None => {}
            Some(None) => writeln!(out, "Server: not running")?,
            Some(Some(server)) => {
                if let Some(version) = &server.version {
                    writeln!(out, "Server Version: v{version}")?;
                }
                writeln!(out, "Server Address: {}", server.url)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The server of the state directory, when one answers there. The directory is not created (nor
/// restricted) for this: one that does not exist has no server.
fn running_server(state: Option<&Path>) -> Option<RunningServer> {
    let dir: PathBuf = match state {
        Some(dir) => dir.to_owned(),
        None => dirs::data_dir()?.join("trainctl"),
    };
    let text = std::fs::read(dir.join(SERVER_FILE)).ok()?;
    let server: ServerFile = serde_json::from_slice(&text).ok()?;
    let url = server.url.trim_end_matches('/').to_owned();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        // The server is on loopback: a proxy from the environment must not get in between.
        .proxy(None)
        .timeout_global(Some(HEALTH_TIMEOUT))
        .build()
        .new_agent();
    let mut answer = agent.get(format!("{url}/healthz")).call().ok()?;
    let healthy = answer.status().is_success()
        && answer
            .body_mut()
            .read_to_string()
            .is_ok_and(|body| body.trim() == "ok");
    healthy.then(|| RunningServer {
        url,
        version: (!server.version.is_empty()).then_some(server.version),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_version_is_the_crates() {
        let info = VersionInfo::this_binary();
        assert_eq!(info.git_version, format!("v{}", env!("CARGO_PKG_VERSION")));
        assert_eq!(
            format!("{}.{}", info.major, info.minor),
            env!("CARGO_PKG_VERSION")
                .rsplit_once('.')
                .map(|(major_minor, _)| major_minor.to_owned())
                .unwrap_or_default()
        );
        assert!(info.platform.starts_with("linux/"), "{}", info.platform);
    }

    #[test]
    fn architectures_are_named_as_go_names_them() {
        assert_eq!(go_arch("x86_64"), "amd64");
        assert_eq!(go_arch("aarch64"), "arm64");
        assert_eq!(go_arch("riscv64"), "riscv64");
    }

    #[test]
    fn no_server_file_means_no_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(running_server(Some(dir.path())), None);
        std::fs::write(
            dir.path().join(SERVER_FILE),
            r#"{"url": "http://127.0.0.1:1", "pid": 1}"#,
        )
        .expect("write");
        assert_eq!(running_server(Some(dir.path())), None, "nothing answers");
    }
}
