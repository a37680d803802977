//! Tests of [`plan`], [`ReplicaVolumes`] and the projections of ConfigMaps and Secrets, by topic
//! in the submodules; here, what they share: a pod spec and a container from JSON, the
//! companions most tests read, and [`plan`] with the claims' and replica's directories of these
//! tests.

mod claims;
mod host_path;
mod kinds;
mod materialize;
mod mounts;
mod projections;
mod sub_path;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::{Value, json};

use super::*;

/// The claims' directory of these tests.
const CLAIMS: &str = "/state/volumes";

/// The replica's own directory of these tests.
const REPLICA: &str = "/state/pods/uid/worker-0";

/// A pod spec with these `volumes` (JSON, as a manifest gives them).
fn pod(volumes: Value) -> PodSpec {
    let mut spec = json!({"containers": []});
    spec["volumes"] = volumes;
    serde_json::from_value(spec).expect("a pod spec")
}

/// A `tensorflow` container with these `volumeMounts`.
fn container(mounts: Value) -> Container {
    let mut container = json!({"name": "tensorflow"});
    container["volumeMounts"] = mounts;
    serde_json::from_value(container).expect("a container")
}

/// A ConfigMap companion of the namespace `team` (JSON body under the metadata).
fn config_map(name: &str, body: Value) -> Companion {
    let mut object = json!({"metadata": {"name": name, "namespace": "team"}});
    merge(&mut object, body);
    Companion::ConfigMap(serde_json::from_value::<ConfigMap>(object).expect("a ConfigMap"))
}

/// A Secret companion of the namespace `team`.
fn secret(name: &str, body: Value) -> Companion {
    let mut object = json!({"metadata": {"name": name, "namespace": "team"}});
    merge(&mut object, body);
    Companion::Secret(serde_json::from_value::<Secret>(object).expect("a Secret"))
}

/// `body`'s fields added to `object`'s.
fn merge(object: &mut Value, body: Value) {
    let (Value::Object(object), Value::Object(body)) = (object, body) else {
        panic!("objects only");
    };
    object.extend(body);
}

/// The companions most tests read.
fn companions() -> Vec<Companion> {
    vec![
        config_map(
            "settings",
            json!({"data": {"config.yaml": "epochs: 3\n", "extra": "x"}}),
        ),
        secret(
            "token",
            json!({"data": {"token": "c2VjcmV0"}, "stringData": {"user": "ada"}}),
        ),
    ]
}

/// Plans with the claims' and replica's directories of these tests and `claims`' bindings.
fn plan_with(
    volumes: Value,
    mounts: Value,
    env: &[(&str, &str)],
    companions: &[Companion],
    claims: &dyn ClaimPaths,
) -> Result<ReplicaVolumes, String> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    let context = VolumeContext {
        namespace: "team",
        companions,
        claims,
        dirs: VolumeDirs {
            claims: Path::new(CLAIMS),
            replica: Path::new(REPLICA),
        },
    };
    plan(&pod(volumes), &container(mounts), &env, &context)
}

/// Plans with the usual companions and no binding.
fn planned(volumes: Value, mounts: Value) -> Result<ReplicaVolumes, String> {
    plan_with(volumes, mounts, &[], &companions(), &())
}

/// A writable or read-only bind mount of `sub_path` inside the volume directory `root` at
/// `target`.
fn beneath(target: &str, root: impl Into<PathBuf>, sub_path: &str, read_only: bool) -> Mount {
    Mount {
        target: PathBuf::from(target),
        source: MountSource::Beneath {
            root: root.into(),
            sub_path: PathBuf::from(sub_path),
        },
        read_only,
    }
}

/// A writable or read-only bind mount of `source` at `target`.
fn bind(target: &str, source: impl Into<PathBuf>, read_only: bool) -> Mount {
    Mount {
        target: PathBuf::from(target),
        source: MountSource::Bind(source.into()),
        read_only,
    }
}
