//! How the CLI finds the server: `server.json` (its URL and pid) and `server.token` (the bearer
//! token), both written with mode 0600 in the state directory, each by a rename so that no reader
//! ever sees half a file ([`write_private`]: the temporary file is a new one, never a link or
//! another user's file).

use std::path::Path;

use serde::{Deserialize, Serialize};
use trainctl_local::state_dir::write_private;

/// The file with the server's address.
pub const ADDRESS_FILE: &str = "server.json";
/// The file with the server's bearer token.
pub const TOKEN_FILE: &str = "server.token";

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

/// Writes the token, then the address, into `state_dir`.
pub fn publish(state_dir: &Path, address: &ServerAddress, token: &str) -> std::io::Result<()> {
    write_private(&state_dir.join(TOKEN_FILE), token.as_bytes())?;
    let json = serde_json::to_vec_pretty(address).map_err(std::io::Error::other)?;
    write_private(&state_dir.join(ADDRESS_FILE), &json)
}

/// Removes `server.json` when it still names this process (on a clean stop).
pub fn withdraw(state_dir: &Path) {
    let path = state_dir.join(ADDRESS_FILE);
    let ours = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ServerAddress>(&bytes).ok())
        .is_some_and(|address| address.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

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
