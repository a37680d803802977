//! Loading manifests: one or more files of YAML (multi-document) or JSON, each document a training
//! job, a companion object (ConfigMap, Secret) or a namespace's `ResourceQuota` (for the local
//! control plane's admission), every problem reported as
//! `FILE:LINE:COL: PATH: message`.

mod diagnostic;
pub mod location;
mod read;
mod typed;
mod v1alpha1;
mod yaml_error;

use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, ResourceQuota, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::defaults;
use crate::field_path::{FieldPath, Segment};
use crate::job::TrainingJob;
use crate::kind::JobKind;
use crate::validation::{self, Issue, Severity};
use location::{LocationIndex, Position};
use read::too_large;
use yaml_error::yaml_message;

pub use crate::namespace::check_namespace;
pub use diagnostic::Diagnostic;
pub use read::{MAX_MANIFEST_BYTES, read_file};

/// An object submitted alongside a job, for its replicas to read (`configMapKeyRef`, volumes).
#[derive(Debug, Clone, PartialEq)]
pub enum Companion {
    /// A ConfigMap.
    ConfigMap(ConfigMap),
    /// A Secret.
    Secret(Secret),
}

impl Companion {
    /// The object's metadata.
    #[must_use]
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Companion::ConfigMap(map) => &map.metadata,
            Companion::Secret(secret) => &secret.metadata,
        }
    }

    /// The object's metadata, to change.
    pub fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Companion::ConfigMap(map) => &mut map.metadata,
            Companion::Secret(secret) => &mut secret.metadata,
        }
    }

    /// Its resource as kubectl names it: `configmap` or `secret`.
    #[must_use]
    pub fn resource(&self) -> &'static str {
        match self {
            Companion::ConfigMap(_) => "configmap",
            Companion::Secret(_) => "secret",
        }
    }
}

/// A job read from a manifest: defaulted, validated, and the file it came from.
#[derive(Debug, Clone)]
pub struct LoadedJob {
    /// The job, with defaults applied.
    pub job: TrainingJob,
    /// The file it came from.
    pub source: String,
    /// Where each of its fields is in that file.
    pub locations: LocationIndex,
}

impl LoadedJob {
    /// A problem found with this job's field at `path`, where that field is in its file.
    #[must_use]
    pub fn diagnostic(&self, severity: Severity, path: FieldPath, message: String) -> Diagnostic {
        Diagnostic {
            severity,
            source: self.source.clone(),
            position: self.locations.locate(&path),
            path: (!path.is_root()).then_some(path),
            message,
        }
    }

    /// Puts a job that names no namespace in `namespace` (`-n`, a server's `namespace=`); a job
    /// that names another one is refused, as kubectl does, with the namespace it names.
    pub fn set_namespace(&mut self, namespace: &str) -> Result<(), String> {
        let metadata = self.job.metadata_mut();
        match metadata.namespace.as_deref() {
            Some(own) if own != namespace => Err(own.to_owned()),
            _ => {
                metadata.namespace = Some(namespace.to_owned());
                Ok(())
            }
        }
    }
}

/// Everything read from one or more manifest files.
#[derive(Debug, Default)]
pub struct Manifests {
    /// Valid jobs, in file order.
    pub jobs: Vec<LoadedJob>,
    /// ConfigMaps and Secrets, in file order.
    pub companions: Vec<Companion>,
    /// Valid `v1` `ResourceQuota`s, in file order.
    pub quotas: Vec<ResourceQuota>,
    /// Every error and warning, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Manifests {
    /// Whether any diagnostic is an error.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Reads each file in turn (`-` reads standard input).
    #[must_use]
    pub fn load_files<P: AsRef<Path>>(paths: &[P]) -> Manifests {
        let mut all = Manifests::default();
        for path in paths {
            all.extend(load_file(path.as_ref()));
        }
        all
    }

    fn extend(&mut self, other: Manifests) {
        self.jobs.extend(other.jobs);
        self.companions.extend(other.companions);
        self.quotas.extend(other.quotas);
        self.diagnostics.extend(other.diagnostics);
    }
}

/// Reads one manifest file (`-` reads standard input), at most [`MAX_MANIFEST_BYTES`] of it
/// ([`read_file`]).
#[must_use]
pub fn load_file(path: &Path) -> Manifests {
    match read_file(path) {
        Ok(bytes) => load_bytes(&path.display().to_string(), &bytes),
        Err(diagnostic) => Manifests {
            diagnostics: vec![*diagnostic],
            ..Manifests::default()
        },
    }
}

