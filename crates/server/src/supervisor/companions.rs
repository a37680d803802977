//! The server's ConfigMaps and Secrets, as `kubectl apply -f configmap.yaml` then
//! `kubectl apply -f job.yaml` expect: every one a submitted manifest holds is applied (kept in
//! the store, before the manifest's jobs are recorded), and a job is recorded with the objects
//! its pods reference ([`job_references`]): its own file's, then, for each that file does not
//! hold, the one the server keeps in the job's namespace.
//!
//! What a job is recorded with is a snapshot taken when it is submitted, as a pod gets the
//! object's content when it starts: applying the object again later changes the jobs submitted
//! after, not those submitted before (submit the job again for it to see the change). A Secret's
//! data goes to the store only; answers and the server's log name objects, never their data.

use jiff::Timestamp;
use trainctl_api::TrainingJob;
use trainctl_api::manifest::{Companion, check_namespace};
use trainctl_local::kubelet::references::job_references;
use trainctl_local::runner::new_record;
use trainctl_local::store::JobRecord;
use trainctl_server_api::ObjectApplied;

use super::{Supervisor, SupervisorError};

/// What [`Supervisor::apply_companions`] applied, in file order.
#[derive(Debug, Default)]
pub(super) struct CompanionsApplied {
    /// The ConfigMaps.
    pub config_maps: Vec<ObjectApplied>,
    /// The Secrets.
    pub secrets: Vec<ObjectApplied>,
}

impl Supervisor {
    /// Checks the ConfigMaps and Secrets of a manifest, each in its namespace (its own, else
    /// `namespace`, else `default`; its own conflicting with `namespace` is refused, as for
    /// jobs): one line per problem. The objects to apply, namespaced.
    pub(super) fn check_companions(
        companions: &[Companion],
        source: &str,
        namespace: Option<&str>,
        problems: &mut Vec<String>,
    ) -> Vec<Companion> {
        let mut checked = Vec::new();
        for companion in companions {
            let resource = companion.resource();
            let meta = companion.metadata();
            let Some(name) = meta.name.as_deref().filter(|name| !name.is_empty()) else {
                problems.push(format!(
                    "{source}: {resource}: metadata.name: required: the server keeps a \
                     {resource} by its name"
                ));
                continue;
            };
            let own = match (meta.namespace.as_deref(), namespace) {
                (Some(own), Some(wanted)) if own != wanted => {
                    problems.push(format!(
                        "{source}: {resource}/{name}: the object's namespace `{own}` does not \
                         match the namespace `{wanted}`"
                    ));
                    continue;
                }
                (Some(own), _) => own,
                (None, wanted) => wanted.unwrap_or("default"),
            };
            if let Err(problem) = check_namespace(own) {
                problems.push(format!(
                    "{source}: {resource}/{name}: metadata.namespace: {problem}"
                ));
                continue;
            }
            let mut object = companion.clone();
            object.metadata_mut().namespace = Some(own.to_owned());
            checked.push(object);
        }
        checked
    }

    /// New records of `jobs` (each given its uid, creation time and namespace), each with the
    /// objects it references ([`Supervisor::companions_of`]).
    pub(super) fn new_records(
        &self,
        jobs: &mut [TrainingJob],
        own: &[Companion],
    ) -> Result<Vec<JobRecord>, SupervisorError> {
        let now = Timestamp::now();
        jobs.iter_mut()
            .map(|job| {
                let companions = self.companions_of(job, own)?;
                Ok(new_record(job, companions, now))
            })
            .collect()
    }

    /// The objects to record with `job`: `own` (its file's, as written), then, for each object
    /// its pods reference that `own` does not hold, the one kept in the job's namespace, as it is
    /// now. A reference to an object the server does not know is left to the run, which fails
    /// it as the kubelet would (unless `optional`).
    fn companions_of(
        &self,
        job: &TrainingJob,
        own: &[Companion],
    ) -> Result<Vec<Companion>, SupervisorError> {
        let namespace = job.namespace();
        let mut companions = own.to_vec();
        let store = self.store();
        for reference in job_references(job) {
            if own
                .iter()
                .any(|companion| reference.names(companion, namespace))
            {
                continue;
            }
            if let Some(kept) = store.config_object(reference.kind, namespace, &reference.name)? {
                companions.push(kept.object);
            }
        }
        Ok(companions)
    }

