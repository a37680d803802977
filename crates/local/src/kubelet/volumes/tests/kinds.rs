//! Each kind of volume but claims and hostPaths: a ConfigMap's and a Secret's files, an emptyDir
//! on disk or in memory (a tmpfs), a kind this machine cannot give (an empty directory and a
//! warning), and a volume no container mounts.

use super::*;

#[test]
fn a_config_map_is_its_keys_as_files_in_the_replicas_directory_read_only() {
    let plan = planned(
        json!([{"name": "config", "configMap": {"name": "settings"}}]),
        json!([{"name": "config", "mountPath": "/etc/config"}]),
    )
    .expect("plans");
    let dir = PathBuf::from(REPLICA).join("config");
    assert_eq!(plan.mounts, vec![bind("/etc/config", &dir, true)]);
    assert_eq!(
        plan.backings,
        vec![(
            "config".to_owned(),
            Backing::Projected {
                kind: "ConfigMap",
                name: "settings".to_owned(),
                path: dir.clone()
            }
        )]
    );
    assert_eq!(plan.replica_dir, Some(PathBuf::from(REPLICA)));
    let [projection] = &plan.projections[..] else {
        panic!("one projection: {:?}", plan.projections);
    };
    assert_eq!(projection.dir, dir);
    let files: Vec<(&Path, &[u8], u32)> = projection
        .files
        .iter()
        .map(|file| (file.path.as_path(), file.bytes.as_slice(), file.mode))
        .collect();
    assert_eq!(
        files,
        vec![
            (Path::new("config.yaml"), &b"epochs: 3\n"[..], 0o644),
            (Path::new("extra"), &b"x"[..], 0o644),
        ]
    );
}

#[test]
fn a_secret_is_its_keys_as_files_of_mode_0600_read_only() {
    let plan = planned(
        json!([{"name": "creds", "secret": {"secretName": "token"}}]),
        json!([{"name": "creds", "mountPath": "/var/run/creds"}]),
    )
    .expect("plans");
    let dir = PathBuf::from(REPLICA).join("creds");
    assert_eq!(plan.mounts, vec![bind("/var/run/creds", &dir, true)]);
    assert_eq!(
        plan.backings[0].1,
        Backing::Projected {
            kind: "Secret",
            name: "token".to_owned(),
            path: dir
        }
    );
    let files: Vec<(&Path, &[u8], u32)> = plan.projections[0]
        .files
        .iter()
        .map(|file| (file.path.as_path(), file.bytes.as_slice(), file.mode))
        .collect();
    assert_eq!(
        files,
        vec![
            (Path::new("token"), &b"secret"[..], 0o600),
            (Path::new("user"), &b"ada"[..], 0o600),
        ]
    );
}

#[test]
fn an_empty_dir_is_a_directory_of_the_replica() {
    let plan = planned(
        json!([{"name": "scratch", "emptyDir": {}}]),
        json!([{"name": "scratch", "mountPath": "/scratch"}]),
    )
    .expect("plans");
    let dir = PathBuf::from(REPLICA).join("scratch");
    assert_eq!(plan.mounts, vec![bind("/scratch", &dir, false)]);
    assert_eq!(
        plan.backings,
        vec![("scratch".to_owned(), Backing::EmptyDir(dir.clone()))]
    );
    assert_eq!(plan.dirs, vec![dir]);
    assert_eq!(plan.replica_dir, Some(PathBuf::from(REPLICA)));
}

#[test]
fn an_empty_dir_in_memory_is_a_tmpfs_of_its_size_limit() {
    let plan = planned(
        json!([
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "cache", "emptyDir": {"medium": "Memory"}},
        ]),
        json!([
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "cache", "mountPath": "/cache"},
        ]),
    )
    .expect("plans");
    let tmpfs = |target: &str, size| Mount {
        target: PathBuf::from(target),
        source: MountSource::Tmpfs(size),
        read_only: false,
    };
    assert_eq!(
        plan.mounts,
        vec![tmpfs("/cache", None), tmpfs("/dev/shm", Some(64 << 20))]
    );
    assert_eq!(
        plan.backings,
        vec![
            ("shm".to_owned(), Backing::Memory),
            ("cache".to_owned(), Backing::Memory)
        ]
    );
    // Nothing on disk.
    assert!(plan.dirs.is_empty());
    assert_eq!(plan.replica_dir, None);
}

