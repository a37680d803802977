//! A job's logs on a cluster: the framework container's log of each of its pods, prefixed with
//! the replica (`worker-0 | `) as on this machine, selected as `kubectl logs` selects
//! (`--tail`, `--since`, `--timestamps`, `--previous`: the pod log API's `tailLines`,
//! `sinceSeconds`, `timestamps`, `previous`). Followed, every pod is streamed at once, a pod
//! that starts later (or a container that restarts, after a separator line as on this machine)
//! is streamed when it starts, and it ends when the job has finished and the logs of its
//! stopped containers are printed to their end. A pod's name finds its job and replica.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use futures_util::{AsyncRead, AsyncReadExt, StreamExt};
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::runtime::watcher;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use trainctl_api::JobKind;
use trainctl_api::log_lines::Restart;
use trainctl_engine::ReplicaSlot;
use trainctl_engine::naming::{JOB_NAME_LABEL, OPERATOR_NAME_LABEL};

use super::pods::{controller_uid, main_container, main_status, slot_of};
use super::{Cluster, ClusterError, ClusterJob, Operation, Resource};
use crate::view::prefixed::PrefixedLines;

/// How much of a log is read at a time.
const CHUNK: usize = 64 * 1024;

/// What `logs` asks of a job on a cluster.
#[derive(Debug, Clone, Copy)]
pub struct LogRequest<'a> {
    /// The job.
    pub job: &'a ClusterJob,
    /// One replica, printed as it is; `None`: every replica, each line prefixed.
    pub replica: Option<&'a ReplicaSlot>,
    /// The width of the replica names in the prefixes.
    pub width: usize,
    /// Keep printing until the job has finished.
    pub follow: bool,
    /// Only the last lines of each log (`--tail`).
    pub tail_lines: Option<usize>,
    /// Only what was written within this long (`--since`).
    pub since: Option<SignedDuration>,
    /// Each line after its time (`--timestamps`).
    pub timestamps: bool,
    /// Each container's run before its last restart (`--previous`).
    pub previous: bool,
}

/// What `logs` selects of each container's log, as `kubectl logs` asks the pod log API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LogOptions {
    /// Only the last lines (`tailLines`).
    pub tail_lines: Option<usize>,
    /// Only what was written within this long (`sinceSeconds`, rounded up to a second).
    pub since: Option<SignedDuration>,
    /// Each line after its time (`timestamps`).
    pub timestamps: bool,
    /// The container's run before its last restart (`previous`).
    pub previous: bool,
}

impl LogOptions {
    /// The parameters of a request for `container`'s log, followed or not; `selecting`: the
    /// log is one that ran before `logs` started, to which `--tail` and `--since` apply (a
    /// container that starts while followed is printed whole).
    fn params(&self, container: &str, follow: bool, selecting: bool) -> LogParams {
        LogParams {
            container: Some(container.to_owned()),
            follow,
            previous: self.previous,
            timestamps: self.timestamps,
            tail_lines: self
                .tail_lines
                .filter(|_| selecting)
                .map(|lines| i64::try_from(lines).unwrap_or(i64::MAX)),
            since_seconds: self.since.filter(|_| selecting).map(whole_seconds),
            ..LogParams::default()
        }
    }
}

/// `duration` in whole seconds, rounded up (the API takes no fraction, and at least 1).
fn whole_seconds(duration: SignedDuration) -> i64 {
    let seconds = duration.as_secs();
    let rounded = if duration.subsec_nanos() > 0 {
        seconds.saturating_add(1)
    } else {
        seconds
    };
    rounded.max(1)
}

/// A pod of a training job, as its name finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodReplica {
    /// The job's kind.
    pub kind: JobKind,
    /// The job's name.
    pub job: String,
    /// The replica the pod is.
    pub slot: ReplicaSlot,
}

impl LogRequest<'_> {
    /// The prefix of a slot's lines, or `None` to print them as they are.
    fn prefix(&self, slot: &ReplicaSlot) -> Option<String> {
        self.replica
            .is_none()
            .then(|| format!("{:<width$} | ", slot.to_string(), width = self.width))
    }

    /// Whether the slot's log is asked for.
    fn wants(&self, slot: &ReplicaSlot) -> bool {
        self.replica.is_none_or(|wanted| wanted == slot)
    }

    /// What is asked of each log.
    fn options(&self) -> LogOptions {
        LogOptions {
            tail_lines: self.tail_lines,
            since: self.since,
            timestamps: self.timestamps,
            previous: self.previous,
        }
    }
}

/// One run of a pod's framework container: the pod's uid and the container's restart count.
type Instance = (String, i32);

/// A log to read: which pod, which container, which prefix, and whether `--tail` and `--since`
/// apply to it.
struct LogSource {
    pod: String,
    container: String,
    prefix: Option<String>,
    selecting: bool,
}

