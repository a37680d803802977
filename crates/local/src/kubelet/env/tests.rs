use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{
    ConfigMapEnvSource, ConfigMapKeySelector, EnvFromSource, PodSpec, ResourceRequirements,
    SecretEnvSource, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

fn from(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(source),
    }
}

fn field(name: &str, path: &str) -> EnvVar {
    from(
        name,
        EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: path.to_owned(),
            }),
            ..EnvVarSource::default()
        },
    )
}

fn config_map_key(name: &str, map: &str, key: &str, optional: Option<bool>) -> EnvVar {
    from(
        name,
        EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: map.to_owned(),
                key: key.to_owned(),
                optional,
            }),
            ..EnvVarSource::default()
        },
    )
}

fn resource_field(name: &str, resource: &str, divisor: Option<&str>) -> EnvVar {
    from(
        name,
        EnvVarSource {
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: None,
                divisor: divisor.map(|d| Quantity(d.to_owned())),
                resource: resource.to_owned(),
            }),
            ..EnvVarSource::default()
        },
    )
}

fn pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("mnist-worker-0".to_owned()),
            namespace: Some("team".to_owned()),
            labels: Some(BTreeMap::from([(
                "training.kubeflow.org/replica-type".to_owned(),
                "worker".to_owned(),
            )])),
            annotations: Some(BTreeMap::from([("note".to_owned(), "hi".to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            service_account_name: Some("trainer".to_owned()),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn companions() -> Vec<Companion> {
    vec![
        Companion::ConfigMap(ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                ("lr".to_owned(), "0.1".to_owned()),
                ("epochs".to_owned(), "3".to_owned()),
            ])),
            ..ConfigMap::default()
        }),
        Companion::ConfigMap(ConfigMap {
            metadata: ObjectMeta {
                name: Some("elsewhere".to_owned()),
                namespace: Some("other".to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
            ..ConfigMap::default()
        }),
        Companion::Secret(Secret {
            metadata: ObjectMeta {
                name: Some("token".to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                ("user".to_owned(), ByteString(b"ann".to_vec())),
                ("binary".to_owned(), ByteString(vec![0xff, 0xfe])),
            ])),
            string_data: Some(BTreeMap::from([("pass".to_owned(), "s3cret".to_owned())])),
            ..Secret::default()
        }),
    ]
}

fn resolve(container: &Container) -> Result<Vec<(String, String)>, EnvError> {
    let pod = pod();
    let companions = companions();
    let capacity = NodeCapacity {
        cpu_millis: 8_000,
        memory_bytes: 16 << 30,
        gpus: vec![],
    };
    resolve_env(
        &EnvContext {
            pod: &pod,
            node_name: "laptop",
            capacity: &capacity,
            companions: &companions,
        },
        container,
    )
}

fn with_env(env: Vec<EnvVar>) -> Container {
    Container {
        name: "main".to_owned(),
        env: Some(env),
        ..Container::default()
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn literal_values_expand_against_earlier_variables_only() {
    let container = with_env(vec![
        literal("EARLY", "$(LATE)"),
        literal("LATE", "late"),
        literal("BOTH", "$(LATE)-$(EARLY)"),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[
            ("EARLY", "$(LATE)"),
            ("LATE", "late"),
            ("BOTH", "late-$(LATE)")
        ])
    );
}

#[test]
fn paddle_pod_ip_dummy_expands_from_field_ref() {
    let container = with_env(vec![
        field("POD_IP_DUMMY", "status.podIP"),
        literal("PADDLE_CURRENT_ENDPOINT", "$(POD_IP_DUMMY):36543"),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[
            ("POD_IP_DUMMY", "127.0.0.1"),
            ("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:36543"),
        ])
    );
}

#[test]
fn values_from_sources_are_not_expanded() {
    let container = with_env(vec![
        literal("A", "a"),
        field("NOTE", "metadata.annotations['note']"),
    ]);
    let mut pod_note = resolve(&container).unwrap();
    pod_note.sort();
    assert_eq!(pod_note, pairs(&[("A", "a"), ("NOTE", "hi")]));
}

#[test]
fn redefined_variable_keeps_its_place_and_takes_the_later_value() {
    let container = with_env(vec![
        literal("A", "1"),
        literal("B", "2"),
        literal("A", "$(A)3"),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[("A", "13"), ("B", "2")])
    );
}

#[test]
fn field_refs_report_the_pod_on_this_machine() {
    let container = with_env(vec![
        field("NAME", "metadata.name"),
        field("NS", "metadata.namespace"),
        field(
            "TYPE",
            "metadata.labels['training.kubeflow.org/replica-type']",
        ),
        field("ABSENT", "metadata.labels['nope']"),
        field("NOTE", "metadata.annotations['note']"),
        field("IP", "status.podIP"),
        field("HOST_IP", "status.hostIP"),
        field("NODE", "spec.nodeName"),
        field("SA", "spec.serviceAccountName"),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[
            ("NAME", "mnist-worker-0"),
            ("NS", "team"),
            ("TYPE", "worker"),
            ("ABSENT", ""),
            ("NOTE", "hi"),
            ("IP", "127.0.0.1"),
            ("HOST_IP", "127.0.0.1"),
            ("NODE", "laptop"),
            ("SA", "trainer"),
        ])
    );
}

#[test]
fn unsupported_field_ref_is_an_error() {
    let error = resolve(&with_env(vec![field("X", "status.phase")])).unwrap_err();
    assert!(
        matches!(error, EnvError::UnsupportedField { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("replica mnist-worker-0: env X: fieldRef `status.phase`")
    );
}

#[test]
fn resource_field_refs_round_up_to_the_divisor() {
    let mut container = with_env(vec![
        resource_field("CPU_LIMIT", "limits.cpu", None),
        resource_field("CPU_REQUEST_MILLIS", "requests.cpu", Some("1m")),
        resource_field("MEMORY_MI", "limits.memory", Some("1Mi")),
        resource_field("MEMORY_REQUEST", "requests.memory", None),
    ]);
    container.resources = Some(ResourceRequirements {
        limits: Some(BTreeMap::from([
            ("cpu".to_owned(), Quantity("1500m".to_owned())),
            ("memory".to_owned(), Quantity("1G".to_owned())),
        ])),
        requests: Some(BTreeMap::from([(
            "cpu".to_owned(),
            Quantity("250m".to_owned()),
        )])),
        ..ResourceRequirements::default()
    });
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[
            ("CPU_LIMIT", "2"),
            ("CPU_REQUEST_MILLIS", "250"),
            ("MEMORY_MI", "954"),
            ("MEMORY_REQUEST", "1000000000"),
        ])
    );
}

#[test]
fn resource_field_ref_without_limits_reports_the_machine() {
    let container = with_env(vec![
        resource_field("CPU", "limits.cpu", None),
        resource_field("MEMORY_GI", "limits.memory", Some("1Gi")),
        resource_field("CPU_REQUEST", "requests.cpu", None),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[("CPU", "8"), ("MEMORY_GI", "16"), ("CPU_REQUEST", "0")])
    );
}

#[test]
fn resource_field_ref_rejects_other_resources_and_zero_divisors() {
    let error = resolve(&with_env(vec![resource_field(
        "X",
        "limits.nvidia.com/gpu",
        None,
    )]))
    .unwrap_err();
    assert!(
        matches!(error, EnvError::UnsupportedResource { .. }),
        "{error}"
    );
    let error = resolve(&with_env(vec![resource_field(
        "X",
        "limits.cpu",
        Some("0"),
    )]))
    .unwrap_err();
    assert!(matches!(error, EnvError::InvalidQuantity { .. }), "{error}");
}

#[test]
fn config_map_and_secret_keys_resolve() {
    let container = with_env(vec![
        config_map_key("LR", "settings", "lr", None),
        from(
            "PASS",
            EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: "token".to_owned(),
                    key: "pass".to_owned(),
                    optional: None,
                }),
                ..EnvVarSource::default()
            },
        ),
    ]);
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[("LR", "0.1"), ("PASS", "s3cret")])
    );
}

