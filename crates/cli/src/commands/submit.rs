//! `trainctl submit`: checks a manifest here, then sends it to the local control plane, or
//! creates its jobs in a cluster ([`Submit`]).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_api::manifest::{self, Companion, Manifests};

use crate::backend::{Cluster, Local};
use crate::cli::SubmitArgs;
use crate::client::{Client, ClientError};
use crate::cluster::ClusterError;
use crate::diagnostics::{self, EXIT_INVALID};

/// A manifest checked here: its bytes, and what the loader made of them.
#[derive(Debug)]
pub struct Checked {
    /// The file, as named on the command line.
    source: String,
    /// Its bytes, sent as they are to the local control plane.
    bytes: Vec<u8>,
    /// Its jobs (in `-n`'s namespace when given) and companions.
    manifests: Manifests,
}

/// Reads and checks the manifest as `validate` does, reporting every problem on stderr;
/// `Err(exit code 2)` when it is invalid. A valid manifest holds an object (a file without one
/// is invalid): jobs, `ResourceQuota`s, ConfigMaps or Secrets, each of which may come alone.
pub fn check(args: &SubmitArgs) -> Result<Checked, ExitCode> {
    let source = args.file.display().to_string();
    let (bytes, mut manifests) = read(&args.file, &source);
    diagnostics::report(&manifests)?;
    if let Some(namespace) = &args.namespace {
        for loaded in &mut manifests.jobs {
            diagnostics::set_namespace(loaded, namespace)?;
        }
    }
    Ok(Checked {
        source,
        bytes,
        manifests,
    })
}

/// What a submit did: its exit code (2 when the manifest is refused as invalid) and the jobs
/// it made, for `--wait`.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code.
    pub code: ExitCode,
    /// Each job made: its kind, namespace and name.
    pub jobs: Vec<(JobKind, String, String)>,
}

