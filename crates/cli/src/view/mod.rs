//! What the job commands print, the same whether a job runs on this machine or on a cluster:
//! `get`'s table of jobs, `describe`'s text, and the prefixed lines of `logs`. The commands fill
//! these from the state database here, and from what `cluster` reads in cluster mode.

pub mod description;
pub mod jobs;
pub mod prefixed;
