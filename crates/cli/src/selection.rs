//! What a command's words and `-f` files name, read as kubectl reads them: `NAME...`,
//! `KIND NAME...`, `KIND/NAME...` (the form `get -o name` prints), a `KIND` alone (`get tfjobs`),
//! or the jobs of manifests.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use trainctl_api::JobKind;
use trainctl_api::manifest::Manifests;

use crate::cli::JobsArgs;
use crate::diagnostics::{self, EXIT_INVALID};
use crate::target::Target;

/// The jobs a command names.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// A kind given as a word of its own: before the names (`describe tfjob a b`), or alone
    /// (`get tfjobs`: every job of the kind).
    pub kind: Option<JobKind>,
    /// The jobs named, in the order given.
    pub jobs: Vec<NamedJob>,
}

/// One job named: by the words, or by a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedJob {
    /// Its kind, when said (`tfjob/a`, a manifest's job).
    pub kind: Option<JobKind>,
    /// Its name.
    pub name: String,
    /// Its namespace, when a manifest says it; else the command's.
    pub namespace: Option<String>,
}

impl Selection {
    /// What a job command's `args` name; `Err(exit code)` when a `-f` manifest is invalid (its
    /// problems printed).
    pub fn of(args: &JobsArgs) -> anyhow::Result<Result<Selection, ExitCode>> {
        Selection::read(&args.words, &args.files, args.namespace.as_deref())
    }

    /// What `words` and `files` name; the files' jobs go to `namespace` (`-n`) when they name
    /// none. `Ok(Err(2))` when a file is not a valid manifest (its problems printed, as
    /// `validate` prints them) or holds no job.
    pub fn read(
        words: &[String],
        files: &[PathBuf],
        namespace: Option<&str>,
    ) -> anyhow::Result<Result<Selection, ExitCode>> {
        if files.is_empty() {
            return Selection::from_words(words).map(Ok);
        }
        Ok(Selection::from_files(files, namespace))
    }

    /// Reads the words: `KIND/NAME` each, else a first word that is a kind followed by names,
    /// else names.
    pub fn from_words(words: &[String]) -> anyhow::Result<Selection> {
        let slashed = words.iter().filter(|word| word.contains('/')).count();
        if slashed == 0 {
            let (kind, names) = match words.split_first() {
                Some((first, rest)) => match first.parse::<JobKind>() {
                    Ok(kind) => (Some(kind), rest),
                    Err(_) => (None, words),
                },
                None => (None, words),
            };
            return Ok(Selection {
                kind,
                jobs: names
                    .iter()
                    .map(|name| NamedJob::by_name(None, name))
                    .collect(),
            });
        }
        if slashed < words.len() {
            let words_given = words.join(" ");
            if words[0].parse::<JobKind>().is_ok() && slashed == words.len() - 1 {
                anyhow::bail!(
                    "there is no need to give a kind as a word of its own when the jobs are \
                     named as KIND/NAME: `{words_given}`"
                );
            }
            anyhow::bail!("name every job as KIND/NAME, or none: `{words_given}`");
        }
        let jobs = words
            .iter()
            .map(|word| {
                let (kind, name) = word.split_once('/').unwrap_or_default();
                let kind = kind
                    .parse::<JobKind>()
                    .with_context(|| format!("`{word}`"))?;
                if name.is_empty() || name.contains('/') {
                    anyhow::bail!("`{word}`: expected KIND/NAME, as `tfjob/mnist`");
                }
                Ok(NamedJob::by_name(Some(kind), name))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Selection { kind: None, jobs })
    }

    /// The jobs of the manifests `files`, in `namespace` when they name none (a job naming
    /// another namespace is refused, as kubectl refuses it).
    fn from_files(files: &[PathBuf], namespace: Option<&str>) -> Result<Selection, ExitCode> {
        let mut manifests = Manifests::load_files(files);
        diagnostics::report(&manifests)?;
        if manifests.jobs.is_empty() {
            let named: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            eprintln!(
                "{}: no training job in the manifest (expected a TFJob, PyTorchJob, XGBoostJob, \
                 PaddleJob, JAXJob, MPIJob or MXJob)",
                named.join(", ")
            );
            return Err(ExitCode::from(EXIT_INVALID));
        }
        let mut jobs = Vec::with_capacity(manifests.jobs.len());
        for loaded in &mut manifests.jobs {
            if let Some(namespace) = namespace {
                diagnostics::set_namespace(loaded, namespace)?;
            }
            jobs.push(NamedJob {
                kind: Some(loaded.job.kind()),
                name: loaded.job.name().to_owned(),
                namespace: loaded.job.metadata().namespace.clone(),
            });
        }
        Ok(Selection { kind: None, jobs })
    }

    /// The jobs named, each in its own namespace or else `namespace`; an error when only a kind
    /// was given, for the commands that act on named jobs (`command`, for the hint).
    pub fn targets<'a>(
        &'a self,
        namespace: &'a str,
        command: &str,
    ) -> anyhow::Result<Vec<Target<'a>>> {
        if self.jobs.is_empty() {
            let kind = self.kind.map_or("KIND", JobKind::singular);
            anyhow::bail!("name the job: `trainctl {command} {kind} NAME`");
        }
        Ok(self.jobs_in(namespace).collect())
    }

    /// The jobs named, each in its own namespace or else `namespace`.
    pub fn jobs_in<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = Target<'a>> {
        self.jobs.iter().map(move |job| Target {
            kind: job.kind.or(self.kind),
            name: &job.name,
            namespace: job.namespace.as_deref().unwrap_or(namespace),
        })
    }
}

