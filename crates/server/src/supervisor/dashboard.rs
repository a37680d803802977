//! What the dashboard asks of the supervisor beyond the API's jobs: every job in one line, the
//! machine, and where a job's TensorBoard event files are.

use std::collections::HashMap;
use std::path::PathBuf;

use trainctl_api::JobKind;
use trainctl_local::runner::ResourceHold;
use trainctl_local::store::{JobRecord, ReplicaRecord};

use super::{Supervisor, SupervisorError};
use crate::view::{
    Amounts, GpuHolder, GpuView, HolderView, JobRef, JobSummary, MachineView, QueuedView,
};

impl Supervisor {
    /// Every job in one line, oldest first.
    pub fn summaries(&self) -> Result<Vec<JobSummary>, SupervisorError> {
        // The store is let go before the queue is asked: never both locks at once.
        let store = self.store();
        let records = store.jobs(None, None)?;
        let replicas = records
            .iter()
            .map(|record| store.replicas(&record.uid))
            .collect::<Result<Vec<_>, _>>()?;
        drop(store);
        Ok(records
            .iter()
            .zip(&replicas)
            .map(|(record, replicas)| {
                let position = self.queue.position(&record.uid).map(|ahead| ahead + 1);
                JobSummary::of(record, replicas, self.waiting(record), position)
            })
            .collect())
    }

    /// The machine: its capacity, what each admitted job holds, which replica holds each GPU,
    /// and the queue in order.
    pub fn machine(&self) -> Result<MachineView, SupervisorError> {
        let capacity = &self.config.settings.capacity;
        // The store is let go before the queue is asked: never both locks at once.
        let store = self.store();
        let holds: HashMap<String, ResourceHold> = store.live_holds()?.into_iter().collect();
        let records = store.jobs(None, None)?;
        let mut holders = Vec::new();
        let mut gpu_holders: HashMap<u32, GpuHolder> = HashMap::new();
        for record in &records {
            let Some(hold) = holds.get(&record.uid) else {
                continue;
            };
            let replicas = store.replicas(&record.uid)?;
            for &gpu in &hold.gpus {
                let replica = replicas
                    .iter()
                    .find(|replica| replica.gpus.contains(&gpu))
                    .map(ReplicaRecord::name);
                let job = job_ref(record);
                gpu_holders.insert(gpu, GpuHolder { job, replica });
            }
            holders.push(HolderView {
                job: job_ref(record),
                cpu_millis: hold.cpu_millis,
                memory_bytes: hold.memory_bytes,
                gpus: hold.gpus.clone(),
            });
        }
        drop(store);
        let mut queue: Vec<QueuedView> = records
            .iter()
            .filter(|record| !holds.contains_key(&record.uid))
            .filter_map(|record| {
                let ahead = self.queue.position(&record.uid)?;
                Some(QueuedView {
                    position: ahead + 1,
                    job: job_ref(record),
                    reason: self.waiting(record).unwrap_or_default(),
                })
            })
            .collect();
        queue.sort_by_key(|queued| queued.position);
        let held = Amounts {
            cpu_millis: holders.iter().map(|holder| holder.cpu_millis).sum(),
            memory_bytes: holders
                .iter()
                .fold(0_u64, |sum, holder| sum.saturating_add(holder.memory_bytes)),
            gpus: gpu_holders.len(),
        };
        Ok(MachineView {
            capacity: Amounts {
                cpu_millis: capacity.cpu_millis,
                memory_bytes: capacity.memory_bytes,
                gpus: capacity.gpus.len(),
            },
            held,
            gpus: capacity
                .gpus
                .iter()
                .map(|&index| GpuView {
                    index,
                    holder: gpu_holders.remove(&index),
                })
                .collect(),
            holders,
            queue,
        })
    }

    /// Where the job's TensorBoard event files are looked for, in order
    /// ([`trainctl_local::claims::event_roots`]).
    pub fn event_roots(
        &self,
        namespace: &str,
        kind: JobKind,
        name: &str,
    ) -> Result<Vec<PathBuf>, SupervisorError> {
        let record = self.find(namespace, kind, name)?;
        let store = self.store();
        Ok(trainctl_local::claims::event_roots(&store, &record)?)
    }
}

fn job_ref(record: &JobRecord) -> JobRef {
    JobRef {
        namespace: record.namespace.clone(),
        name: record.name.clone(),
        kind: record.kind.as_str(),
        plural: record.kind.plural(),
    }
}
