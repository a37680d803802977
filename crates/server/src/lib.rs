//! `trainctl server`: the local control plane. It keeps every submitted job in the state
//! database, queues them for this machine's capacity ([`queue`], with [`backfill`]), runs each
//! with the same runner as `trainctl run` ([`supervisor`]), says on its log what happens to each
//! job ([`journal`]), and serves the HTTP API of `docs/server-api.md` ([`api`]).

pub mod api;
pub mod backfill;
pub mod changes;
pub mod curves;
pub mod discovery;
pub mod journal;
pub mod metrics;
mod openapi;
pub mod queue;
pub mod quotas;
pub mod supervisor;
pub mod view;

pub use supervisor::{ServerConfig, Supervisor};

mod logs;
#[cfg(test)]
mod testing;

use std::net::SocketAddr;

use discovery::{PublishedCapacity, ServerAddress};
use trainctl_dashboard::{auth, connections};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The supervisor could not start.
    #[error(transparent)]
    Supervisor(#[from] supervisor::SupervisorError),
    /// A non-loopback address without `allow_non_loopback`.
    #[error(
        "refusing to listen on {0}: not a loopback address (pass --allow-non-loopback to accept it)"
    )]
    NotLoopback(SocketAddr),
    /// The socket, the state files or the signals failed.
    #[error("{operation}: {source}")]
    Io {
        /// What was being done.
        operation: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// Serves until `SIGINT` or `SIGTERM` on the state directory that `lock` holds (taken with
/// [`discovery::lock`] before anything is written there, and held until this returns): then
/// every run stops (its job stays unfinished, to run
/// again under the next server) and `server.json` is removed. `ready` hears the address once it
/// is published, with a one-time login code for the dashboard (`/#code=...`, usable once within
/// [`auth::START_CODE_LIFETIME`]). Slow or silent peers are bounded as
/// [`trainctl_dashboard::connections`] describes.
pub async fn serve(
    lock: discovery::ServerLock,
    config: ServerConfig,
    listen: SocketAddr,
    allow_non_loopback: bool,
    ready: impl FnOnce(&ServerAddress, &str),
) -> Result<(), ServeError> {
    if !listen.ip().is_loopback() {
        if !allow_non_loopback {
            return Err(ServeError::NotLoopback(listen));
        }
        tracing::warn!(
            "listening on {listen}, which is not a loopback address: anyone who reaches it with the token can run commands as you"
        );
    }
    let io = |operation: &str| {
        let operation = operation.to_owned();
        move |source| ServeError::Io { operation, source }
    };
    let state_dir = config.state_dir.clone();
    let capacity = PublishedCapacity {
        cpu_millis: config.settings.capacity.cpu_millis,
        memory_bytes: config.settings.capacity.memory_bytes,
        gpus: config.settings.capacity.gpus.clone(),
    };
    let open_files = raise_open_files_limit();
    let supervisor = Supervisor::start(config)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(io(&format!("cannot listen on {listen}")))?;
    let bound = listener
        .local_addr()
        .map_err(io("cannot read the bound address"))?;
    // Watching the database can fail: before the server says where it is.
    let changes = std::sync::Arc::new(
        changes::Changes::watch(&state_dir).map_err(supervisor::SupervisorError::from)?,
    );
    let token = auth::new_token();
    let address = ServerAddress {
        url: format!("http://{bound}"),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capacity: Some(capacity),
    };
    discovery::publish(&state_dir, &address, &token)
        .map_err(io("cannot write server.json and server.token"))?;
    let codes = std::sync::Arc::new(auth::LoginCodes::default());
    ready(&address, &codes.issue(auth::START_CODE_LIFETIME));
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(io("cannot watch for signals"))?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(io("cannot watch for signals"))?;
    let app = api::router(
        std::sync::Arc::clone(&supervisor),
        &token,
        changes.subscribe(),
        codes,
    );
    let watcher = std::sync::Arc::clone(&changes);
    let stop = async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        // The event streams end now, so that the connections drain at once.
        watcher.stop();
    };
    connections::serve(
        listener,
        app,
        connections::max_connections(open_files),
        stop,
    )
    .await;
    supervisor.shutdown().await;
    discovery::withdraw(&state_dir);
    drop(lock);
    Ok(())
}

/// Raises the soft limit of open files to the hard one (every job's run holds a database
/// connection, three files, and each replica its files: `trainctl_local::process::open_files`),
/// saying on the log when it cannot. The limit now.
fn raise_open_files_limit() -> u64 {
    let files = trainctl_local::process::open_files::raise();
    if let Some(problem) = files.problem {
        tracing::warn!(
            "cannot raise the open files limit from {}: {problem}",
            files.before
        );
    }
    files.limit
}