/// How a checked manifest is sent: to this machine's server, or to a cluster.
pub trait Submit {
    /// Sends `checked` (`args` for `-n` and `--volume`), printing on `out` what was made.
    async fn submit(
        &self,
        checked: Checked,
        args: &SubmitArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<Outcome>;
}

impl Outcome {
    /// An outcome that made no job.
    fn ended(code: ExitCode) -> Outcome {
        Outcome {
            code,
            jobs: Vec::new(),
        }
    }
}

impl Submit for Local {
    /// Sends the manifest to the server as it is, with `--volume`'s bindings; prints each job
    /// recorded.
    async fn submit(
        &self,
        checked: Checked,
        args: &SubmitArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<Outcome> {
        let volumes = args
            .volumes
            .iter()
            .map(|volume| {
                volume.text().with_context(|| {
                    format!(
                        "--volume {}: the path is not UTF-8, which the server's API cannot carry",
                        volume.path.display()
                    )
                })
            })
            .collect::<anyhow::Result<Vec<String>>>()?;
        let client = Client::find(self.dir())?;
        match client.submit(
            &checked.bytes,
            &checked.source,
            args.namespace.as_deref(),
            &volumes,
            args.on_finish.as_deref(),
        ) {
            Ok(submitted) => {
                for claim in &submitted.claims {
                    if let Some(previous) = &claim.previous {
                        eprintln!(
                            "claim {}/{}: bound to {} (was {previous})",
                            claim.namespace, claim.name, claim.path
                        );
                    }
                }
                for applied in submitted.quotas {
                    let name = applied.quota.metadata.name.unwrap_or_default();
                    writeln!(out, "resourcequota/{name} {}", applied.action)?;
                }
                for applied in submitted.config_maps {
                    writeln!(out, "configmap/{} {}", applied.name, applied.action)?;
                }
                for applied in submitted.secrets {
                    writeln!(out, "secret/{} {}", applied.name, applied.action)?;
                }
                let mut made = Vec::new();
                for job in submitted.jobs {
                    writeln!(out, "{} submitted ({})", job.resource(), job.state)?;
                    if let Ok(kind) = job.kind.parse::<JobKind>() {
                        made.push((kind, job.namespace, job.name));
                    }
                }
                Ok(Outcome {
                    code: ExitCode::SUCCESS,
                    jobs: made,
                })
            }
            // The server found what this trainctl did not (it may be another version).
            Err(ClientError::Api {
                status: 400,
                error,
                details,
            }) => {
                for detail in &details {
                    eprintln!("{detail}");
                }
                if details.is_empty() {
                    eprintln!("{error}");
                }
                Ok(Outcome::ended(ExitCode::from(EXIT_INVALID)))
            }
            Err(error) => Err(error.into()),
        }
    }
}

impl Submit for Cluster {
    /// Creates the manifest's jobs in the cluster, after applying its ConfigMaps and Secrets
    /// (which the jobs' pods read). Objects naming no namespace go to `-n`, else the context's.
    /// Exit 1 when a job exists already (the others are created), 2 when the cluster refuses
    /// one as invalid.
    async fn submit(
        &self,
        checked: Checked,
        args: &SubmitArgs,
        out: &mut impl Write,
    ) -> anyhow::Result<Outcome> {
        let namespace = args.namespace.as_deref().unwrap_or(&self.namespace);
        if args.on_finish.is_some() {
            eprintln!(
                "--on-finish: a cluster runs no command of trainctl's when a job finishes; \
                 submit with --wait and run it after, or watch the job with kubectl wait"
            );
            return Ok(Outcome::ended(ExitCode::from(EXIT_INVALID)));
        }
        let Checked {
            source, manifests, ..
        } = checked;
        if !manifests.quotas.is_empty() {
            eprintln!(
                "{source}: ResourceQuota documents are for the local control plane; in a cluster, \
             apply them with kubectl apply -f (trainctl's operator honours the cluster's quotas)"
            );
            return Ok(Outcome::ended(ExitCode::from(EXIT_INVALID)));
        }
        for companion in &manifests.companions {
            if let (Some(own), Some(_)) = (companion_namespace(companion), &args.namespace)
                && own != namespace
            {
                eprintln!(
                    "{}: the object's namespace `{own}` does not match --namespace `{namespace}`",
                    companion_name(companion)
                );
                return Ok(Outcome::ended(ExitCode::from(EXIT_INVALID)));
            }
        }
        for companion in &manifests.companions {
            let own = companion_namespace(companion).unwrap_or(namespace);
            let applied = self.apply_companion(companion, own).await?;
            writeln!(out, "{applied} applied")?;
        }
        let mut code = ExitCode::SUCCESS;
        let mut made = Vec::new();
        for mut loaded in manifests.jobs {
            if loaded.job.metadata().namespace.is_none() {
                loaded.job.metadata_mut().namespace = Some(namespace.to_owned());
            }
            match self.create_job(&loaded.job).await {
                Ok(created) => {
                    writeln!(
                        out,
                        "{} submitted ({})",
                        created.resource(),
                        created.state()
                    )?;
                    let job = &loaded.job;
                    made.push((
                        job.kind(),
                        job.namespace().to_owned(),
                        job.name().to_owned(),
                    ));
                }
                Err(error @ ClusterError::AlreadyExists { .. }) => {
                    eprintln!("error: {error}");
                    if code == ExitCode::SUCCESS {
                        code = ExitCode::FAILURE;
                    }
                }
                Err(error @ ClusterError::Invalid { .. }) => {
                    eprintln!("error: {error}");
                    code = ExitCode::from(EXIT_INVALID);
                }
                Err(error) => return Err(error.into()),
            }
        }
        out.flush()?;
        Ok(Outcome { code, jobs: made })
    }
}

fn companion_namespace(companion: &Companion) -> Option<&str> {
    companion.metadata().namespace.as_deref()
}

/// `configmap/NAME`.
fn companion_name(companion: &Companion) -> String {
    format!(
        "{}/{}",
        companion.resource(),
        companion.metadata().name.as_deref().unwrap_or_default()
    )
}

/// The manifest's bytes, sent as they are, and what the loader makes of them. A file that
/// cannot be read, or holds more than a manifest may, has no bytes, and a diagnostic saying why
/// (no more than one byte past the limit is read, from a file as from standard input).
fn read(path: &Path, source: &str) -> (Vec<u8>, Manifests) {
    match manifest::read_file(path) {
        Ok(bytes) => {
            let manifests = manifest::load_bytes(source, &bytes);
            (bytes, manifests)
        }
        Err(diagnostic) => (
            Vec::new(),
            Manifests {
                diagnostics: vec![*diagnostic],
                ..Manifests::default()
            },
        ),
    }
}
