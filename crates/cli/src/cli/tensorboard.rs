//! `tensorboard`: TensorBoard itself, on the event files of one job or several.

use std::net::IpAddr;

use clap::Args;

use super::jobs::JobsArgs;

/// Arguments of `tensorboard`.
#[derive(Debug, Args)]
pub struct TensorboardArgs {
    /// The jobs: each one run of TensorBoard.
    #[command(flatten)]
    pub jobs: JobsArgs,

    /// The port TensorBoard serves on; 0: one that is free (the address printed says which).
    #[arg(long, value_name = "PORT", default_value_t = 6006)]
    pub port: u16,

    /// The address TensorBoard listens on: loopback only unless --allow-non-loopback.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub host: IpAddr,

    /// Accept a --host that is not a loopback address: TensorBoard asks for no password, so
    /// anyone who reaches it reads the jobs' curves.
    #[arg(long)]
    pub allow_non_loopback: bool,

    /// Print the TensorBoard command line instead of starting it.
    #[arg(long)]
    pub print: bool,
}