/// Why copying a log stopped.
enum CopyError {
    /// The log could not be read.
    Read(std::io::Error),
    /// The output could not be written (a reader that has gone): said as it is.
    Write(std::io::Error),
}

impl Cluster {
    /// Prints the logs `request` asks for to `out`; `pods` are the job's pods, as
    /// [`Cluster::pods_of`] lists them. An error writing to `out` is returned as it is.
    pub async fn print_logs(
        &self,
        request: LogRequest<'_>,
        pods: &[Pod],
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        if request.follow {
            return Follower::new(self.clone(), request).run(out).await;
        }
        let options = request.options();
        let mut refused = None;
        let mut printed = false;
        for pod in pods {
            let Some((_, source)) = started(&request, pod, true) else {
                continue;
            };
            let opened = self.open_log(request.job.namespace(), &source, &options, false);
            let mut reader = match opened.await {
                Ok(reader) => reader,
                // Deleted, or restarting, since it was listed (or, with --previous, without a
                // previous run): no log to print.
                Err(
                    error @ ClusterError::Api {
                        code: 400 | 404, ..
                    },
                ) => {
                    refused = Some(error);
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            printed = true;
            copy(&mut reader, source.prefix, |chunk| out.write_all(&chunk))
                .await
                .map_err(|error| match error {
                    CopyError::Read(error) => Cluster::read_error(request.job, &error).into(),
                    CopyError::Write(error) => anyhow::Error::from(error),
                })?;
        }
        out.flush()?;
        match refused {
            // `--previous` of one replica, or of replicas none of which restarted: the API's
            // word for it (`previous terminated container "tensorflow" in pod ... not found`).
            Some(error) if request.previous && !printed => Err(error.into()),
            _ => Ok(()),
        }
    }

    /// The job and replica of the pod `name` in `namespace` (of `kind`, when given), as its
    /// labels and controller say; `None` when there is no such pod, or it is no training job's.
    pub async fn pod_replica(
        &self,
        namespace: &str,
        name: &str,
        kind: Option<JobKind>,
    ) -> Result<Option<PodReplica>, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let pod = api.get_opt(name).await.map_err(|error| {
            self.error(
                Operation::new("get", Resource::Pods, Some(namespace)),
                error,
            )
        })?;
        Ok(pod.as_ref().and_then(|pod| {
            let owner = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|owner| owner.controller == Some(true))?;
            let owner_kind: JobKind = owner.kind.parse().ok()?;
            if kind.is_some_and(|kind| kind != owner_kind) {
                return None;
            }
            Some(PodReplica {
                kind: owner_kind,
                job: owner.name.clone(),
                slot: slot_of(pod)?,
            })
        }))
    }

    async fn open_log(
        &self,
        namespace: &str,
        source: &LogSource,
        options: &LogOptions,
        follow: bool,
    ) -> Result<impl AsyncRead + Unpin + Send + use<>, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = options.params(&source.container, follow, source.selecting);
        let reader = api
            .log_stream(&source.pod, &params)
            .await
            .map_err(|error| {
                self.error(
                    Operation::new("get", Resource::PodLogs, Some(namespace)),
                    error,
                )
            })?;
        Ok(Box::pin(reader))
    }

    fn read_error(job: &ClusterJob, error: &std::io::Error) -> ClusterError {
        ClusterError::Request {
            operation: Operation::new("get", Resource::PodLogs, Some(job.namespace())),
            reason: error.to_string(),
        }
    }
}

/// The pod's instance and log when its framework container has started (it runs or ran) and
/// its slot is asked for; `selecting`: `--tail` and `--since` apply to its log.
fn started(request: &LogRequest<'_>, pod: &Pod, selecting: bool) -> Option<(Instance, LogSource)> {
    let slot = slot_of(pod)?;
    if !request.wants(&slot) || controller_uid(pod) != Some(request.job.uid()) {
        return None;
    }
    let status = main_status(request.job.kind, pod)?;
    let state = status.state.as_ref()?;
    if state.running.is_none() && state.terminated.is_none() {
        return None;
    }
    let instance = (pod.metadata.uid.clone()?, status.restart_count);
    let source = LogSource {
        pod: pod.metadata.name.clone()?,
        container: main_container(request.job.kind, pod)?,
        prefix: request.prefix(&slot),
        selecting,
    };
    Some((instance, source))
}

