//! The other fields of a mount and the mounts together: `mountPath`, the volume it names,
//! `readOnly`, and the order of the mounts.

use super::*;

#[test]
fn a_relative_mount_path_is_refused() {
    let volumes = json!([{"name": "scratch", "emptyDir": {}}]);
    for path in ["data", "./data", "/data/../etc", ""] {
        let error = planned(
            volumes.clone(),
            json!([{"name": "scratch", "mountPath": path}]),
        )
        .expect_err(path);
        assert_eq!(
            error,
            format!("volumeMounts: mountPath `{path}` must be an absolute path without `..`")
        );
    }
}

#[test]
fn a_mount_over_the_root_is_refused_not_left_out() {
    for volume in [
        json!({"name": "v", "emptyDir": {}}),
        json!({"name": "v", "emptyDir": {"medium": "Memory"}}),
    ] {
        let error = planned(json!([volume]), json!([{"name": "v", "mountPath": "/"}]))
            .expect_err("the root");
        assert_eq!(
            error,
            "volumeMounts: mountPath `/` is the root of the filesystem: mount the volume at a \
             directory under it"
        );
    }
}

#[test]
fn a_mount_naming_no_volume_is_refused() {
    let error = planned(
        json!([{"name": "scratch", "emptyDir": {}}]),
        json!([{"name": "scrach", "mountPath": "/scratch"}]),
    )
    .expect_err("refused");
    assert_eq!(
        error,
        "volumeMounts: `scrach` names no volume of the pod; add it to `volumes`"
    );
}

#[test]
fn what_is_read_only() {
    let plan = planned(
        json!([
            {"name": "ro-claim", "persistentVolumeClaim": {"claimName": "a", "readOnly": true}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "b"}},
            {"name": "config", "configMap": {"name": "settings"}},
            {"name": "creds", "secret": {"secretName": "token"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
        ]),
        json!([
            {"name": "ro-claim", "mountPath": "/m/ro-claim"},
            {"name": "claim", "mountPath": "/m/claim"},
            {"name": "claim", "mountPath": "/m/claim-ro", "readOnly": true},
            {"name": "config", "mountPath": "/m/config", "readOnly": false},
            {"name": "creds", "mountPath": "/m/creds"},
            {"name": "scratch", "mountPath": "/m/scratch"},
            {"name": "scratch", "mountPath": "/m/scratch-ro", "readOnly": true},
            {"name": "shm", "mountPath": "/m/shm", "readOnly": true},
        ]),
    )
    .expect("plans");
    let read_only: Vec<(&str, bool)> = plan
        .mounts
        .iter()
        .map(|mount| (mount.target.to_str().expect("UTF-8"), mount.read_only))
        .collect();
    assert_eq!(
        read_only,
        vec![
            ("/m/ro-claim", true),
            ("/m/claim", false),
            ("/m/claim-ro", true),
            // A ConfigMap's and a Secret's files are read-only whatever the mount says.
            ("/m/config", true),
            ("/m/creds", true),
            ("/m/scratch", false),
            ("/m/scratch-ro", true),
            ("/m/shm", true),
        ]
    );
    // A volume mounted twice is backed once.
    assert_eq!(plan.backings.len(), 6);
}

#[test]
fn parents_are_mounted_before_what_they_hold() {
    let plan = planned(
        json!([
            {"name": "a", "emptyDir": {}},
            {"name": "b", "emptyDir": {}},
            {"name": "c", "emptyDir": {}},
            {"name": "d", "emptyDir": {}},
        ]),
        json!([
            {"name": "a", "mountPath": "/data/x/y"},
            {"name": "b", "mountPath": "/data/x"},
            {"name": "c", "mountPath": "/data"},
            {"name": "d", "mountPath": "/other"},
        ]),
    )
    .expect("plans");
    let targets: Vec<&Path> = plan
        .mounts
        .iter()
        .map(|mount| mount.target.as_path())
        .collect();
    assert_eq!(
        targets,
        [
            Path::new("/data"),
            Path::new("/other"),
            Path::new("/data/x"),
            Path::new("/data/x/y")
        ]
    );
    // The backings keep the pod's order of the mounts.
    let names: Vec<&str> = plan
        .backings
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
}
