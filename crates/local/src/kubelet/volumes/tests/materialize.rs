//! What reaches the disk, in a temporary directory: [`ReplicaVolumes::materialize`] (the
//! replica's directory made afresh, a claim's kept) and a projection's files written with their
//! modes.

use std::os::unix::fs::PermissionsExt as _;

use super::*;

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

#[test]
fn materialize_makes_the_replicas_directory_afresh_and_the_claims_when_missing() {
    let temp = tempfile::tempdir().expect("tempdir");
    let claims = temp.path().join("volumes");
    let replica = temp.path().join("pods/uid/worker-0");
    let companions = companions();
    let context = VolumeContext {
        namespace: "team",
        companions: &companions,
        claims: &(),
        dirs: VolumeDirs {
            claims: &claims,
            replica: &replica,
        },
    };
    let plan = plan(
        &pod(json!([
            {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
            {"name": "config", "configMap": {"name": "settings"}},
            {"name": "creds", "secret": {"secretName": "token"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "remote", "nfs": {"server": "s", "path": "/"}},
        ])),
        &container(json!([
            {"name": "data", "mountPath": "/data"},
            {"name": "config", "mountPath": "/etc/config"},
            {"name": "creds", "mountPath": "/creds"},
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "remote", "mountPath": "/remote"},
        ])),
        &[],
        &context,
    )
    .expect("plans");
    plan.materialize().expect("materializes");
    let claim = claims.join("team/shared");
    assert!(claim.is_dir());
    std::fs::write(claim.join("model"), "weights").expect("write");
    std::fs::write(replica.join("scratch/left"), "x").expect("write");
    assert_eq!(
        std::fs::read_to_string(replica.join("config/config.yaml")).expect("read"),
        "epochs: 3\n"
    );
    assert_eq!(mode(&replica.join("config/config.yaml")), 0o644);
    assert_eq!(mode(&replica.join("creds/token")), 0o600);
    assert!(replica.join("remote").is_dir());
    // Again, as for the next admission of the job: the claim is kept, the rest made afresh.
    plan.materialize().expect("materializes again");
    assert_eq!(
        std::fs::read_to_string(claim.join("model")).expect("kept"),
        "weights"
    );
    assert!(!replica.join("scratch/left").exists());
    assert!(replica.join("scratch").is_dir());
}

#[test]
fn written_files_have_their_modes_whatever_the_umask() {
    let temp = tempfile::tempdir().expect("tempdir");
    let projection = projection::Projection {
        dir: temp.path().join("config"),
        files: vec![
            projection::ProjectedFile {
                path: PathBuf::from("a"),
                bytes: b"a".to_vec(),
                mode: 0o644,
            },
            projection::ProjectedFile {
                path: PathBuf::from("sub/b"),
                bytes: b"b".to_vec(),
                mode: 0o600,
            },
            projection::ProjectedFile {
                path: PathBuf::from("run.sh"),
                bytes: b"#!/bin/sh\n".to_vec(),
                mode: 0o755,
            },
        ],
    };
    projection.write().expect("writes");
    let dir = temp.path().join("config");
    assert_eq!(mode(&dir.join("a")), 0o644);
    assert_eq!(mode(&dir.join("sub/b")), 0o600);
    assert_eq!(mode(&dir.join("run.sh")), 0o755);
    assert_eq!(std::fs::read(dir.join("sub/b")).expect("read"), b"b");
}