/// The separator before the log of the pod's container restarted, as on this machine: the
/// restart's count and time, and how the run before ended.
fn restart_line(request: &LogRequest<'_>, pod: &Pod) -> Option<Vec<u8>> {
    let slot = slot_of(pod)?;
    let status = main_status(request.job.kind, pod)?;
    let started = status
        .state
        .as_ref()?
        .running
        .as_ref()?
        .started_at
        .as_ref()?;
    let at = i64::try_from(started.0.as_nanosecond()).ok()?;
    let previous_exit = status
        .last_state
        .as_ref()
        .and_then(|state| state.terminated.as_ref())
        .map(|terminated| terminated.exit_code);
    let restart = Restart {
        run: u32::try_from(status.restart_count).ok()?,
        at,
        previous_exit,
    };
    let mut line = Vec::new();
    restart.render(
        &slot.to_string(),
        request.prefix(&slot).as_deref(),
        request.timestamps,
        &mut line,
    );
    Some(line)
}

/// Whether the pod's framework container runs now.
fn is_running(request: &LogRequest<'_>, pod: &Pod) -> bool {
    main_status(request.job.kind, pod)
        .and_then(|status| status.state.as_ref())
        .is_some_and(|state| state.running.is_some())
}

/// Copies a log to `write`, in chunks of whole lines after `prefix` when there is one.
async fn copy(
    reader: &mut (impl AsyncRead + Unpin),
    prefix: Option<String>,
    mut write: impl FnMut(Vec<u8>) -> std::io::Result<()>,
) -> Result<(), CopyError> {
    let mut lines = prefix.map(PrefixedLines::new);
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = reader.read(&mut buffer).await.map_err(CopyError::Read)?;
        if read == 0 {
            break;
        }
        let mut chunk = Vec::new();
        match &mut lines {
            Some(lines) => lines
                .push(&buffer[..read], &mut chunk)
                .map_err(CopyError::Write)?,
            None => chunk.extend_from_slice(&buffer[..read]),
        }
        if !chunk.is_empty() {
            write(chunk).map_err(CopyError::Write)?;
        }
    }
    if let Some(lines) = &mut lines {
        let mut chunk = Vec::new();
        lines.finish(&mut chunk).map_err(CopyError::Write)?;
        if !chunk.is_empty() {
            write(chunk).map_err(CopyError::Write)?;
        }
    }
    Ok(())
}

/// `logs -f`: watches the job and its pods, and streams each container run as it starts.
struct Follower<'a> {
    cluster: Cluster,
    request: LogRequest<'a>,
    /// The container runs streamed (or being streamed).
    streamed: HashMap<Instance, AbortHandle>,
    /// The pods (by uid) some run of which was streamed: a later run is a restart.
    pods_streamed: HashSet<String>,
    /// Whether the pods seen so far are those that were there when `logs` started (the
    /// watch's first listing), to whose logs `--tail` and `--since` apply.
    listing: bool,
    /// The streams, each ending with its instance and, if it failed, why.
    streams: JoinSet<(Instance, Result<(), ClusterError>)>,
    /// What the streams print, in whole lines; dropped once no stream will start any more.
    sender: Option<mpsc::UnboundedSender<Vec<u8>>>,
    receiver: mpsc::UnboundedReceiver<Vec<u8>>,
}

