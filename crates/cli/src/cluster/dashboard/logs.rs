//! `GET {job}/logs` from the cluster: the job's logs as `trainctl --kube logs` prints them (the
//! framework container of each pod; one replica's as it is, or every replica's with
//! `worker-0 | ` prefixes), as a stream; followed, until the job has finished. The cluster's
//! log code ([`Cluster::print_logs`](crate::cluster::Cluster::print_logs)) writes into the
//! stream.

use std::io::{self, Write};

use axum::body::Body;
use axum::http::StatusCode;
use jiff::SignedDuration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use trainctl_dashboard::Failure;
use trainctl_engine::ReplicaSlot;
use trainctl_server_api::LogsQuery;

use crate::cluster::{Cluster, ClusterJob, LogRequest, slot_of};

/// The logs of `job` that the query asks for (its `sinceSeconds` is above 0); 404 for a
/// replica the job does not have.
pub async fn logs(cluster: &Cluster, job: ClusterJob, query: LogsQuery) -> Result<Body, Failure> {
    let since = query.since_seconds.map(SignedDuration::from_secs);
    let pods = cluster.pods_of(&job).await?;
    let slots = ReplicaSlot::all_of(&job.job, pods.iter().filter_map(slot_of));
    let wanted = match &query.replica {
        None => None,
        Some(name) => Some(
            slots
                .iter()
                .find(|slot| slot.to_string().eq_ignore_ascii_case(name))
                .cloned()
                .ok_or_else(|| {
                    let known: Vec<String> = slots.iter().map(ToString::to_string).collect();
                    Failure::new(
                        StatusCode::NOT_FOUND,
                        format!(
                            "{} has no replica `{name}`; its replicas: {}",
                            job.resource(),
                            known.join(", ")
                        ),
                    )
                })?,
        ),
    };
    let width = slots
        .iter()
        .map(|slot| slot.to_string().len())
        .max()
        .unwrap_or(0);
    let (sender, receiver) = mpsc::unbounded_channel();
    let cluster = cluster.clone();
    let task = tokio::spawn(async move {
        let request = LogRequest {
            job: &job,
            replica: wanted.as_ref(),
            width,
            follow: query.follow && !query.previous,
            tail_lines: query
                .tail_lines
                .and_then(|lines| usize::try_from(lines).ok()),
            since,
            timestamps: query.timestamps,
            previous: query.previous,
        };
        let mut body = BodyWriter(sender);
        if let Err(error) = cluster.print_logs(request, &pods, &mut body).await {
            // The reader has gone: nothing to say. Else the reader hears why the log ends.
            let _ = writeln!(body, "error: {error:#}");
        }
    });
    let reading = (receiver, AbortOnDrop(task.abort_handle()));
    let chunks = futures_util::stream::unfold(reading, |(mut receiver, guard)| async move {
        let chunk = receiver.recv().await?;
        Some((Ok::<_, io::Error>(chunk), (receiver, guard)))
    });
    Ok(Body::from_stream(chunks))
}

/// The response's body, as the log code writes: each write one chunk; a broken pipe once the
/// reader has gone.
struct BodyWriter(mpsc::UnboundedSender<Vec<u8>>);

impl Write for BodyWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0
            .send(bytes.to_vec())
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Stops the task that reads the logs when the response is dropped (the reader has gone).
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