#[test]
fn a_memory_size_limit_that_is_no_quantity_is_refused() {
    let error = planned(
        json!([{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "lots"}}]),
        json!([{"name": "shm", "mountPath": "/dev/shm"}]),
    )
    .expect_err("refused");
    assert!(error.starts_with("volume `shm`: sizeLimit: "), "{error}");
}

#[test]
fn a_memory_empty_dir_has_no_sub_path() {
    let error = planned(
        json!([{"name": "shm", "emptyDir": {"medium": "Memory"}}]),
        json!([{"name": "shm", "mountPath": "/dev/shm", "subPath": "a"}]),
    )
    .expect_err("refused");
    assert_eq!(
        error,
        "volume `shm`: a subPath of an emptyDir with `medium: Memory` is not supported locally"
    );
}

#[test]
fn a_volume_in_memory_mounted_twice_is_one_tmpfs() {
    let plan = planned(
        json!([
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
            {"name": "other", "emptyDir": {"medium": "Memory"}},
        ]),
        json!([
            {"name": "shm", "mountPath": "/a/deep/shm"},
            {"name": "other", "mountPath": "/other"},
            {"name": "shm", "mountPath": "/shm", "readOnly": true},
            {"name": "shm", "mountPath": "/b/shm"},
        ]),
    )
    .expect("plans");
    let mount = |target: &str, source, read_only| Mount {
        target: PathBuf::from(target),
        source,
        read_only,
    };
    // The first in the mounts' order is the tmpfs; the others show it.
    assert_eq!(
        plan.mounts,
        vec![
            mount("/other", MountSource::Tmpfs(None), false),
            mount("/shm", MountSource::Tmpfs(Some(1 << 20)), true),
            mount("/b/shm", MountSource::SameAs(PathBuf::from("/shm")), false),
            mount(
                "/a/deep/shm",
                MountSource::SameAs(PathBuf::from("/shm")),
                false
            ),
        ]
    );
}

#[test]
fn an_unsupported_volume_is_an_empty_directory_with_a_warning() {
    let plan = planned(
        json!([{"name": "remote", "nfs": {"server": "nfs.example.com", "path": "/exports"}}]),
        json!([{"name": "remote", "mountPath": "/mnt/remote"}]),
    )
    .expect("plans");
    let dir = PathBuf::from(REPLICA).join("remote");
    assert_eq!(plan.mounts, vec![bind("/mnt/remote", &dir, false)]);
    assert_eq!(
        plan.backings,
        vec![(
            "remote".to_owned(),
            Backing::Unsupported {
                kind: "nfs",
                path: dir.clone()
            }
        )]
    );
    assert_eq!(
        plan.warnings,
        vec![
            "volume `remote` (nfs) is not available on this machine: an empty directory is \
             mounted in its place"
                .to_owned()
        ]
    );
    assert_eq!(plan.dirs, vec![dir]);
    let csi = planned(
        json!([{"name": "c", "csi": {"driver": "x"}}]),
        json!([{"name": "c", "mountPath": "/c"}]),
    )
    .expect("plans");
    assert!(csi.warnings[0].contains("(csi)"), "{:?}", csi.warnings);
}

#[test]
fn a_volume_not_mounted_is_not_backed() {
    let plan = planned(
        json!([
            {"name": "config", "configMap": {"name": "absent"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
        ]),
        json!([{"name": "data", "mountPath": "/data"}]),
    )
    .expect("a missing ConfigMap no container mounts is no error");
    assert_eq!(plan.backings.len(), 1);
    assert!(plan.projections.is_empty());
    let nothing = planned(json!([]), json!([])).expect("plans");
    assert_eq!(nothing, ReplicaVolumes::default());
}
