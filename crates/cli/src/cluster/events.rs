//! The events regarding a job (`events.k8s.io/v1`, which also serves the core v1 events that
//! older controllers record), as `describe` shows them.

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};

use super::{Cluster, ClusterError, ClusterJob, Operation, Resource};
use crate::view::description::EventRow;

impl Cluster {
    /// The events regarding `job`, oldest first.
    pub async fn events_of(&self, job: &ClusterJob) -> Result<Vec<EventRow>, ClusterError> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), job.namespace());
        let selector = format!("regarding.uid={}", job.uid());
        let events = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(|error| {
                self.error(
                    Operation::new("list", Resource::Events, Some(job.namespace())),
                    error,
                )
            })?;
        Ok(event_rows(events.items))
    }
}

/// The rows of `events`, oldest last occurrence first; each at its last occurrence (a series'
/// last, else the event's time, else when it was recorded), counted as kubectl counts it (a
/// series' count, else the core v1 event's `count`) from its first (the event's time, else
/// its `firstTimestamp`, else its last).
pub fn event_rows(events: Vec<Event>) -> Vec<EventRow> {
    let mut rows: Vec<EventRow> = events
        .into_iter()
        .filter_map(|event| {
            let recorded = event
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0);
            let happened = event.event_time.as_ref().map(|time| time.0);
            let time = event
                .series
                .as_ref()
                .map(|series| series.last_observed_time.0)
                .or(happened)
                .or_else(|| event.deprecated_last_timestamp.as_ref().map(|time| time.0))
                .or(recorded)?;
            let first_time = happened
                .or_else(|| event.deprecated_first_timestamp.as_ref().map(|time| time.0))
                .unwrap_or(time);
            let count = event
                .series
                .as_ref()
                .map(|series| series.count)
                .or(event.deprecated_count)
                .and_then(|count| u32::try_from(count).ok())
                .unwrap_or(1)
                .max(1);
            Some(EventRow {
                time,
                first_time,
                count,
                type_: event.type_.unwrap_or_default(),
                reason: event.reason.unwrap_or_default(),
                message: event.note.unwrap_or_default(),
            })
        })
        .collect();
    rows.sort_by_key(|row| row.time);
    rows
}
