//! Streaming a job's logs: one replica's, or every replica's interleaved line by line with
//! `worker-0 | ` prefixes; with `follow`, until the job has finished and every file is read.
//! Selected as the Kubernetes pod log API selects (`tailLines`, `sinceSeconds`, `timestamps`,
//! `previous`), with a separator line where a replica restarted, as `trainctl logs` prints
//! them (both read the replicas' logs with [`ReplicaLog`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::Stream;
use trainctl_local::process::logs::{LogSelection, ReplicaLog, previous_run};

use crate::supervisor::Supervisor;
use crate::view::JobView;

/// The replicas a job has or will have, as logs name them (`worker-0`): those recorded, and
/// `<type>-<index>` for every index below each replica type's `replicas` in its spec (a queued
/// job's replicas are not recorded yet).
pub fn replica_names(view: &JobView) -> Vec<String> {
    let mut names = Vec::new();
    let specs = view.job["spec"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(field, _)| field.ends_with("ReplicaSpecs"))
        .filter_map(|(_, specs)| specs.as_object())
        .flatten();
    for (replica_type, spec) in specs {
        let replicas = spec["replicas"].as_i64().unwrap_or(1);
        for index in 0..replicas {
            names.push(format!("{}-{index}", replica_type.to_ascii_lowercase()));
        }
    }
    for recorded in &view.replicas {
        if !names.contains(&recorded.name) {
            names.push(recorded.name.clone());
        }
    }
    names
}

/// How often a followed log is checked for more.
const POLL: Duration = Duration::from_millis(100);

/// How much output is gathered into one piece of the stream.
const PIECE: usize = 64 * 1024;

/// How many pieces wait for a client that reads slowly before the reading waits too.
const PIECES_AHEAD: usize = 4;

/// What a request asks of a job's logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// One replica (`worker-0`); every replica, prefixed, when `None`.
    pub replica: Option<String>,
    /// Stream until the job has finished and every log is read.
    pub follow: bool,
    /// Only the last lines of each log.
    pub tail_lines: Option<usize>,
    /// Only what was written within this many seconds.
    pub since_seconds: Option<u64>,
    /// Each line after its time (RFC 3339 with nanoseconds).
    pub timestamps: bool,
    /// Each replica's run before its last restart.
    pub previous: bool,
}

/// Why a request for the previous runs cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoPreviousRuns(String);

/// The run before the last of each replica of `sources` that `replica` asks for (all when
/// `None`); an error when the replica asked for has none, or no replica has. `job` names the
/// job in the error.
pub fn previous_runs(
    job: &str,
    sources: &[(String, PathBuf)],
    replica: Option<&str>,
) -> Result<BTreeMap<String, u32>, NoPreviousRuns> {
    let mut runs = BTreeMap::new();
    let mut missing = Vec::new();
    for (name, path) in sources {
        if replica.is_some_and(|wanted| wanted != name) {
            continue;
        }
        match previous_run(path) {
            Ok(run) => {
                runs.insert(name.clone(), run);
            }
            Err(why) => missing.push(format!("{name}: {why}")),
        }
    }
    if !runs.is_empty() {
        return Ok(runs);
    }
    Err(NoPreviousRuns(match replica {
        Some(name) => {
            let why = missing.first().map_or("it has not started", |why| {
                why.split_once(": ").map_or(why.as_str(), |(_, why)| why)
            });
            format!("previous terminated run of replica \"{name}\" of {job} not found: {why}")
        }
        None if missing.is_empty() => format!("{job} has no replica that ran: no previous run"),
        None => format!(
            "no replica of {job} has a previous terminated run ({})",
            missing.join("; ")
        ),
    }))
}

/// A job's logs, as a stream of text pieces.
pub struct LogStream {
    supervisor: Arc<Supervisor>,
    uid: String,
    query: LogQuery,
    /// With `previous`, the run to read of each replica.
    runs: Option<BTreeMap<String, u32>>,
    /// When the request came: `sinceSeconds` counts back from it.
    asked: SystemTime,
}

impl LogStream {
    /// The logs of job `uid` that `query` asks for; with `previous`, `runs` (from
    /// [`previous_runs`]) are the runs to read.
    #[must_use]
    pub fn new(
        supervisor: Arc<Supervisor>,
        uid: String,
        query: LogQuery,
        runs: Option<BTreeMap<String, u32>>,
    ) -> LogStream {
        LogStream {
            supervisor,
            uid,
            query,
            runs,
            asked: SystemTime::now(),
        }
    }