/// Reads manifest bytes; `source` names them in diagnostics.
#[must_use]
pub fn load_bytes(source: &str, bytes: &[u8]) -> Manifests {
    if bytes.len() > MAX_MANIFEST_BYTES {
        return file_error(source, Position::WHOLE_FILE, &too_large(bytes.len() as u64));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => load_str(source, text),
        Err(error) => {
            let valid = &bytes[..error.valid_up_to()];
            let line = valid.split(|&b| b == b'\n').count();
            let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            file_error(
                source,
                Position { line, column },
                &format!(
                    "the file is not UTF-8 text (invalid byte at offset {}); a manifest is YAML \
                     or JSON",
                    error.valid_up_to()
                ),
            )
        }
    }
}

/// Parses manifest text; `source` names it in diagnostics.
#[must_use]
pub fn load_str(source: &str, text: &str) -> Manifests {
    // Kubernetes reads manifests as YAML 1.1, where `0644` (a `defaultMode`) is octal.
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    let values = match serde_saphyr::from_multiple_with_options::<Value>(text, options) {
        Ok(values) => values,
        Err(error) => {
            let position = error.location().map_or(Position::START, |l| Position {
                line: usize::try_from(l.line()).unwrap_or(1).max(1),
                column: usize::try_from(l.column()).unwrap_or(1).max(1),
            });
            return file_error(source, position, &yaml_message(&error));
        }
    };
    if values.is_empty() {
        return file_error(
            source,
            Position::START,
            "the file holds no object: expected a kubeflow.org/v1 job (e.g. `kind: TFJob`)",
        );
    }
    // serde-saphyr skips empty documents; so does this index, keeping the two aligned.
    let indexes: Vec<LocationIndex> = match location::index_documents(text) {
        Ok(documents) => documents
            .into_iter()
            .filter(|d| !d.is_empty)
            .map(|d| d.index)
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut manifests = Manifests::default();
    let mut indexes = indexes.into_iter();
    for value in values {
        let locations = indexes.next().unwrap_or_default();
        load_document(source, value, locations, &mut manifests);
    }
    manifests
}

fn file_error(source: &str, position: Position, message: &str) -> Manifests {
    Manifests {
        diagnostics: vec![Diagnostic {
            severity: Severity::Error,
            source: source.to_owned(),
            position,
            path: None,
            message: message.to_owned(),
        }],
        ..Manifests::default()
    }
}

/// The document's kind, as far as loading is concerned.
enum DocumentKind {
    Job(JobKind),
    LegacyTFJob,
    ConfigMap,
    Secret,
    ResourceQuota,
}

const SUPPORTED: &str = "trainctl runs kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob, PaddleJob, \
                         JAXJob, MPIJob and MXJob (v1 ConfigMaps, Secrets and ResourceQuotas may \
                         accompany a job)";

fn document_kind(value: &Value) -> Result<DocumentKind, Issue> {
    let Some(object) = value.as_object() else {
        return Err(Issue::error(
            FieldPath::root(),
            format!(
                "expected a mapping with `apiVersion` and `kind`, found {}",
                json_type(value)
            ),
        ));
    };
    let text = |field: &str| object.get(field).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
        let missing = if text("apiVersion").is_none() {
            "apiVersion"
        } else {
            "kind"
        };
        return Err(Issue::error(
            FieldPath::fields(missing),
            format!("missing or not a string; {SUPPORTED}"),
        ));
    };
    match (api_version, kind) {
        (crate::API_VERSION, kind) => JobKind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .map(DocumentKind::Job)
            .ok_or_else(|| {
                Issue::error(
                    FieldPath::fields("kind"),
                    format!("`{kind}` is not a kubeflow.org/v1 kind; {SUPPORTED}"),
                )
            }),
        ("kubeflow.org/v1alpha1", "TFJob") => Ok(DocumentKind::LegacyTFJob),
        ("v1", "ConfigMap") => Ok(DocumentKind::ConfigMap),
        ("v1", "Secret") => Ok(DocumentKind::Secret),
        ("v1", "ResourceQuota") => Ok(DocumentKind::ResourceQuota),
        (api_version, kind) => Err(Issue::error(
            FieldPath::fields("kind"),
            format!("`{kind}` ({api_version}) is not a training job; {SUPPORTED}"),
        )),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Turns issues found in one document into located diagnostics.
struct Reporter<'a> {
    source: &'a str,
    locations: &'a LocationIndex,
    diagnostics: Vec<Diagnostic>,
    /// The fields left out because they did not fit their type.
    left_out: Vec<FieldPath>,
}

impl Reporter<'_> {
    fn issue(&mut self, issue: Issue) {
        let position = self.locations.locate(&issue.path);
        self.push(issue, position);
    }

    /// A field no type knows: point at its key, which is what is misspelt.
    fn unknown_field(&mut self, path: FieldPath) {
        let position = self.locations.locate_key(&path);
        self.push(
            Issue::warning(path, "unknown field, ignored (check its spelling)"),
            position,
        );
    }

    fn push(&mut self, issue: Issue, position: Position) {
        self.diagnostics.push(Diagnostic {
            severity: issue.severity,
            source: self.source.to_owned(),
            position,
            path: (!issue.path.is_root()).then_some(issue.path),
            message: issue.message,
        });
    }

    /// Deserializes `value` as `T`, reporting unknown fields and every field that does not fit
    /// its type; the object only when all fit.
    fn typed<T: DeserializeOwned>(&mut self, value: &Value) -> Option<T> {
        let (object, fits) = self.typed_despite_errors(value);
        object.filter(|_| fits)
    }

    /// [`Reporter::typed`], with the object read without the fields that do not fit, to be
    /// validated for the problems it has besides (it is refused all the same); `true` with it
    /// when every field fits.
    fn typed_despite_errors<T: DeserializeOwned>(&mut self, value: &Value) -> (Option<T>, bool) {
        let typed = typed::deserialize::<T>(value);
        // The generated root types read `apiVersion` and `kind` without keeping them.
        let known_root = |path: &FieldPath| matches!(path.segments(), [Segment::Field(f)] if f == "apiVersion" || f == "kind");
        for path in typed.unknown.into_iter().filter(|p| !known_root(p)) {
            self.unknown_field(path);
        }
        let fits = typed.errors.is_empty();
        for error in typed.errors {
            self.left_out.push(error.path.clone());
            self.issue(Issue::error(error.path, error.message));
        }
        (typed.object, fits)
    }

    /// A problem found by validating an object read without the fields that did not fit: not
    /// reported when it concerns one of those (it would only repeat it).
    fn validation_issue(&mut self, issue: Issue) {
        let concerns_left_out = self
            .left_out
            .iter()
            .any(|gone| issue.path.segments().starts_with(gone.segments()));
        if !concerns_left_out {
            self.issue(issue);
        }
    }
}

