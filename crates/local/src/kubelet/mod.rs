//! The kubelet's rules, as they apply on this machine: what a replica's pod means before any
//! process runs. Plain functions with unit tests; nothing here starts a replica, touches the
//! store or knows of a run. Two look at the machine: [`resources`] asks `nvidia-smi` for its
//! GPUs, and [`ports`] binds loopback sockets to find free ports.
//!
//! - [`env`](mod@env): a container's env as the kubelet builds it (`envFrom`, `env`, `fieldRef`,
//!   `resourceFieldRef`, ConfigMap and Secret keys), on top of Kubernetes' `$(VAR)` expansion
//!   ([`trainctl_api::expansion`], which validation also uses) and [`resources`];
//! - [`resources`]: resource quantities, what a replica needs, and this machine's capacity;
//! - [`admission`]: gang admission on that capacity, with disjoint GPU sets, on top of
//!   [`resources`];
//! - [`ports`]: one free loopback port per replica slot, the local stand-in for a Service;
//! - [`volumes`]: what backs each volume a replica mounts (claims' directories, ConfigMap and
//!   Secret files, emptyDirs, host paths), and making it on disk before the replica starts;
//! - [`references`]: which ConfigMaps and Secrets a job's pods reference (what [`env`](mod@env)
//!   and [`volumes`] resolve), for a server to record with the job those it knows.
//!
//! Imports go one way: [`env`](mod@env) and [`admission`] use [`resources`], which uses neither;
//! [`env`](mod@env) uses [`references`] (the kind of object a reference names), which uses none
//! of them; [`volumes`] uses none of them.

pub mod admission;
pub mod env;
pub mod ports;
pub mod references;
pub mod resources;
pub mod volumes;