impl NamedJob {
    fn by_name(kind: Option<JobKind>, name: &str) -> NamedJob {
        NamedJob {
            kind,
            name: name.to_owned(),
            namespace: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn named(kind: Option<JobKind>, name: &str) -> NamedJob {
        NamedJob::by_name(kind, name)
    }

    #[test]
    fn words_are_read_as_kubectl_reads_them() {
        let read = |text: &str| Selection::from_words(&words(text)).expect(text);
        assert_eq!(read(""), Selection::default());
        assert_eq!(
            read("tfjobs"),
            Selection {
                kind: Some(JobKind::TFJob),
                jobs: vec![],
            }
        );
        assert_eq!(
            read("mnist"),
            Selection {
                kind: None,
                jobs: vec![named(None, "mnist")],
            }
        );
        assert_eq!(
            read("mnist bert"),
            Selection {
                kind: None,
                jobs: vec![named(None, "mnist"), named(None, "bert")],
            }
        );
        assert_eq!(
            read("PyTorchJob mnist bert"),
            Selection {
                kind: Some(JobKind::PyTorchJob),
                jobs: vec![named(None, "mnist"), named(None, "bert")],
            }
        );
        assert_eq!(
            read("tfjob/mnist pytorchjobs.kubeflow.org/bert"),
            Selection {
                kind: None,
                jobs: vec![
                    named(Some(JobKind::TFJob), "mnist"),
                    named(Some(JobKind::PyTorchJob), "bert"),
                ],
            }
        );
    }

    #[test]
    fn malformed_words_are_refused_with_what_is_expected() {
        let refused =
            |text: &str| format!("{:#}", Selection::from_words(&words(text)).expect_err(text));
        assert_eq!(
            refused("tfjob tfjob/mnist"),
            "there is no need to give a kind as a word of its own when the jobs are named as \
             KIND/NAME: `tfjob tfjob/mnist`"
        );
        assert!(
            refused("tfjbs/mnist")
                .starts_with("`tfjbs/mnist`: unknown job kind `tfjbs` (did you mean `tfjobs`?)"),
            "{}",
            refused("tfjbs/mnist")
        );
        assert_eq!(
            refused("mnist tfjob/bert"),
            "name every job as KIND/NAME, or none: `mnist tfjob/bert`"
        );
        assert_eq!(
            refused("tfjob/"),
            "`tfjob/`: expected KIND/NAME, as `tfjob/mnist`"
        );
        assert_eq!(
            refused("tfjob/a/b"),
            "`tfjob/a/b`: expected KIND/NAME, as `tfjob/mnist`"
        );
    }

    #[test]
    fn a_kind_alone_names_no_job_for_the_commands_that_need_one() {
        let selection = Selection::from_words(&words("tfjob")).expect("a kind");
        assert_eq!(
            selection
                .targets("default", "describe")
                .expect_err("no name")
                .to_string(),
            "name the job: `trainctl describe tfjob NAME`"
        );
    }
}
