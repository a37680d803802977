//! Each kind of volume at its `mountPath`, and a job whose ConfigMap is missing.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::time::Instant;

use crate::volumes::support::{Replicas, SOON, Scratch, User, scenario, tfjob};

/// A ConfigMap `settings` and a Secret `token`.
pub const COMPANIONS: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  config.yaml: 'epochs: 3'
  extra: x
  run.sh: |
    #!/bin/sh
    echo ran \"$0\"
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {token: s3cret}
";

/// A claim, a ConfigMap, a Secret, an emptyDir on disk and in memory, a hostPath (a
/// directory and a file) and an NFS volume (an empty directory here, with a warning), each
/// where the manifest mounts it.
fn every_kind_is_at_its_mount_path(user: &User) {
    let scratch = Scratch::new("kinds", user);
    let host = scratch.user_dir("host");
    std::fs::write(host.join("from-host.txt"), "host file\n").expect("write");
    let host_volume = format!(
        "{{name: host, hostPath: {{path: {}, type: Directory}}}}",
        host.display()
    );
    let host_file = format!(
        "{{name: host-file, hostPath: {{path: {}, type: File}}}}",
        host.join("from-host.txt").display()
    );
    let volumes = [
        "{name: data, persistentVolumeClaim: {claimName: shared}}",
        "{name: config, configMap: {name: settings}}",
        "{name: creds, secret: {secretName: token}}",
        "{name: scratch, emptyDir: {}}",
        "{name: cache, emptyDir: {medium: Memory, sizeLimit: 8Mi}}",
        &host_volume,
        &host_file,
        "{name: remote, nfs: {server: nfs.example.com, path: /exports}}",
    ];
    let mounts = [
        "{name: data, mountPath: /data}",
        "{name: config, mountPath: /etc/config}",
        "{name: creds, mountPath: /etc/creds}",
        "{name: scratch, mountPath: /scratch}",
        "{name: cache, mountPath: /cache}",
        "{name: host, mountPath: /host}",
        "{name: host-file, mountPath: /etc/from-host.conf}",
        "{name: remote, mountPath: /mnt/remote}",
    ];
    let script = "echo config `cat /etc/config/config.yaml`
echo secret `cat /etc/creds/token` `stat -c %a /etc/creds/token`
echo model > /data/model.txt && echo data written
echo tmp > /scratch/tmp.txt && echo scratch `cat /scratch/tmp.txt`
echo cached > /cache/c.txt && echo cache `stat -f -c '%T %b %S' /cache`
echo host `cat /host/from-host.txt`
echo host file `cat /etc/from-host.conf`
echo replica > /host/from-replica.txt
echo remote `ls -A /mnt/remote | wc -l`
echo id `id -u` `id -g`";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "kinds",
            COMPANIONS,
            &[Replicas::chief(script).with(&volumes, &mounts)],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let (uid, gid) = (user.uid, user.gid);
    let page = 4096;
    assert_eq!(
        run.replica_lines("chief-0"),
        [
            "config epochs: 3",
            "secret s3cret 600",
            "data written",
            "scratch tmp",
            &format!("cache tmpfs {} {page}", (8 << 20) / page),
            "host host file",
            "host file host file",
            "remote 0",
            &format!("id {uid} {gid}"),
        ],
        "{run}"
    );
    assert!(
        run.stderr.contains(
            "warning: volume `remote` (nfs) is not available on this machine: an empty \
             directory is mounted in its place"
        ),
        "{run}"
    );
    let model = scratch.claim("default", "shared").join("model.txt");
    assert_eq!(
        std::fs::read_to_string(&model).expect("the claim's file"),
        "model\n"
    );
    let written = host.join("from-replica.txt");
    assert_eq!(
        std::fs::read_to_string(&written).expect("the host's file"),
        "replica\n"
    );
    for file in [&model, &written] {
        let meta = std::fs::metadata(file).expect("stat");
        assert_eq!((meta.uid(), meta.gid()), (uid, gid), "{}", file.display());
    }
    // Nothing the replica mounted is in the host's mount table, nor left under `pods/`.
    assert_eq!(scratch.our_mounts(), Vec::<String>::new());
    assert_eq!(scratch.pods_left(), Vec::<std::path::PathBuf>::new());
}

scenario!(every_kind_is_at_its_mount_path);

/// Root in a container, without the right to mount: the replicas get it in a user namespace.
#[test]
fn every_kind_is_at_its_mount_path_as_root_without_cap_sys_admin() {
    let test = concat!(
        module_path!(),
        "::every_kind_is_at_its_mount_path_as_root_without_cap_sys_admin"
    );
    if let Some(user) = User::root_without_cap_sys_admin(test) {
        every_kind_is_at_its_mount_path(&user);
    }
}

