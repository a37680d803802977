//! Streaming a job's logs: one replica's file, or every replica's interleaved line by line with
//! `worker-0 | ` prefixes; with `follow`, until the job has finished and every file is read.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use trainctl_local::process::logs::LogReader;

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

/// The largest piece read from one file at a time.
const CHUNK: usize = 64 * 1024;

/// One replica's log, read so far: its rotated files, oldest first, then the one written to.
struct Tail {
    reader: LogReader,
    /// A line not finished yet (only when lines are prefixed).
    partial: Vec<u8>,
}

/// A job's logs, as a stream of text pieces.
pub struct LogStream {
    supervisor: Arc<Supervisor>,
    uid: String,
    replica: Option<String>,
    follow: bool,
    tails: BTreeMap<String, Tail>,
    done: bool,
}

impl LogStream {
    /// The logs of job `uid`: one replica's (`worker-0`) or all.
    #[must_use]
    pub fn new(
        supervisor: Arc<Supervisor>,
        uid: String,
        replica: Option<String>,
        follow: bool,
    ) -> LogStream {
        LogStream {
            supervisor,
            uid,
            replica,
            follow,
            tails: BTreeMap::new(),
            done: false,
        }
    }

    /// The stream of pieces.
    pub fn into_stream(self) -> impl Stream<Item = Result<Vec<u8>, std::io::Error>> + Send {
        futures_util::stream::unfold(self, |mut logs| async move {
            loop {
                if logs.done {
                    return None;
                }
                let finished = logs.refresh();
                let piece = logs.read();
                if !piece.is_empty() {
                    return Some((Ok(piece), logs));
                }
                if !logs.follow || finished {
                    logs.done = true;
                    let rest = logs.flush_partial();
                    if rest.is_empty() {
                        return None;
                    }
                    return Some((Ok(rest), logs));
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }

    /// Learns of new replicas; whether the job has finished (or is gone).
    fn refresh(&mut self) -> bool {
        let Ok((sources, finished)) = self.supervisor.log_sources(&self.uid) else {
            return true;
        };
        for (name, path) in sources {
            if self.replica.as_ref().is_some_and(|wanted| *wanted != name) {
                continue;
            }
            self.tails.entry(name).or_insert_with(|| Tail {
                reader: LogReader::new(path),
                partial: Vec::new(),
            });
        }
        finished
    }

    /// Whatever the files have gained, prefixed line by line unless one replica was asked for.
    fn read(&mut self) -> Vec<u8> {
        let prefixed = self.replica.is_none();
        let width = self.tails.keys().map(String::len).max().unwrap_or(0);
        let mut out = Vec::new();
        for (name, tail) in &mut self.tails {
            let mut buffer = vec![0_u8; CHUNK];
            let Ok(read) = tail.reader.read(&mut buffer) else {
                continue;
            };
            let data = &buffer[..read];
            if !prefixed {
                out.extend_from_slice(data);
                continue;
            }
            tail.partial.extend_from_slice(data);
            if let Some(end) = tail.partial.iter().rposition(|&b| b == b'\n') {
                let lines: Vec<u8> = tail.partial.drain(..=end).collect();
                for line in lines.split_inclusive(|&b| b == b'\n') {
                    out.extend_from_slice(format!("{name:<width$} | ").as_bytes());
                    out.extend_from_slice(line);
                }
            }
        }
        out
    }

    /// The unfinished last lines, each ended, at the end of the stream.
    fn flush_partial(&mut self) -> Vec<u8> {
        let width = self.tails.keys().map(String::len).max().unwrap_or(0);
        let mut out = Vec::new();
        for (name, tail) in &mut self.tails {
            if !tail.partial.is_empty() {
                out.extend_from_slice(format!("{name:<width$} | ").as_bytes());
                out.append(&mut tail.partial);
                out.push(b'\n');
            }
        }
        out
    }
}