fn load_document(source: &str, value: Value, locations: LocationIndex, out: &mut Manifests) {
    let mut reporter = Reporter {
        source,
        locations: &locations,
        diagnostics: Vec::new(),
        left_out: Vec::new(),
    };
    let mut quota = None;
    let job = load_job(value, &mut reporter, &mut out.companions, &mut quota);
    let diagnostics = reporter.diagnostics;
    let valid = diagnostics.iter().all(|d| d.severity != Severity::Error);
    out.diagnostics.extend(diagnostics);
    if let Some(job) = job.filter(|_| valid) {
        out.jobs.push(LoadedJob {
            job,
            source: source.to_owned(),
            locations,
        });
    }
    out.quotas.extend(quota.filter(|_| valid));
}

/// Reports each key of a ConfigMap's or Secret's `field` that the API server refuses (a key is
/// also a file's name in a volume: `../x` would reach out of it).
fn report_keys<'a>(
    reporter: &mut Reporter<'_>,
    field: &str,
    keys: impl Iterator<Item = &'a String>,
) {
    for key in keys {
        if let Err(problem) = crate::validation::config_map_key(key) {
            reporter.issue(Issue::error(
                FieldPath::root().field(field).key(key),
                format!("`{key}` is not a valid key: {problem}"),
            ));
        }
    }
}

/// Reads one document: a job (converted, defaulted and validated), a companion object, or a
/// quota (validated, into `quota`).
fn load_job(
    value: Value,
    reporter: &mut Reporter<'_>,
    companions: &mut Vec<Companion>,
    quota: &mut Option<ResourceQuota>,
) -> Option<TrainingJob> {
    let kind = match document_kind(&value) {
        Ok(kind) => kind,
        Err(issue) => {
            reporter.issue(issue);
            return None;
        }
    };
    let (value, kind) = match kind {
        DocumentKind::Job(kind) => (value, kind),
        DocumentKind::LegacyTFJob => match v1alpha1::convert(&value) {
            Ok((converted, issues)) => {
                for issue in issues {
                    reporter.issue(issue);
                }
                (converted, JobKind::TFJob)
            }
            Err(issues) => {
                for issue in issues {
                    reporter.issue(issue);
                }
                return None;
            }
        },
        DocumentKind::ConfigMap => {
            let map: Option<ConfigMap> = reporter.typed(&value);
            if let Some(map) = &map {
                report_keys(
                    reporter,
                    "data",
                    map.data.iter().flat_map(|data| data.keys()),
                );
                let binary = map.binary_data.iter().flat_map(|data| data.keys());
                report_keys(reporter, "binaryData", binary);
            }
            companions.extend(map.map(Companion::ConfigMap));
            return None;
        }
        DocumentKind::Secret => {
            let secret: Option<Secret> = reporter.typed(&value);
            if let Some(secret) = &secret {
                report_keys(
                    reporter,
                    "data",
                    secret.data.iter().flat_map(|data| data.keys()),
                );
                let strings = secret.string_data.iter().flat_map(|data| data.keys());
                report_keys(reporter, "stringData", strings);
            }
            companions.extend(secret.map(Companion::Secret));
            return None;
        }
        DocumentKind::ResourceQuota => {
            *quota = reporter.typed::<ResourceQuota>(&value);
            for issue in quota.iter().flat_map(crate::quota::validate) {
                reporter.issue(issue);
            }
            return None;
        }
    };
    let (job, fits) = match kind {
        JobKind::TFJob => typed_job(reporter, &value, TrainingJob::TF),
        JobKind::PyTorchJob => typed_job(reporter, &value, TrainingJob::PyTorch),
        JobKind::XGBoostJob => typed_job(reporter, &value, TrainingJob::XGBoost),
        JobKind::PaddleJob => typed_job(reporter, &value, TrainingJob::Paddle),
        JobKind::JAXJob => typed_job(reporter, &value, TrainingJob::Jax),
        JobKind::MPIJob => typed_job(reporter, &value, TrainingJob::Mpi),
        JobKind::MXJob => typed_job(reporter, &value, TrainingJob::MXNet),
    };
    let mut job = job?;
    defaults::apply(&mut job);
    for issue in validation::validate(&job) {
        reporter.validation_issue(issue);
    }
    fits.then_some(job)
}

