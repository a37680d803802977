//! `trainctl tensorboard`: TensorBoard itself on the event files of this machine's jobs, one
//! run per job (`--logdir_spec NAME:DIR,...`), so that jobs trained with different settings are
//! compared side by side.
//!
//! Each job's event files are found where the dashboard's curves are
//! ([`event_roots`]: its own `TRAINCTL_TENSORBOARD_DIR`, then `<claim>/<job name>`), and taken
//! from the first of those that has any, as the curves are. trainctl then becomes TensorBoard
//! (`exec`): Ctrl-C stops it, and no process of trainctl's is left beside it.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Context;
use trainctl_events::Places;
use trainctl_local::claims::event_roots;
use trainctl_local::store::JobRecord;

use crate::backend::{Jobs, Local};
use crate::cli::TensorboardArgs;
use crate::selection::Selection;
use crate::target::DEFAULT_NAMESPACE;
use crate::view::description::spec::shell_quote;

/// The program started, looked for on `PATH`.
const PROGRAM: &str = "tensorboard";

/// One job as a run of TensorBoard: its name there and the directory of its event files.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Run {
    name: String,
    dir: PathBuf,
}

/// Finds the jobs named and their event files, then prints TensorBoard's address and starts it
/// on them in this process's place (or, with `--print`, prints its command line). An error when
/// a job does not exist or has written no event files yet, or when TensorBoard is not installed.
pub fn run(args: &TensorboardArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    if !args.host.is_loopback() && !args.allow_non_loopback {
        anyhow::bail!(
            "refusing to serve TensorBoard on {}: not a loopback address, and TensorBoard asks \
             for no password (pass --allow-non-loopback to accept it, or forward the port: ssh \
             -L {port}:127.0.0.1:{port} host)",
            args.host,
            port = args.port
        );
    }
    let selection = match Selection::read(
        &args.jobs.words,
        &args.jobs.files,
        args.jobs.namespace.as_deref(),
    )? {
        Ok(selection) => selection,
        Err(code) => return Ok(code),
    };
    let namespace = args.jobs.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let targets = selection.targets(namespace, "tensorboard")?;
    let runs = {
        let local = Local::new(state)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let mut records: Vec<JobRecord> = Vec::new();
        for target in &targets {
            let record = runtime.block_on(local.job(target, "tensorboard"))?;
            if !records.iter().any(|seen| seen.uid == record.uid) {
                records.push(record);
            }
        }
        let store = local.store()?;
        let names = run_names(&records);
        let mut runs = Vec::new();
        for (record, name) in records.iter().zip(names) {
            let roots = event_roots(store, record)?;
            let dir = with_event_files(&roots).ok_or_else(|| no_event_files(record, &roots))?;
            runs.push(Run { name, dir });
        }
        runs
    };
    let address = SocketAddr::new(args.host, port(args)?);
    let arguments = tensorboard_args(&runs, address)?;
    if args.print {
        let words: Vec<String> = std::iter::once(PROGRAM.to_owned())
            .chain(arguments.iter().map(|arg| shell_quote(arg)))
            .collect();
        println!("{}", words.join(" "));
        return Ok(ExitCode::SUCCESS);
    }
    let program = find_program(PROGRAM).ok_or_else(not_installed)?;
    for run in &runs {
        eprintln!("run {}: {}", run.name, run.dir.display());
    }
    println!("TensorBoard: http://{address}/ (Ctrl-C stops it)");
    let failure = Command::new(&program).args(&arguments).exec();
    Err(anyhow::Error::new(failure).context(format!("cannot start {}", program.display())))
}

/// The port asked for; for 0, one that is free now on the host (free, too, when TensorBoard
/// binds it a moment later, unless another program took it meanwhile), so that the address
/// printed is where TensorBoard serves.
fn port(args: &TensorboardArgs) -> anyhow::Result<u16> {
    if args.port != 0 {
        return Ok(args.port);
    }
    let listener = TcpListener::bind((args.host, 0))
        .with_context(|| format!("cannot find a free port on {}", args.host))?;
    Ok(listener.local_addr()?.port())
}