impl<'a> Follower<'a> {
    fn new(cluster: Cluster, request: LogRequest<'a>) -> Follower<'a> {
        let (sender, receiver) = mpsc::unbounded_channel();
        Follower {
            cluster,
            request,
            streamed: HashMap::new(),
            pods_streamed: HashSet::new(),
            listing: true,
            streams: JoinSet::new(),
            sender: Some(sender),
            receiver,
        }
    }

    async fn run(mut self, out: &mut impl Write) -> anyhow::Result<()> {
        let job = self.request.job;
        let pods_api: Api<Pod> = Api::namespaced(self.cluster.client.clone(), job.namespace());
        let selector = format!(
            "{JOB_NAME_LABEL}={},{OPERATOR_NAME_LABEL}={}",
            job.name(),
            job.kind.operator_name()
        );
        let mut pods = watcher(pods_api, watcher::Config::default().labels(&selector)).boxed();
        let mut changes = self.cluster.watch_job(job).boxed();
        let mut finished = job.finished();
        while !finished {
            tokio::select! {
                change = changes.next() => match change {
                    Some(Ok(Some(job))) => finished = job.finished(),
                    Some(Ok(None)) | None => finished = true,
                    Some(Err(error)) => return Err(error.into()),
                },
                event = pods.next() => match event {
                    Some(Ok(event)) => {
                        if matches!(event, watcher::Event::InitDone) {
                            self.listing = false;
                        }
                        for pod in applied(event) {
                            self.start(&pod);
                        }
                    }
                    Some(Err(error)) => {
                        let operation = Operation::new("watch", Resource::Pods, Some(job.namespace()));
                        if let Some(error) = self.cluster.watch_error(operation, error) {
                            return Err(error.into());
                        }
                    }
                    None => finished = true,
                },
                Some(chunk) = self.receiver.recv() => out.write_all(&chunk).and_then(|()| out.flush())?,
                Some(ended) = self.streams.join_next(), if !self.streams.is_empty() => {
                    self.ended(ended)?;
                }
            }
        }
        drop((pods, changes));
        // The job has finished: what ran is printed to its end, what runs on (a parameter
        // server left by cleanPodPolicy None) is not waited for.
        for pod in self.cluster.pods_of(job).await? {
            if is_running(&self.request, &pod) {
                if let Some((instance, _)) = started(&self.request, &pod, false)
                    && let Some(stream) = self.streamed.get(&instance)
                {
                    stream.abort();
                }
            } else {
                self.start(&pod);
            }
        }
        self.sender = None;
        loop {
            tokio::select! {
                chunk = self.receiver.recv() => match chunk {
                    Some(chunk) => out.write_all(&chunk).and_then(|()| out.flush())?,
                    None => break,
                },
                Some(ended) = self.streams.join_next(), if !self.streams.is_empty() => {
                    self.ended(ended)?;
                }
            }
        }
        while let Some(ended) = self.streams.join_next().await {
            self.ended(ended)?;
        }
        Ok(())
    }

    /// Streams the pod's current container run, unless it has not started or is streamed; a
    /// run after one streamed is a restart, said by a separator line first.
    fn start(&mut self, pod: &Pod) {
        let Some((instance, source)) = started(&self.request, pod, self.listing) else {
            return;
        };
        let Some(sender) = self.sender.clone() else {
            return;
        };
        if self.streamed.contains_key(&instance) {
            return;
        }
        if !self.pods_streamed.insert(instance.0.clone())
            && let Some(line) = restart_line(&self.request, pod)
        {
            let _ = sender.send(line);
        }
        let cluster = self.cluster.clone();
        let namespace = self.request.job.namespace().to_owned();
        let options = self.request.options();
        let key = instance.clone();
        let handle = self.streams.spawn(async move {
            let result = async {
                let mut reader = cluster
                    .open_log(&namespace, &source, &options, true)
                    .await?;
                copy(&mut reader, source.prefix, |chunk| {
                    // The receiver is gone only when `logs` itself ends.
                    let _ = sender.send(chunk);
                    Ok(())
                })
                .await
                .map_err(|error| {
                    let (CopyError::Read(error) | CopyError::Write(error)) = error;
                    ClusterError::Request {
                        operation: Operation::new("get", Resource::PodLogs, Some(&namespace)),
                        reason: error.to_string(),
                    }
                })
            }
            .await;
            (key, result)
        });
        self.streamed.insert(instance, handle);
    }

    /// A stream ended: a refusal (RBAC, credentials, no connection) ends `logs`; a pod deleted
    /// or a container not started after all (404, 400) is streamed again when it changes.
    fn ended(
        &mut self,
        ended: Result<(Instance, Result<(), ClusterError>), tokio::task::JoinError>,
    ) -> Result<(), ClusterError> {
        match ended {
            Ok((_, Ok(()))) | Err(_) => Ok(()),
            Ok((
                instance,
                Err(ClusterError::Api {
                    code: 400 | 404, ..
                }),
            )) => {
                self.streamed.remove(&instance);
                Ok(())
            }
            Ok((_, Err(error))) => Err(error),
        }
    }
}

/// The pods a watch event shows as they are now (a deleted pod's stream ends by itself).
fn applied(event: watcher::Event<Pod>) -> Vec<Pod> {
    match event {
        watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => vec![pod],
        watcher::Event::Delete(_) | watcher::Event::Init | watcher::Event::InitDone => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_pod_log_apis_parameters() {
        let options = LogOptions {
            tail_lines: Some(2),
            since: Some(SignedDuration::from_millis(90_500)),
            timestamps: true,
            previous: true,
        };
        let params = options.params("tensorflow", false, true);
        assert_eq!(
            (
                params.container.as_deref(),
                params.follow,
                params.tail_lines,
                params.since_seconds,
                params.timestamps,
                params.previous
            ),
            (Some("tensorflow"), false, Some(2), Some(91), true, true)
        );
        // A container that starts while followed is printed whole.
        let later = options.params("tensorflow", true, false);
        assert_eq!(
            (
                later.follow,
                later.tail_lines,
                later.since_seconds,
                later.timestamps
            ),
            (true, None, None, true)
        );
        let none = LogOptions::default().params("pytorch", false, true);
        assert_eq!(
            (
                none.tail_lines,
                none.since_seconds,
                none.timestamps,
                none.previous
            ),
            (None, None, false, false)
        );
        assert_eq!(whole_seconds(SignedDuration::from_secs(300)), 300);
        assert_eq!(whole_seconds(SignedDuration::from_millis(1)), 1);
    }
}