/// Reads a job of the type `T` stands for, with [`Reporter::typed_despite_errors`].
fn typed_job<T: DeserializeOwned>(
    reporter: &mut Reporter<'_>,
    value: &Value,
    job: fn(T) -> TrainingJob,
) -> (Option<TrainingJob>, bool) {
    let (object, fits) = reporter.typed_despite_errors::<T>(value);
    (object.map(job), fits)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The kind a document is read as, or the error's `PATH: message`.
    fn kind_of(value: &Value) -> Result<&'static str, String> {
        match document_kind(value) {
            Ok(DocumentKind::Job(kind)) => Ok(kind.as_str()),
            Ok(DocumentKind::LegacyTFJob) => Ok("v1alpha1 TFJob"),
            Ok(DocumentKind::ConfigMap) => Ok("ConfigMap"),
            Ok(DocumentKind::Secret) => Ok("Secret"),
            Ok(DocumentKind::ResourceQuota) => Ok("ResourceQuota"),
            Err(issue) => Err(format!("{}: {}", issue.path, issue.message)),
        }
    }

    #[test]
    fn documents_are_told_apart_by_api_version_and_kind() {
        for kind in JobKind::ALL {
            let document = json!({"apiVersion": "kubeflow.org/v1", "kind": kind.as_str()});
            assert_eq!(kind_of(&document), Ok(kind.as_str()));
        }
        for (api_version, kind, read_as) in [
            ("kubeflow.org/v1alpha1", "TFJob", "v1alpha1 TFJob"),
            ("v1", "ConfigMap", "ConfigMap"),
            ("v1", "Secret", "Secret"),
            ("v1", "ResourceQuota", "ResourceQuota"),
        ] {
            let document = json!({"apiVersion": api_version, "kind": kind});
            assert_eq!(kind_of(&document), Ok(read_as));
        }
    }

    #[test]
    fn other_documents_are_refused_saying_what_is_supported() {
        assert_eq!(
            kind_of(&json!({"apiVersion": "kubeflow.org/v1alpha1", "kind": "PyTorchJob"})),
            Err(format!(
                "kind: `PyTorchJob` (kubeflow.org/v1alpha1) is not a training job; {SUPPORTED}"
            ))
        );
        assert_eq!(
            kind_of(&json!({"apiVersion": "kubeflow.org/v1", "kind": "Notebook"})),
            Err(format!(
                "kind: `Notebook` is not a kubeflow.org/v1 kind; {SUPPORTED}"
            ))
        );
        assert_eq!(
            kind_of(&json!({"kind": "TFJob"})),
            Err(format!("apiVersion: missing or not a string; {SUPPORTED}"))
        );
        assert_eq!(
            kind_of(&json!({"apiVersion": "kubeflow.org/v1", "kind": 3})),
            Err(format!("kind: missing or not a string; {SUPPORTED}"))
        );
        assert_eq!(
            kind_of(&json!("TFJob")),
            Err(
                "(document): expected a mapping with `apiVersion` and `kind`, found a string"
                    .into()
            )
        );
    }

    #[test]
    fn a_refused_document_does_not_hide_the_valid_ones() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n\
                    apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata: {name: j}\nspec:\n  \
                    jaxReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: jax, image: jax}]}}\n";
        let manifests = load_str("two.yaml", text);
        let lines: Vec<String> = manifests
            .diagnostics
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [format!(
                "two.yaml:2:7: kind: `Deployment` (apps/v1) is not a training job; {SUPPORTED}"
            )]
        );
        assert_eq!(manifests.jobs.len(), 1);
        assert_eq!(manifests.jobs[0].job.name(), "j");
    }
}
