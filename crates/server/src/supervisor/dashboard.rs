//! What the dashboard asks of the supervisor beyond the API's jobs: every job in one line, the
//! machine, and where a job's TensorBoard event files are.

use std::collections::HashMap;
use std::path::PathBuf;

use trainctl_api::JobKind;
use trainctl_local::runner::ResourceHold;
use trainctl_local::store::{JobRecord, ReplicaRecord, ReplicaState};

use super::{Supervisor, SupervisorError};
use crate::view::{
    Amounts, GpuHolder, GpuView, HolderView, JobRef, JobSummary, MachineView, QueuedView,
    job_summary,
};

impl Supervisor {
    /// Every job in one line, oldest first.
    pub fn summaries(&self) -> Result<Vec<JobSummary>, SupervisorError> {
        // The store is let go before the queue is asked: never both locks at once.
        let store = self.store();
        let records = store.jobs(None, None)?;
        let replicas = store.all_replicas()?;
        drop(store);
        Ok(records
            .iter()
            .map(|record| {
                let replicas = replicas.get(&record.uid).map_or(&[][..], Vec::as_slice);
                job_summary(record, replicas, self.waiting(record), self.place(record))
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
                // A replica that ran with it before a restart may still name it: the running
                // one first.
                let replica = replicas
                    .iter()
                    .filter(|replica| replica.gpus.contains(&gpu))
                    .max_by_key(|replica| replica.state == ReplicaState::Running)
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
                Some(QueuedView {
                    position: self.place(record),
                    job: job_ref(record),
                    reason: self.waiting(record)?,
                })
            })
            .collect();
        // In the machine's order; the jobs their quota holds last.
        queue.sort_by_key(|queued| queued.position.unwrap_or(u32::MAX));
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

impl Supervisor {
    /// The job's place in the machine's queue, 1 being the next to be admitted; none when it is
    /// not queued, or when its namespace's quota holds it (it has no place until the quota
    /// lets it go).
    fn place(&self, record: &JobRecord) -> Option<u32> {
        if self.queue.quota_hold(&record.uid).is_some() {
            return None;
        }
        self.queue.position(&record.uid).map(|ahead| ahead + 1)
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