    /// Records checked objects (namespaced), replacing those of the same kind, namespace and
    /// name.
    pub(super) fn apply_companions(
        &self,
        objects: Vec<Companion>,
    ) -> Result<CompanionsApplied, SupervisorError> {
        let now = Timestamp::now();
        let mut applied = CompanionsApplied::default();
        let mut store = self.store();
        for object in objects {
            let meta = object.metadata();
            let namespace = meta.namespace.clone().unwrap_or_default();
            let name = meta.name.clone().unwrap_or_default();
            let replaced = store.apply_config_object(&namespace, &object, now)?;
            let action = if replaced { "configured" } else { "created" };
            let resource = object.resource();
            tracing::info!(
                namespace = namespace.as_str(),
                "{resource}/{name} {action} in namespace {namespace}"
            );
            let one = ObjectApplied {
                action,
                namespace,
                name,
            };
            match object {
                Companion::ConfigMap(_) => applied.config_maps.push(one),
                Companion::Secret(_) => applied.secrets.push(one),
            }
        }
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use serde_json::json;

    use super::*;

    fn config_map(name: Option<&str>, namespace: Option<&str>) -> Companion {
        let map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace}, "data": {"a": "1"}
        }))
        .expect("a ConfigMap");
        Companion::ConfigMap(map)
    }

    fn secret(name: &str) -> Companion {
        let secret: Secret =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("a Secret");
        Companion::Secret(secret)
    }

    fn namespaces(objects: &[Companion]) -> Vec<(&str, &str, &str)> {
        objects
            .iter()
            .map(|object| {
                let meta = object.metadata();
                (
                    object.resource(),
                    meta.namespace.as_deref().unwrap_or_default(),
                    meta.name.as_deref().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn objects_go_to_their_own_namespace_else_the_one_asked_for_else_default() {
        let file = [
            config_map(Some("own"), Some("team-a")),
            config_map(Some("settings"), None),
            secret("token"),
        ];
        let mut problems = Vec::new();
        let checked = Supervisor::check_companions(&file, "f.yaml", None, &mut problems);
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            namespaces(&checked),
            [
                ("configmap", "team-a", "own"),
                ("configmap", "default", "settings"),
                ("secret", "default", "token"),
            ]
        );
        let checked =
            Supervisor::check_companions(&file[1..], "f.yaml", Some("team-b"), &mut problems);
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            namespaces(&checked),
            [
                ("configmap", "team-b", "settings"),
                ("secret", "team-b", "token")
            ]
        );
    }

    #[test]
    fn another_namespace_than_the_one_asked_for_no_name_or_a_bad_namespace_is_refused() {
        let file = [
            config_map(Some("own"), Some("team-a")),
            config_map(None, None),
            config_map(Some("odd"), Some("Team_C")),
            config_map(Some("settings"), Some("team-b")),
        ];
        let mut problems = Vec::new();
        let checked = Supervisor::check_companions(&file, "f.yaml", Some("team-b"), &mut problems);
        assert_eq!(namespaces(&checked), [("configmap", "team-b", "settings")]);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert_eq!(
            problems[0],
            "f.yaml: configmap/own: the object's namespace `team-a` does not match the namespace \
             `team-b`"
        );
        assert_eq!(
            problems[1],
            "f.yaml: configmap: metadata.name: required: the server keeps a configmap by its name"
        );
        assert!(
            problems[2].starts_with("f.yaml: configmap/odd: the object's namespace `Team_C`"),
            "{}",
            problems[2]
        );
        let mut problems = Vec::new();
        Supervisor::check_companions(&file[2..3], "f.yaml", None, &mut problems);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].starts_with("f.yaml: configmap/odd: metadata.namespace: "),
            "{}",
            problems[0]
        );
    }
}
