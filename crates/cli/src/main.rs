//! `trainctl`: run Kubeflow `kubeflow.org/v1` training jobs (TFJob, PyTorchJob, ...) on this machine,
//! on a local control plane, or on Kubernetes. This binary is thin: it parses, calls the crates,
//! prints.

mod backend;
mod cli;
mod client;
mod cluster;
mod commands;
mod diagnostics;
mod machine;
mod output;
mod paint;
mod selection;
mod state;
mod summary;
mod table;
mod target;
mod terminal_text;
mod view;
mod wait_for;

use std::process::ExitCode;

use trainctl_local::process::mounts;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The helper that mounts a replica's volumes, then runs its command in its place: before
    // the parser, whose work every start of such a replica would pay for, and while this
    // process has one thread (see `trainctl_local::process::mounts`).
    if args.get(1).is_some_and(|arg| arg == mounts::HELPER_COMMAND) {
        return match mounts::parse_helper_args(&args[2..]) {
            Ok((spec, command)) => mounts::enter::enter_and_exec(&spec, &command),
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
        };
    }
    let cli = cli::Cli::parse_or_exit();
    match commands::run(cli) {
        Ok(code) => code,
        // The reader went away (`trainctl render ... | head`): nothing to say, as for the
        // tools that die of `SIGPIPE`.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` comes from writing to a pipe whose reader has gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| cause.downcast_ref::<serde_json::Error>()?.io_error_kind());
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// `error` and its causes on one line, each cause once: a message that already says its cause
/// (`cannot read X: permission denied`) does not get it again.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}