#[test]
fn missing_key_error_names_replica_variable_and_config_map() {
    let error = resolve(&with_env(vec![config_map_key(
        "LR", "settings", "rate", None,
    )]))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "replica mnist-worker-0: env LR: ConfigMap `settings` has no key `rate`; add it, or mark the reference `optional: true`"
    );
}

#[test]
fn missing_config_map_is_an_error_unless_optional() {
    let error = resolve(&with_env(vec![config_map_key("LR", "absent", "lr", None)])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "replica mnist-worker-0: env LR: ConfigMap `absent` was not submitted with the job; give it in the same file or submit it to `trainctl server` first, or mark the reference `optional: true`"
    );
    let optional = with_env(vec![
        config_map_key("LR", "absent", "lr", Some(true)),
        config_map_key("RATE", "settings", "rate", Some(true)),
    ]);
    assert_eq!(resolve(&optional).unwrap(), pairs(&[]));
}

#[test]
fn companions_in_another_namespace_are_not_found() {
    let error = resolve(&with_env(vec![config_map_key("K", "elsewhere", "k", None)])).unwrap_err();
    assert!(matches!(error, EnvError::MissingObject { .. }), "{error}");
}

#[test]
fn binary_secret_value_is_an_error() {
    let container = with_env(vec![from(
        "B",
        EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: "token".to_owned(),
                key: "binary".to_owned(),
                optional: None,
            }),
            ..EnvVarSource::default()
        },
    )]);
    assert!(matches!(resolve(&container), Err(EnvError::NotText { .. })));
}