/// A ConfigMap the job mounts and its file does not hold: the job fails at once, in the
/// kubelet's words, and no replica starts.
fn a_missing_config_map_fails_the_job_at_once(user: &User) {
    let scratch = Scratch::new("missing", user);
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "missing",
            COMPANIONS,
            &[Replicas::chief("touch started").with(
                &["{name: config, configMap: {name: absent}}"],
                &["{name: config, mountPath: /etc/config}"],
            )],
        ),
    );
    let started = Instant::now();
    let run = scratch.run(&manifest, &[]);
    assert!(started.elapsed() < SOON, "{:?}", started.elapsed());
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stderr.contains("configmap \"absent\" not found"),
        "{run}"
    );
    assert!(!scratch.path("started").exists(), "a replica ran:\n{run}");
    assert!(run.replica_lines("chief-0").is_empty(), "{run}");
    let logs = scratch.state_dir().join("logs");
    let log_files: Vec<_> = walk(&logs)
        .into_iter()
        .filter(|path| path.is_file())
        .collect();
    assert_eq!(log_files, Vec::<std::path::PathBuf>::new(), "{run}");
    let get = scratch.trainctl(&["get", "tfjob", "missing", "-o", "json"]);
    assert_eq!(get.code, Some(0), "{get}");
    assert!(
        get.stdout.contains("configmap \\\"absent\\\" not found"),
        "{get}"
    );
    // An optional ConfigMap that is missing is an empty directory.
    let optional = scratch.write(
        "optional.yaml",
        &tfjob(
            "optional",
            "",
            &[
                Replicas::chief("echo entries `ls -A /etc/config | wc -l`").with(
                    &["{name: config, configMap: {name: absent, optional: true}}"],
                    &["{name: config, mountPath: /etc/config}"],
                ),
            ],
        ),
    );
    let run = scratch.run(&optional, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.replica_lines("chief-0"), ["entries 0"], "{run}");
}

scenario!(a_missing_config_map_fails_the_job_at_once);

/// Every file and directory under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// Where container images expect volumes: the command itself a ConfigMap's script, the
/// working directory a claim, `/dev/shm` in memory, a Secret under `/var/run/secrets`, a cache
/// under `/root` (a directory only root may enter), a volume inside a read-only one.
fn volumes_where_images_put_them(user: &User) {
    let scratch = Scratch::new("images", user);
    let manifest = scratch.write(
        "job.yaml",
        &format!(
            "{COMPANIONS}---
apiVersion: v1
kind: ConfigMap
metadata: {{name: entrypoint}}
data:
  run.sh: |
    #!/bin/sh
    echo cwd `pwd`
    echo trained > model.txt
    stat -f -c 'shm %T %b %S' /dev/shm
    ls /var/run/secrets/kubernetes.io/serviceaccount
    echo cached > /root/.cache/huggingface/hub.txt && echo cache written
    echo tmp > /models/tmp/t && echo nested written
    (echo x > /models/f) 2>/dev/null || echo models read-only
    ls /app
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {{name: images}}
spec:
  tfReplicaSpecs:
    Chief:
      restartPolicy: Never
      template:
        spec:
          volumes:
          - {{name: app, configMap: {{name: entrypoint, defaultMode: 493}}}}
          - {{name: work, persistentVolumeClaim: {{claimName: work}}}}
          - {{name: shm, emptyDir: {{medium: Memory, sizeLimit: 16Mi}}}}
          - {{name: sa, secret: {{secretName: token}}}}
          - {{name: hf, persistentVolumeClaim: {{claimName: hf-cache}}}}
          - {{name: models, persistentVolumeClaim: {{claimName: models, readOnly: true}}}}
          - {{name: tmp, emptyDir: {{}}}}
          containers:
          - name: tensorflow
            image: pytorch/pytorch:2.3.0
            command: [/app/run.sh]
            workingDir: /work
            volumeMounts:
            - {{name: app, mountPath: /app}}
            - {{name: work, mountPath: /work}}
            - {{name: shm, mountPath: /dev/shm}}
            - {{name: sa, mountPath: /var/run/secrets/kubernetes.io/serviceaccount}}
            - {{name: hf, mountPath: /root/.cache/huggingface}}
            - {{name: models, mountPath: /models}}
            - {{name: tmp, mountPath: /models/tmp}}
"
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let page = 4096;
    assert_eq!(
        run.replica_lines("chief-0"),
        [
            "cwd /work",
            &format!("shm tmpfs {} {page}", (16 << 20) / page),
            "token",
            "cache written",
            "nested written",
            "models read-only",
            "run.sh",
        ],
        "{run}"
    );
    let read = |claim: &str, file: &str| {
        std::fs::read_to_string(scratch.claim("default", claim).join(file)).ok()
    };
    assert_eq!(read("work", "model.txt").as_deref(), Some("trained\n"));
    assert_eq!(read("hf-cache", "hub.txt").as_deref(), Some("cached\n"));
    // The mount point of the emptyDir is made in the claim, as a container runtime does.
    assert_eq!(read("models", "f"), None);
    assert!(scratch.claim("default", "models").join("tmp").is_dir());
    // The machine's `/dev/shm` is untouched.
    assert!(!Path::new("/dev/shm/model.txt").exists());
}

scenario!(volumes_where_images_put_them);

/// A replica restarted in place keeps its emptyDir on disk (as a container restarted in its
/// pod), and gets its memory volume afresh.
fn an_empty_dir_outlives_a_restart_of_its_replica(user: &User) {
    let scratch = Scratch::new("restart", user);
    let script = "ls -A /memory
if [ -f /scratch/once ]; then echo again `cat /scratch/once`; exit 0; fi
echo first > /scratch/once
touch /memory/once
exit 1";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "restart",
            "",
            &[Replicas::chief(script).policy("OnFailure").with(
                &[
                    "{name: scratch, emptyDir: {}}",
                    "{name: memory, emptyDir: {medium: Memory}}",
                ],
                &[
                    "{name: scratch, mountPath: /scratch}",
                    "{name: memory, mountPath: /memory}",
                ],
            )],
        ),
    );
    let run = scratch.run(&manifest, &["--restart-backoff", "100ms"]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.replica_lines("chief-0"), ["again first"], "{run}");
    assert_eq!(scratch.pods_left(), Vec::<std::path::PathBuf>::new());
}

scenario!(an_empty_dir_outlives_a_restart_of_its_replica);