    /// The stream of pieces, read by a blocking task of its own (the files are read as they
    /// grow) that waits for the client when it is [`PIECES_AHEAD`] pieces ahead, and stops
    /// once the client has gone.
    pub fn into_stream(self) -> impl Stream<Item = Result<Vec<u8>, std::io::Error>> + Send {
        let (sender, receiver) = tokio::sync::mpsc::channel(PIECES_AHEAD);
        tokio::task::spawn_blocking(move || {
            let mut reading = Reading {
                stream: self,
                logs: BTreeMap::new(),
                piece: Vec::new(),
                sender,
            };
            reading.run();
        });
        futures_util::stream::unfold(receiver, |mut receiver| async move {
            let piece = receiver.recv().await?;
            Some((Ok(piece), receiver))
        })
    }

    /// The selection of `tailLines` and `sinceSeconds`, of the run `run` when given.
    fn selection(&self, run: Option<u32>) -> LogSelection {
        let since = self.query.since_seconds.and_then(|seconds| {
            let from = self.asked.checked_sub(Duration::from_secs(seconds))?;
            let since = from.duration_since(SystemTime::UNIX_EPOCH).ok()?;
            i64::try_from(since.as_nanos()).ok()
        });
        LogSelection {
            tail: self.query.tail_lines,
            // Before the epoch: everything.
            since: self.query.since_seconds.map(|_| since.unwrap_or(0)),
            run,
        }
    }
}

/// The reading of a [`LogStream`], on a blocking task.
struct Reading {
    stream: LogStream,
    /// Each replica's log, by name.
    logs: BTreeMap<String, ReplicaLog>,
    /// What was read and not sent yet.
    piece: Vec<u8>,
    sender: tokio::sync::mpsc::Sender<Vec<u8>>,
}

impl Reading {
    /// Reads until every log is read to its end (once, or, followed, once the job has
    /// finished), or the client has gone.
    fn run(&mut self) {
        let follow = self.stream.query.follow && self.stream.runs.is_none();
        loop {
            let finished = self.refresh();
            let at_end = !follow || finished;
            if self.read(at_end).is_err() || !self.send() || at_end {
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Learns of new replicas; whether the job has finished (or is gone).
    fn refresh(&mut self) -> bool {
        let Ok((sources, finished)) = self.stream.supervisor.log_sources(&self.stream.uid) else {
            return true;
        };
        for (name, path) in sources {
            if self.logs.contains_key(&name)
                || (self.stream.query.replica.as_ref()).is_some_and(|wanted| *wanted != name)
            {
                continue;
            }
            let run = match &self.stream.runs {
                Some(runs) => match runs.get(&name) {
                    Some(&run) => Some(run),
                    None => continue,
                },
                None => None,
            };
            let selection = self.stream.selection(run);
            self.logs.insert(name, ReplicaLog::new(path, selection));
        }
        finished
    }

    /// Reads what the logs have gained, prefixed line by line unless one replica was asked
    /// for, sending each full piece; an error when the client has gone.
    fn read(&mut self, at_end: bool) -> std::io::Result<()> {
        let prefixed = self.stream.query.replica.is_none();
        let timestamps = self.stream.query.timestamps;
        let width = self.logs.keys().map(String::len).max().unwrap_or(0);
        let Reading {
            logs,
            piece,
            sender,
            ..
        } = self;
        for (name, log) in logs.iter_mut() {
            let prefix = prefixed.then(|| format!("{name:<width$} | "));
            let read = log.read(at_end, &mut |item| {
                item.render(name, prefix.as_deref(), timestamps, piece);
                if piece.len() >= PIECE {
                    sender
                        .blocking_send(std::mem::take(piece))
                        .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
                }
                Ok(())
            });
            match read {
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Err(error),
                // A log that cannot be read (deleted with its job) has nothing more to give.
                Err(_) | Ok(()) => {}
            }
        }
        Ok(())
    }

    /// Sends what was read; whether the client is still there.
    fn send(&mut self) -> bool {
        self.piece.is_empty()
            || self
                .sender
                .blocking_send(std::mem::take(&mut self.piece))
                .is_ok()
    }
}
