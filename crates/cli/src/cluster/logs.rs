//! A job's logs on a cluster: the framework container's log of each of its pods, prefixed with
//! the replica (`worker-0 | `) as on this machine. Followed, every pod is streamed at once, a
//! pod that starts later (or a container that restarts) is streamed when it starts, and it ends
//! when the job has finished and the logs of its stopped containers are printed to their end.

use std::collections::HashMap;
use std::io::Write;

use futures_util::{AsyncRead, AsyncReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::runtime::watcher;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
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
}

/// One run of a pod's framework container: the pod's uid and the container's restart count.
type Instance = (String, i32);

/// A log to read: which pod, which container, which prefix.
struct LogSource {
    pod: String,
    container: String,
    prefix: Option<String>,
}

impl Cluster {
    /// Prints the logs `request` asks for to `out`; `pods` are the job's pods, as
    /// [`Cluster::pods_of`] lists them.
    pub async fn print_logs(
        &self,
        request: LogRequest<'_>,
        pods: &[Pod],
        out: &mut impl Write,
    ) -> Result<(), ClusterError> {
        if !request.follow {
            for pod in pods {
                if let Some((_, source)) = started(&request, pod) {
                    let opened = self.open_log(request.job.namespace(), &source, false);
                    let mut reader = match opened.await {
                        Ok(reader) => reader,
                        // Deleted, or restarting, since it was listed: no log to print.
                        Err(ClusterError::Api {
                            code: 400 | 404, ..
                        }) => continue,
                        Err(error) => return Err(error),
                    };
                    copy(&mut reader, source.prefix, |chunk| out.write_all(&chunk))
                        .await
                        .map_err(|error| Cluster::read_error(request.job, &error))?;
                }
            }
            out.flush()
                .map_err(|error| Cluster::read_error(request.job, &error))?;
            return Ok(());
        }
        Follower::new(self.clone(), request).run(out).await
    }

    async fn open_log(
        &self,
        namespace: &str,
        source: &LogSource,
        follow: bool,
    ) -> Result<impl AsyncRead + Unpin + Send + use<>, ClusterError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = LogParams {
            container: Some(source.container.clone()),
            follow,
            ..LogParams::default()
        };
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
/// its slot is asked for.
fn started(request: &LogRequest<'_>, pod: &Pod) -> Option<(Instance, LogSource)> {
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
    };
    Some((instance, source))
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
) -> std::io::Result<()> {
    let mut lines = prefix.map(PrefixedLines::new);
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = reader.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        let mut chunk = Vec::new();
        match &mut lines {
            Some(lines) => lines.push(&buffer[..read], &mut chunk)?,
            None => chunk.extend_from_slice(&buffer[..read]),
        }
        if !chunk.is_empty() {
            write(chunk)?;
        }
    }
    if let Some(lines) = &mut lines {
        let mut chunk = Vec::new();
        lines.finish(&mut chunk)?;
        if !chunk.is_empty() {
            write(chunk)?;
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
            streams: JoinSet::new(),
            sender: Some(sender),
            receiver,
        }
    }

    async fn run(mut self, out: &mut impl Write) -> Result<(), ClusterError> {
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
                    Some(Err(error)) => return Err(error),
                },
                event = pods.next() => match event {
                    Some(Ok(event)) => {
                        for pod in applied(event) {
                            self.start(&pod);
                        }
                    }
                    Some(Err(error)) => {
                        let operation = Operation::new("watch", Resource::Pods, Some(job.namespace()));
                        if let Some(error) = self.cluster.watch_error(operation, error) {
                            return Err(error);
                        }
                    }
                    None => finished = true,
                },
                Some(chunk) = self.receiver.recv() => self.write(out, &chunk)?,
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
                if let Some((instance, _)) = started(&self.request, &pod)
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
                    Some(chunk) => self.write(out, &chunk)?,
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

    /// Prints what a stream read.
    fn write(&self, out: &mut impl Write, chunk: &[u8]) -> Result<(), ClusterError> {
        out.write_all(chunk)
            .and_then(|()| out.flush())
            .map_err(|error| Cluster::read_error(self.request.job, &error))
    }

    /// Streams the pod's current container run, unless it has not started or is streamed.
    fn start(&mut self, pod: &Pod) {
        let Some((instance, source)) = started(&self.request, pod) else {
            return;
        };
        let Some(sender) = self.sender.clone() else {
            return;
        };
        if self.streamed.contains_key(&instance) {
            return;
        }
        let cluster = self.cluster.clone();
        let namespace = self.request.job.namespace().to_owned();
        let key = instance.clone();
        let handle = self.streams.spawn(async move {
            let result = async {
                let mut reader = cluster.open_log(&namespace, &source, true).await?;
                copy(&mut reader, source.prefix, |chunk| {
                    // The receiver is gone only when `logs` itself ends.
                    let _ = sender.send(chunk);
                    Ok(())
                })
                .await
                .map_err(|error| ClusterError::Request {
                    operation: Operation::new("get", Resource::PodLogs, Some(&namespace)),
                    reason: error.to_string(),
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
