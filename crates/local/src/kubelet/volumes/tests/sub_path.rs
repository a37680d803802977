//! A mount's `subPath` and `subPathExpr`: a directory of the volume (made when missing) or one
//! of its files, expanded from the env, never out of the volume.

use super::*;

#[test]
fn a_sub_path_mounts_a_directory_of_the_volume_made_when_missing() {
    let plan = planned(
        json!([
            {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
            {"name": "scratch", "emptyDir": {}},
        ]),
        json!([
            {"name": "data", "mountPath": "/data", "subPath": "run/1"},
            {"name": "scratch", "mountPath": "/scratch", "subPath": "a"},
        ]),
    )
    .expect("plans");
    let claim = PathBuf::from("/state/volumes/team/shared");
    let scratch = PathBuf::from(REPLICA).join("scratch");
    assert_eq!(
        plan.mounts,
        vec![
            beneath("/data", &claim, "run/1", false),
            beneath("/scratch", &scratch, "a", false),
        ]
    );
    assert_eq!(plan.dirs, vec![claim.clone(), scratch.clone()]);
    assert_eq!(
        plan.sub_paths,
        vec![
            (claim, PathBuf::from("run/1")),
            (scratch, PathBuf::from("a"))
        ]
    );
}

#[test]
fn a_sub_path_of_a_config_map_is_one_of_its_files_not_made() {
    let plan = planned(
        json!([{"name": "config", "configMap": {"name": "settings"}}]),
        json!([{"name": "config", "mountPath": "/app/config.yaml", "subPath": "config.yaml"}]),
    )
    .expect("plans");
    let config = PathBuf::from(REPLICA).join("config");
    assert_eq!(
        plan.mounts,
        vec![beneath("/app/config.yaml", &config, "config.yaml", true)]
    );
    assert!(
        plan.dirs.is_empty() && plan.sub_paths.is_empty(),
        "{plan:?}"
    );
}

/// The plan of `mounts` of the claim `team/shared`, kept under `state_dir`'s `volumes`.
fn claim_plan(state_dir: &std::path::Path, mounts: Value) -> ReplicaVolumes {
    let claims = state_dir.join("volumes");
    let replica = state_dir.join("pods/uid/worker-0");
    let context = VolumeContext {
        namespace: "team",
        companions: &[],
        claims: &(),
        dirs: VolumeDirs {
            claims: &claims,
            replica: &replica,
        },
    };
    plan(
        &pod(json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}])),
        &container(mounts),
        &[],
        &context,
    )
    .expect("plans")
}

#[test]
fn a_sub_path_that_exists_as_a_file_is_mounted_as_it_is() {
    let temp = tempfile::tempdir().expect("tempdir");
    let claims = temp.path().join("volumes");
    let claim = claims.join("team/shared");
    std::fs::create_dir_all(&claim).expect("mkdir");
    std::fs::write(claim.join("settings.json"), "{}").expect("write");
    let plan = claim_plan(
        temp.path(),
        json!([
            {"name": "data", "mountPath": "/app/settings.json", "subPath": "settings.json"},
            {"name": "data", "mountPath": "/out", "subPath": "out"},
        ]),
    );
    plan.materialize()
        .expect("a file in a claim can be a subPath");
    assert_eq!(
        std::fs::read_to_string(claim.join("settings.json")).expect("kept"),
        "{}"
    );
    assert!(claim.join("out").is_dir());
}

#[test]
fn a_missing_sub_path_is_never_made_through_a_symbolic_link() {
    let temp = tempfile::tempdir().expect("tempdir");
    let claims = temp.path().join("volumes");
    let claim = claims.join("team/shared");
    let outside = temp.path().join("outside");
    std::fs::create_dir_all(&claim).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::os::unix::fs::symlink(&outside, claim.join("esc")).expect("a link out of the claim");
    let plan = claim_plan(
        temp.path(),
        json!([
            {"name": "data", "mountPath": "/a", "subPath": "esc/made"},
            {"name": "data", "mountPath": "/b", "subPath": "new/made"},
        ]),
    );
    plan.materialize().expect("materializes");
    assert_eq!(std::fs::read_dir(&outside).expect("reads").count(), 0);
    assert!(claim.join("new/made").is_dir());
}

#[test]
fn a_sub_path_expr_is_expanded_from_the_env() {
    let plan = plan_with(
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]),
        json!([
            {"name": "data", "mountPath": "/logs", "subPathExpr": "logs/$(POD_NAME)"},
            {"name": "data", "mountPath": "/kept", "subPathExpr": "$(UNDEFINED)/x"},
        ]),
        &[("POD_NAME", "first"), ("POD_NAME", "job-worker-0")],
        &companions(),
        &(),
    )
    .expect("plans");
    let claim = PathBuf::from("/state/volumes/team/shared");
    assert_eq!(
        plan.mounts,
        vec![
            beneath("/logs", &claim, "logs/job-worker-0", false),
            // As the kubelet: an undefined reference is kept as written.
            beneath("/kept", &claim, "$(UNDEFINED)/x", false),
        ]
    );
    // `subPath` wins over `subPathExpr` (the API server refuses both; the first is kept).
    let both = plan_with(
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]),
        json!([{"name": "data", "mountPath": "/d", "subPath": "plain", "subPathExpr": "$(X)"}]),
        &[("X", "expr")],
        &companions(),
        &(),
    )
    .expect("plans");
    assert_eq!(both.mounts, vec![beneath("/d", &claim, "plain", false)]);
}

#[test]
fn a_sub_path_out_of_the_volume_is_refused() {
    let volumes = json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]);
    for sub_path in ["..", "../other", "a/../../b", "/etc"] {
        let error = planned(
            volumes.clone(),
            json!([{"name": "data", "mountPath": "/data", "subPath": sub_path}]),
        )
        .expect_err(sub_path);
        assert_eq!(
            error,
            format!(
                "volumeMounts `data`: subPath `{sub_path}` must be a relative path inside the volume"
            )
        );
    }
    let error = plan_with(
        volumes,
        json!([{"name": "data", "mountPath": "/data", "subPathExpr": "$(DIR)/x"}]),
        &[("DIR", "..")],
        &companions(),
        &(),
    )
    .expect_err("an expansion out of the volume");
    assert_eq!(
        error,
        "volumeMounts `data`: subPath `../x` must be a relative path inside the volume"
    );
}
