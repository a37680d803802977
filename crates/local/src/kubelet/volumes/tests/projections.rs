//! The projections of ConfigMaps and Secrets: `items`, `defaultMode` and `mode`, missing
//! objects and keys (`optional`), `binaryData` and `stringData`, and the keys and paths refused.

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, SecretVolumeSource};

use super::*;

/// A projection's files as `(path, bytes, mode)`.
type Files = Vec<(String, Vec<u8>, u32)>;

/// The files of the ConfigMap volume `config` with this source, of the namespace `team`.
fn project_map(source: Value, companions: &[Companion]) -> Result<Option<Files>, String> {
    let source: ConfigMapVolumeSource = serde_json::from_value(source).expect("a source");
    project_config_map("config", &source, "team", companions).map(|files| {
        files.map(|files| {
            files
                .into_iter()
                .map(|file| (file.path.display().to_string(), file.bytes, file.mode))
                .collect()
        })
    })
}

/// The files of the Secret volume `creds` with this source, of the namespace `team`.
fn project_secret_files(source: Value, companions: &[Companion]) -> Result<Option<Files>, String> {
    let source: SecretVolumeSource = serde_json::from_value(source).expect("a source");
    project_secret("creds", &source, "team", companions).map(|files| {
        files.map(|files| {
            files
                .into_iter()
                .map(|file| (file.path.display().to_string(), file.bytes, file.mode))
                .collect()
        })
    })
}

/// A projected file as `(path, bytes, mode)`.
fn file(path: &str, bytes: &str, mode: u32) -> (String, Vec<u8>, u32) {
    (path.to_owned(), bytes.as_bytes().to_vec(), mode)
}

#[test]
fn items_choose_keys_their_paths_and_modes() {
    let files = project_map(
        json!({
            "name": "settings",
            "defaultMode": 0o440,
            "items": [
                {"key": "config.yaml", "path": "conf/train.yaml", "mode": 0o400},
                {"key": "extra", "path": "extra.txt"},
            ],
        }),
        &companions(),
    )
    .expect("projects");
    assert_eq!(
        files,
        Some(vec![
            file("conf/train.yaml", "epochs: 3\n", 0o400),
            file("extra.txt", "x", 0o440),
        ])
    );
}

#[test]
fn default_mode_sets_every_files_mode() {
    let files = project_map(
        json!({"name": "settings", "defaultMode": 0o755}),
        &companions(),
    )
    .expect("projects")
    .expect("found");
    assert!(files.iter().all(|(_, _, mode)| *mode == 0o755), "{files:?}");
    let files = project_secret_files(
        json!({"secretName": "token", "defaultMode": 0o644}),
        &companions(),
    )
    .expect("projects")
    .expect("found");
    assert!(files.iter().all(|(_, _, mode)| *mode == 0o644), "{files:?}");
    // Only the permission bits are kept.
    let files = project_map(
        json!({"name": "settings", "defaultMode": 0o4755}),
        &companions(),
    )
    .expect("projects")
    .expect("found");
    assert!(files.iter().all(|(_, _, mode)| *mode == 0o755), "{files:?}");
}

#[test]
fn a_missing_key_is_refused_in_the_kubelets_words() {
    let error = project_map(
        json!({"name": "settings", "items": [{"key": "absent", "path": "a"}]}),
        &companions(),
    )
    .expect_err("refused");
    assert_eq!(
        error,
        "MountVolume.SetUp failed for volume \"config\" : configmap references non-existent \
         config key: absent"
    );
    assert!(error.contains("configmap references non-existent config key: absent"));
    let error = project_secret_files(
        json!({"secretName": "token", "items": [{"key": "absent", "path": "a"}]}),
        &companions(),
    )
    .expect_err("refused");
    assert!(
        error.ends_with("secret references non-existent config key: absent"),
        "{error}"
    );
}

#[test]
fn a_missing_object_is_refused_unless_optional() {
    let error = project_map(json!({"name": "absent"}), &companions()).expect_err("refused");
    assert_eq!(
        error,
        "MountVolume.SetUp failed for volume \"config\" : configmap \"absent\" not found; give it \
         in the same file as the job or submit it to `trainctl server` first, or mark the volume \
         `optional: true`"
    );
    assert_eq!(
        project_map(json!({"name": "absent", "optional": true}), &companions()),
        Ok(None)
    );
    let error =
        project_secret_files(json!({"secretName": "absent"}), &companions()).expect_err("refused");
    assert!(
        error.starts_with(
            "MountVolume.SetUp failed for volume \"creds\" : secret \"absent\" not found"
        ),
        "{error}"
    );
    assert_eq!(
        project_secret_files(
            json!({"secretName": "absent", "optional": true}),
            &companions()
        ),
        Ok(None)
    );
    // An object of another namespace is not this one's.
    let mut elsewhere = config_map("settings", json!({"data": {"a": "b"}}));
    if let Companion::ConfigMap(map) = &mut elsewhere {
        map.metadata.namespace = Some("other".to_owned());
    }
    assert!(project_map(json!({"name": "settings"}), &[elsewhere]).is_err());
    // One without a namespace is the job's.
    let mut anywhere = config_map("settings", json!({"data": {"a": "b"}}));
    if let Companion::ConfigMap(map) = &mut anywhere {
        map.metadata.namespace = None;
    }
    assert_eq!(
        project_map(json!({"name": "settings"}), &[anywhere]),
        Ok(Some(vec![file("a", "b", 0o644)]))
    );
}

