//! This machine as the dashboard's Machine page shows it: [`MachineView`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Word, words};

/// The capacity the server admits jobs against, what the admitted jobs hold of it, which
/// replica holds each GPU, and the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MachineView {
    /// What the machine offers.
    pub capacity: Amounts,
    /// What the admitted jobs hold.
    pub held: Amounts,
    /// Each GPU, by index, with what holds it.
    pub gpus: Vec<GpuView>,
    /// The jobs that hold resources, oldest first.
    pub holders: Vec<HolderView>,
    /// The jobs waiting for room, in the order they will be admitted.
    pub queue: Vec<QueuedView>,
}

/// CPU, memory and GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Amounts {
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// How many GPUs.
    pub gpus: usize,
}

/// A job, as the machine's lists name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The kind, as in manifests (`TFJob`).
    #[serde(deserialize_with = "words::kind")]
    #[schemars(schema_with = "words::kind_schema")]
    pub kind: Word,
    /// The kind's plural, as the API's paths name it (`tfjobs`).
    #[serde(deserialize_with = "words::plural")]
    #[schemars(schema_with = "words::plural_schema")]
    pub plural: Word,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GpuView {
    /// Its index, as `CUDA_VISIBLE_DEVICES` names it.
    pub index: u32,
    /// The job and replica holding it; none when it is free.
    pub holder: Option<GpuHolder>,
}

/// What holds a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GpuHolder {
    /// The job.
    #[serde(flatten)]
    pub job: JobRef,
    /// The replica given it (`worker-0`); none while the job holds it and no replica was
    /// started with it yet.
    pub replica: Option<String>,
}

/// A job that holds resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HolderView {
    /// The job.
    #[serde(flatten)]
    pub job: JobRef,
    /// CPU in millicores.
    pub cpu_millis: u64,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// GPU indices.
    pub gpus: Vec<u32>,
}

/// A job waiting in the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueuedView {
    /// 1 for the next to be admitted; none for a job its namespace's quota holds.
    pub position: Option<u32>,
    /// The job.
    #[serde(flatten)]
    pub job: JobRef,
    /// Why it waits, in plain words.
    pub reason: String,
}
