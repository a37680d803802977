//! The legacy `kubeflow.org/v1alpha1` TFJob, converted to v1 (our users still have such
//! manifests): `replicaSpecs: [{replicas, tfReplicaType, tfPort, template}]` becomes
//! `tfReplicaSpecs: {Type: {replicas, restartPolicy, template}}`.

use serde_json::{Map, Value, json};

use crate::field_path::FieldPath;
use crate::validation::Issue;

/// The port v1alpha1 used when `tfPort` is unset.
const V1ALPHA1_DEFAULT_PORT: i64 = 2222;

/// Converts a v1alpha1 TFJob document to a v1 one; warns once, and about what does not carry over.
pub(crate) fn convert(document: &Value) -> Result<(Value, Vec<Issue>), Vec<Issue>> {
    let mut issues = vec![Issue::warning(
        FieldPath::fields("apiVersion"),
        "kubeflow.org/v1alpha1 is deprecated; converted to kubeflow.org/v1 (`trainctl validate \
         -o yaml` shows the converted job)",
    )];
    let spec_path = FieldPath::fields("spec");
    let spec = document.get("spec").and_then(Value::as_object);
    let Some(replica_list) = spec
        .and_then(|s| s.get("replicaSpecs"))
        .and_then(Value::as_array)
    else {
        return Err(vec![Issue::error(
            spec_path.field("replicaSpecs"),
            "missing or not a list: a v1alpha1 TFJob lists its replicas as \
             `replicaSpecs: [{replicas, tfReplicaType, template}]`",
        )]);
    };
    for field in spec.into_iter().flat_map(Map::keys) {
        if !matches!(field.as_str(), "replicaSpecs" | "terminationPolicy") {
            issues.push(Issue::warning(
                spec_path.field(field),
                "has no kubeflow.org/v1 equivalent and is dropped by the conversion",
            ));
        }
    }

    let mut errors = Vec::new();
    let mut replica_specs = Map::new();
    for (i, entry) in replica_list.iter().enumerate() {
        let path = spec_path.field("replicaSpecs").index(i);
        let replica_type = match entry.get("tfReplicaType").and_then(Value::as_str) {
            Some(t) if t.eq_ignore_ascii_case("MASTER") => "Master",
            Some(t) if t.eq_ignore_ascii_case("WORKER") => "Worker",
            Some(t) if t.eq_ignore_ascii_case("PS") => "PS",
            other => {
                errors.push(Issue::error(
                    path.field("tfReplicaType"),
                    format!(
                        "{}: expected MASTER, WORKER or PS",
                        other.map_or("missing".to_owned(), |t| format!("`{t}`"))
                    ),
                ));
                continue;
            }
        };
        if replica_specs.contains_key(replica_type) {
            errors.push(Issue::error(
                path.field("tfReplicaType"),
                format!("{replica_type} is listed twice; list each replica type once"),
            ));
            continue;
        }
        let mut template = entry.get("template").cloned().unwrap_or_else(|| json!({}));
        // v1alpha1 restarted by the pod template's policy; v1 by the replica's.
        let restart_policy = template
            .pointer("/spec/restartPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(port) = entry.get("tfPort").and_then(Value::as_i64)
            && port != V1ALPHA1_DEFAULT_PORT
        {
            add_tf_port(&mut template, port);
        }
        let mut converted = Map::new();
        converted.insert(
            "replicas".into(),
            entry.get("replicas").cloned().unwrap_or(json!(1)),
        );
        if let Some(policy) = restart_policy {
            converted.insert("restartPolicy".into(), Value::String(policy));
        }
        converted.insert("template".into(), template);
        replica_specs.insert(replica_type.into(), Value::Object(converted));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut v1 = document.clone();
    v1["apiVersion"] = json!(crate::API_VERSION);
    v1["spec"] = json!({ "tfReplicaSpecs": replica_specs });
    Ok((v1, issues))
}

/// Declares a non-default `tfPort` as the v1 `tfjob-port` of the `tensorflow` container.
fn add_tf_port(template: &mut Value, port: i64) {
    let Some(containers) = template
        .pointer_mut("/spec/containers")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    if let Some(container) = containers.iter_mut().find(|c| c["name"] == "tensorflow") {
        let ports = container
            .as_object_mut()
            .map(|c| c.entry("ports").or_insert_with(|| json!([])));
        if let Some(Value::Array(ports)) = ports {
            ports.push(json!({ "name": "tfjob-port", "containerPort": port }));
        }
    }
}