#[test]
fn an_optional_objects_missing_key_is_left_out() {
    let files = project_map(
        json!({
            "name": "settings",
            "optional": true,
            "items": [{"key": "absent", "path": "a"}, {"key": "extra", "path": "e"}],
        }),
        &companions(),
    )
    .expect("projects");
    assert_eq!(files, Some(vec![file("e", "x", 0o644)]));
}

#[test]
fn an_optional_missing_object_is_an_empty_read_only_directory() {
    let plan = planned(
        json!([{"name": "config", "configMap": {"name": "absent", "optional": true}}]),
        json!([{"name": "config", "mountPath": "/etc/config"}]),
    )
    .expect("plans");
    let dir = PathBuf::from(REPLICA).join("config");
    assert_eq!(plan.mounts, vec![bind("/etc/config", &dir, true)]);
    assert_eq!(
        plan.backings[0].1,
        Backing::Projected {
            kind: "ConfigMap",
            name: "absent".to_owned(),
            path: dir.clone()
        }
    );
    assert_eq!(plan.projections[0].files, Vec::new());
    assert_eq!(plan.projections[0].dir, dir);
}

#[test]
fn binary_data_is_projected_as_its_bytes() {
    let companions = [config_map(
        "blobs",
        json!({"data": {"text": "t"}, "binaryData": {"weights.bin": "AAH/"}}),
    )];
    let files = project_map(json!({"name": "blobs"}), &companions).expect("projects");
    assert_eq!(
        files,
        Some(vec![
            file("text", "t", 0o644),
            ("weights.bin".to_owned(), vec![0, 1, 255], 0o644),
        ])
    );
}

#[test]
fn a_secrets_string_data_is_merged_over_its_data() {
    let companions = [secret(
        "token",
        json!({"data": {"a": "ZnJvbS1kYXRh", "b": "Yg=="}, "stringData": {"a": "from-string-data"}}),
    )];
    let files = project_secret_files(json!({"secretName": "token"}), &companions)
        .expect("projects")
        .expect("found");
    assert_eq!(
        files,
        vec![file("a", "from-string-data", 0o600), file("b", "b", 0o600)]
    );
}

#[test]
fn items_paths_out_of_the_volume_are_refused() {
    for path in ["", "/etc/passwd", "../x", "a/../../x"] {
        let error = project_map(
            json!({"name": "settings", "items": [{"key": "extra", "path": path}]}),
            &companions(),
        )
        .expect_err(path);
        assert_eq!(
            error,
            format!(
                "volume \"config\": items path `{path}` must be a relative path inside the volume"
            )
        );
    }
}

/// The mode a manifest's `defaultMode: 0400` (YAML's octal, as Kubernetes reads it) gives a
/// ConfigMap's files, through the manifest loader.
#[test]
fn a_yaml_octal_default_mode_is_octal() {
    let manifest = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers:
          - name: tensorflow
            image: x
            volumeMounts: [{name: config, mountPath: /etc/config}]
          volumes:
          - name: config
            configMap:
              name: settings
              defaultMode: 0400
              items: [{key: a, path: a, mode: 0755}, {key: a, path: b}]
";
    let loaded = trainctl_api::manifest::load_str("job.yaml", manifest);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let job = &loaded.jobs[0].job;
    let spec = job.replica_specs().values().next().expect("a replica type");
    let pod_spec = spec.template.spec.as_ref().expect("a pod spec");
    let source = pod_spec.volumes.as_ref().expect("volumes")[0]
        .config_map
        .as_ref()
        .expect("a ConfigMap volume");
    let items = source.items.as_ref().expect("items");
    assert_eq!(
        (source.default_mode, items[0].mode),
        (Some(0o400), Some(0o755)),
        "`defaultMode: 0400` and `mode: 0755` as the manifest loader reads them"
    );
    let files = project_config_map("config", source, "default", &loaded.companions)
        .expect("projects")
        .expect("found");
    let modes: Vec<u32> = files.iter().map(|file| file.mode).collect();
    assert_eq!(modes, [0o755, 0o400]);
}

#[test]
fn a_key_that_is_no_file_name_is_refused() {
    for key in ["../../escape", "..", ".", "..hidden", "sub/file", "", "a b"] {
        let companions = [config_map("bad", json!({"data": {key: "x", "fine": "y"}}))];
        let error = project_map(json!({"name": "bad"}), &companions).expect_err(key);
        assert_eq!(
            error,
            format!(
                "volume \"config\": configmap \"bad\" has the key `{key}`, which is not valid: a \
                 key is at most 253 letters, digits, `-`, `_` and `.`, and is not `.` nor starts \
                 with `..`"
            )
        );
        // Whether or not `items` name it: the API server refuses the object.
        let error = project_map(
            json!({"name": "bad", "items": [{"key": "fine", "path": "fine"}]}),
            &companions,
        )
        .expect_err(key);
        assert!(error.contains(&format!("the key `{key}`")), "{error}");
    }
    let companions = [secret("bad", json!({"stringData": {"../x": "y"}}))];
    let error = project_secret_files(json!({"secretName": "bad"}), &companions).expect_err("..");
    assert!(
        error.starts_with("volume \"creds\": secret \"bad\" has the key `../x`"),
        "{error}"
    );
    let long = "k".repeat(254);
    let companions = [config_map("long", json!({"data": {long.as_str(): "x"}}))];
    assert!(project_map(json!({"name": "long"}), &companions).is_err());
    let fine = [config_map(
        "fine",
        json!({"data": {"a.b-c_D9": "x", ".hidden": "y", "k".repeat(253): "z"}}),
    )];
    assert!(project_map(json!({"name": "fine"}), &fine).is_ok());
}
