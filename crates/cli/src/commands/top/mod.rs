//! `trainctl top node` and `trainctl top job`: what this machine offers and holds, and what the
//! running jobs' processes use now.

mod job;
mod node;

use std::path::Path;
use std::process::ExitCode;

use crate::cli::{TopArgs, TopResource};

/// Runs `top node` or `top job`.
pub fn run(args: &TopArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    match &args.resource {
        TopResource::Node(args) => node::run(args, state),
        TopResource::Job(args) => job::run(args, state),
    }
}
