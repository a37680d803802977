//! `mock-apiserver`: the mock Kubernetes API server as a process, for benchmarks and scripts.
//! Prints `listening on <url>` once it serves, then serves until interrupted.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use trainctl_mock_apiserver::{MockApiServer, Settings};

/// An in-memory Kubernetes API server serving what the trainctl operator uses.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// The address to listen on (port 0: a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Milliseconds every Kubernetes call waits before it is served.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// How many changes are remembered for watches to resume from.
    #[arg(long, default_value_t = Settings::default().history_limit)]
    history: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mock-apiserver: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let settings = Settings {
            latency: Duration::from_millis(args.latency_ms),
            history_limit: args.history,
        };
        let server = match MockApiServer::bind(args.listen, settings).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("mock-apiserver: cannot listen on {}: {error}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        println!("listening on {}", server.url());
        match tokio::signal::ctrl_c().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("mock-apiserver: cannot wait for Ctrl-C: {error}");
                ExitCode::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::Args;

    #[test]
    fn arguments_are_consistent() {
        Args::command().debug_assert();
    }
}
