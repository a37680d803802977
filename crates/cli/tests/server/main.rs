//! `trainctl server` end to end: a real server per test on its own state directory, driven
//! through its HTTP API and the CLI: its lifecycle, the queue and backfill, quotas, companions
//! (ConfigMaps, Secrets), its log and the replicas' logs, slow and silent peers, and its API
//! against the OpenAPI document it serves. What they share is in the CLI's test harness
//! (`test-support/cli-harness`).

mod backfill;
mod companions;
mod contract;
mod lifecycle;
mod log;
mod logs;
mod openapi;
mod peers;
mod quotas;
mod shim_lost;
mod submit;