/// TensorBoard's arguments: `--logdir_spec NAME:DIR,... --host HOST --port PORT`.
fn tensorboard_args(runs: &[Run], address: SocketAddr) -> anyhow::Result<Vec<String>> {
    Ok(vec![
        "--logdir_spec".to_owned(),
        logdir_spec(runs)?,
        "--host".to_owned(),
        address.ip().to_string(),
        "--port".to_owned(),
        address.port().to_string(),
    ])
}

/// TensorBoard's `NAME:DIR,...`. TensorBoard splits it at commas and each at its first colon: a
/// directory with a comma (or not UTF-8) cannot be given to it.
fn logdir_spec(runs: &[Run]) -> anyhow::Result<String> {
    let mut parts = Vec::new();
    for run in runs {
        let dir = run
            .dir
            .to_str()
            .filter(|dir| !dir.contains(','))
            .with_context(|| {
                format!(
                    "TensorBoard cannot be given the directory {} (of run {}): its --logdir_spec \
                 takes no comma and only UTF-8; give it a link to the directory instead \
                 (tensorboard --logdir LINK)",
                    run.dir.display(),
                    run.name
                )
            })?;
        parts.push(format!("{}:{dir}", run.name));
    }
    Ok(parts.join(","))
}

/// Each job's run name: its name, else (two jobs of one name) `NAMESPACE/NAME`, else
/// `NAMESPACE/KIND/NAME`, the shortest that tells every job apart.
fn run_names(records: &[JobRecord]) -> Vec<String> {
    let spellings: [fn(&JobRecord) -> String; 3] = [
        |record| record.name.clone(),
        |record| format!("{}/{}", record.namespace, record.name),
        |record| {
            format!(
                "{}/{}/{}",
                record.namespace,
                record.kind.singular(),
                record.name
            )
        },
    ];
    for spell in &spellings[..2] {
        let names: Vec<String> = records.iter().map(spell).collect();
        if names.iter().collect::<BTreeSet<_>>().len() == names.len() {
            return names;
        }
    }
    records.iter().map(spellings[2]).collect()
}

/// The first of `roots` that holds a scalar, made absolute: where the dashboard's curves come
/// from too.
fn with_event_files(roots: &[PathBuf]) -> Option<PathBuf> {
    let mut places = Places::default();
    places.refresh(roots.to_vec());
    let root = places.first_with_series()?.root();
    Some(std::path::absolute(root).unwrap_or_else(|_| root.to_owned()))
}

/// The error for a job whose event files are not there (yet).
fn no_event_files(record: &JobRecord, roots: &[PathBuf]) -> anyhow::Error {
    let places: Vec<String> = roots
        .iter()
        .map(|root| root.display().to_string())
        .collect();
    anyhow::anyhow!(
        "{} \"{}\" has written no TensorBoard event files (yet): trainctl looks for them in {}; \
         its replicas are given the first in TRAINCTL_TENSORBOARD_DIR \
         (tf.keras.callbacks.TensorBoard(log_dir=os.environ[\"TRAINCTL_TENSORBOARD_DIR\"]))",
        record.kind.singular(),
        record.name,
        places.join(", ")
    )
}

/// What to do when TensorBoard is not on `PATH`.
fn not_installed() -> anyhow::Error {
    anyhow::anyhow!(
        "`{PROGRAM}` was not found on PATH: install it with `pip install tensorboard` (in a \
         virtualenv, then activate it), or, in trainctl's repository, use the examples' \
         environment: PATH=\"$(scripts/python-env):$PATH\" trainctl tensorboard ..."
    )
}

/// The executable file `program` in the first directory of `PATH` that has one.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, dir: &str) -> Run {
        Run {
            name: name.to_owned(),
            dir: dir.into(),
        }
    }

    #[test]
    fn each_job_is_one_named_run_of_the_logdir_spec() {
        let spec = logdir_spec(&[run("lr-01", "/s/tb/u1"), run("lr-001", "/s/tb/u2")]);
        assert_eq!(spec.expect("a spec"), "lr-01:/s/tb/u1,lr-001:/s/tb/u2");
    }

    #[test]
    fn a_directory_with_a_comma_is_refused() {
        let error = logdir_spec(&[run("a", "/data/x,y")]).expect_err("a comma");
        assert!(
            error.to_string().contains("/data/x,y (of run a)"),
            "{error}"
        );
    }
}