#[test]
fn env_from_imports_with_prefix_before_env() {
    let container = Container {
        env_from: Some(vec![
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "settings".to_owned(),
                    optional: None,
                }),
                prefix: Some("CFG_".to_owned()),
                secret_ref: None,
            },
            EnvFromSource {
                config_map_ref: None,
                prefix: None,
                secret_ref: Some(SecretEnvSource {
                    name: "absent".to_owned(),
                    optional: Some(true),
                }),
            },
        ]),
        env: Some(vec![
            literal("RUN", "lr=$(CFG_lr)"),
            literal("CFG_epochs", "5"),
        ]),
        ..Container::default()
    };
    assert_eq!(
        resolve(&container).unwrap(),
        pairs(&[("CFG_epochs", "5"), ("CFG_lr", "0.1"), ("RUN", "lr=0.1")])
    );
}

#[test]
fn missing_env_from_object_names_the_import() {
    let container = Container {
        env_from: Some(vec![EnvFromSource {
            config_map_ref: None,
            prefix: None,
            secret_ref: Some(SecretEnvSource {
                name: "absent".to_owned(),
                optional: None,
            }),
        }]),
        ..Container::default()
    };
    assert_eq!(
        resolve(&container).unwrap_err().to_string(),
        "replica mnist-worker-0: env envFrom[0]: Secret `absent` was not submitted with the job; give it in the same file or submit it to `trainctl server` first, or mark the reference `optional: true`"
    );
}

#[test]
fn values_that_double_at_each_step_stop_at_the_limit_instead_of_filling_memory() {
    // The probe's manifest: each variable is the one before, twice. 40 steps would be a
    // terabyte; the resolution fails once a value passes one environment string's limit.
    let mut env = vec![literal("V0", "0123456789abcdef")];
    for step in 1..40 {
        let previous = format!("$(V{})", step - 1);
        env.push(literal(&format!("V{step}"), &previous.repeat(2)));
    }
    let error = resolve(&with_env(env)).expect_err("too large");
    // 16 bytes doubled 13 times is 128 KiB, the most one string may hold; the 14th is over.
    assert_eq!(
        error,
        EnvError::TooLarge {
            replica: "mnist-worker-0".to_owned(),
            variable: "V14".to_owned(),
        }
    );
    assert_eq!(
        error.to_string(),
        "replica mnist-worker-0: env V14: expands to more than 128 KiB, the most one argument or environment string may hold; check its $(VAR) references"
    );
}

#[test]
fn many_values_of_a_large_variable_stop_at_what_a_process_may_hold_in_all() {
    // 64 KiB, then as many variables of it as the manifest likes: the resolution stops once
    // the env passes what a process's environment may hold together (2 MiB), holding no more.
    let mut env = vec![literal("V0", "0123456789abcdef")];
    for step in 1..=12 {
        let previous = format!("$(V{})", step - 1);
        env.push(literal(&format!("V{step}"), &previous.repeat(2)));
    }
    env.extend((0..20_000).map(|at| literal(&format!("F{at}"), "$(V12)")));
    let error = resolve(&with_env(env)).expect_err("too much");
    assert_eq!(
        error,
        EnvError::TooMuch {
            replica: "mnist-worker-0".to_owned(),
            variable: "F29".to_owned(),
        }
    );
    assert_eq!(
        error.to_string(),
        "replica mnist-worker-0: env F29: expands to more than 2 MiB with the container's env \
         and args before it, the most a process's arguments and environment may hold together; \
         check the $(VAR) references and the size of the container's env"
    );
}
