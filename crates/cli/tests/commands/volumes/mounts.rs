//! The fields of a mount: `subPath` and `subPathExpr`, `readOnly`, and a ConfigMap's or
//! Secret's `items` and modes.

use crate::volumes::kinds::COMPANIONS;
use crate::volumes::support::{Replicas, Scratch, User, scenario, tfjob};

/// A directory of a claim (made when missing), one named from the env, a ConfigMap's key as
/// a file where no file was, and one over a file of the machine.
fn a_sub_path_mounts_part_of_a_volume(user: &User) {
    let scratch = Scratch::new("subpath", user);
    let volumes = [
        "{name: data, persistentVolumeClaim: {claimName: shared}}",
        "{name: config, configMap: {name: settings}}",
    ];
    let mounts = [
        "{name: data, mountPath: /out, subPath: run/1}",
        "{name: data, mountPath: /logs, subPathExpr: 'logs/$(POD_NAME)'}",
        "{name: config, mountPath: /app/config.yaml, subPath: config.yaml}",
        "{name: config, mountPath: /etc/hostname, subPath: config.yaml}",
    ];
    let script = "echo result > /out/result.txt
echo log > /logs/log.txt
echo app `ls -A /app` `cat /app/config.yaml`
echo hostname `cat /etc/hostname`";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "sub",
            COMPANIONS,
            &[Replicas::chief(script)
                .with(&volumes, &mounts)
                .env(&["{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}"])],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["app config.yaml epochs: 3", "hostname epochs: 3"],
        "{run}"
    );
    let claim = scratch.claim("default", "shared");
    let read = |path: &str| std::fs::read_to_string(claim.join(path)).ok();
    assert_eq!(
        read("run/1/result.txt").as_deref(),
        Some("result\n"),
        "{run}"
    );
    assert_eq!(
        read("logs/sub-chief-0/log.txt").as_deref(),
        Some("log\n"),
        "{run}"
    );
    // The machine's own file is untouched.
    assert_ne!(
        std::fs::read_to_string("/etc/hostname").ok().as_deref(),
        Some("epochs: 3")
    );
}

scenario!(a_sub_path_mounts_part_of_a_volume);

/// A write to a read-only mount fails with `EROFS`: a claim's mount or the claim itself
/// `readOnly`, a ConfigMap and a Secret always, an emptyDir (disk or memory) and a hostPath
/// mounted `readOnly`; a claim or a memory volume mounted again without it stays writable.
fn a_read_only_mount_refuses_writes(user: &User) {
    let scratch = Scratch::new("readonly", user);
    let host = scratch.user_dir("host");
    let host_volume = format!("{{name: host, hostPath: {{path: {}}}}}", host.display());
    let volumes = [
        "{name: data, persistentVolumeClaim: {claimName: shared}}",
        "{name: frozen, persistentVolumeClaim: {claimName: frozen, readOnly: true}}",
        "{name: config, configMap: {name: settings}}",
        "{name: creds, secret: {secretName: token}}",
        "{name: scratch, emptyDir: {}}",
        "{name: cache, emptyDir: {medium: Memory}}",
        &host_volume,
    ];
    let mounts = [
        "{name: data, mountPath: /rw}",
        "{name: data, mountPath: /ro-mount, readOnly: true}",
        "{name: frozen, mountPath: /ro-claim}",
        "{name: config, mountPath: /ro-config}",
        "{name: creds, mountPath: /ro-secret}",
        "{name: scratch, mountPath: /ro-scratch, readOnly: true}",
        "{name: cache, mountPath: /ro-cache, readOnly: true}",
        "{name: cache, mountPath: /rw-cache}",
        "{name: host, mountPath: /ro-host, readOnly: true}",
    ];
    let dirs = [
        "/rw",
        "/ro-mount",
        "/ro-claim",
        "/ro-config",
        "/ro-secret",
        "/ro-scratch",
        "/ro-cache",
        "/rw-cache",
        "/ro-host",
    ];
    // The memory volume mounted twice is one: what is written in one is in the other.
    let script = format!(
        "for dir in {}; do echo x > $dir/f; echo $dir rc=$?; done\ncat /ro-cache/f",
        dirs.join(" ")
    );
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "ro",
            COMPANIONS,
            &[Replicas::chief(&script).with(&volumes, &mounts)],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let lines = run.replica_lines("chief-0");
    assert!(lines.contains(&"x"), "{run}");
    for dir in dirs {
        let writable = dir.starts_with("/rw");
        let refused = format!("cannot create {dir}/f: Read-only file system");
        let code = if writable { 0 } else { 2 };
        assert!(
            lines.contains(&format!("{dir} rc={code}").as_str()),
            "{dir} rc={code}:\n{run}"
        );
        assert_eq!(
            lines.iter().any(|line| line.ends_with(&refused)),
            !writable,
            "{refused}:\n{run}"
        );
    }
    assert!(scratch.claim("default", "shared").join("f").is_file());
    assert!(!host.join("f").exists());
    // The read-only replica's last word: exit code 1 of a `touch`.
    let touch = scratch.write(
        "touch.yaml",
        &tfjob(
            "touch",
            "",
            &[Replicas::chief("touch /data/f").with(
                &["{name: data, persistentVolumeClaim: {claimName: shared, readOnly: true}}"],
                &["{name: data, mountPath: /data}"],
            )],
        ),
    );
    let run = scratch.run(&touch, &[]);
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["touch: cannot touch '/data/f': Read-only file system"],
        "{run}"
    );
}

scenario!(a_read_only_mount_refuses_writes);

/// `items` choose keys, their paths and modes; `defaultMode` the others'; a Secret's files
/// are `0600` unless the manifest says otherwise; a key's file of mode `0755` runs.
fn items_and_modes_of_config_maps_and_secrets(user: &User) {
    let scratch = Scratch::new("modes", user);
    // 288 = 0o440, 256 = 0o400, 493 = 0o755 (JSON's decimal, as `kubectl` sends them).
    let volumes = [
        "{name: app, configMap: {name: settings, defaultMode: 288, items: [\
         {key: config.yaml, path: conf/train.yaml, mode: 256}, \
         {key: run.sh, path: bin/run.sh, mode: 493}, \
         {key: extra, path: extra.txt}]}}",
        "{name: plain, configMap: {name: settings}}",
        "{name: creds, secret: {secretName: token}}",
        "{name: shared-creds, secret: {secretName: token, defaultMode: 288}}",
    ];
    let mounts = [
        "{name: app, mountPath: /etc/app}",
        "{name: plain, mountPath: /etc/plain}",
        "{name: creds, mountPath: /etc/creds}",
        "{name: shared-creds, mountPath: /etc/shared-creds}",
    ];
    let script = "for dir in /etc/app /etc/plain /etc/creds /etc/shared-creds; do
  (cd $dir && find . -type f | sort | xargs stat -c \"$dir %a %n\")
done
/etc/app/bin/run.sh
cat /etc/app/conf/train.yaml; echo";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "modes",
            COMPANIONS,
            &[Replicas::chief(script).with(&volumes, &mounts)],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        [
            "/etc/app 755 ./bin/run.sh",
            "/etc/app 400 ./conf/train.yaml",
            "/etc/app 440 ./extra.txt",
            "/etc/plain 644 ./config.yaml",
            "/etc/plain 644 ./extra",
            "/etc/plain 644 ./run.sh",
            "/etc/creds 600 ./token",
            "/etc/shared-creds 440 ./token",
            "ran /etc/app/bin/run.sh",
            "epochs: 3",
        ],
        "{run}"
    );
}

scenario!(items_and_modes_of_config_maps_and_secrets);

/// The command runs with the signals a command without volumes has: `SIGPIPE` at its default
/// (trainctl, as every Rust program, ignores it), so `yes | head -1` ends quietly.
fn a_replica_with_volumes_gets_the_default_sigpipe(user: &User) {
    let scratch = Scratch::new("sigpipe", user);
    let script = "yes | head -1
mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status)
echo pipe-ignored=$(( (0x$mask >> 12) & 1 ))";
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "pipe",
            "",
            &[Replicas::chief(script).with(
                &["{name: scratch, emptyDir: {}}"],
                &["{name: scratch, mountPath: /scratch}"],
            )],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["y", "pipe-ignored=0"],
        "{run}"
    );
    assert!(!run.stderr.contains("Broken pipe"), "{run}");
}

scenario!(a_replica_with_volumes_gets_the_default_sigpipe);

/// A program found by name on a `PATH` that goes through a volume (a tool environment mounted
/// at `/opt/tools`) is looked for inside the replica's namespace, not refused because this
/// machine's `/opt/tools` lacks it.
fn a_program_on_a_path_through_a_volume_runs(user: &User) {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new("path-volume", user);
    let tools = scratch.user_dir("tools");
    let tool = tools.join("train-tool");
    std::fs::write(&tool, "#!/bin/sh\necho tool ran from $0\n").expect("the tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let volume = format!(
        "{{name: tools, hostPath: {{path: {}, type: Directory}}}}",
        tools.display()
    );
    let manifest = scratch.write(
        "job.yaml",
        &format!(
            "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: tool
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          volumes:
          - {volume}
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.16.1
            command: [train-tool]
            volumeMounts:
            - {{name: tools, mountPath: /opt/trainctl-test-tools}}
            env:
            - {{name: PATH, value: '/opt/trainctl-test-tools:/usr/bin:/bin'}}
"
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["tool ran from /opt/trainctl-test-tools/train-tool"],
        "{run}"
    );
}

scenario!(a_program_on_a_path_through_a_volume_runs);

/// A `subPath` that is a symbolic link planted in the claim is followed only while it stays in
/// the claim: `inner -> real` is mounted; `esc -> <a directory of the machine>` and a path
/// beneath it are refused before the command runs, and nothing is written or made out there
/// (the kubelet refuses them since CVE-2017-1002101).
fn a_sub_path_never_leads_out_of_its_volume(user: &User) {
    let scratch = Scratch::new("subpath-links", user);
    let claim = scratch.user_dir("claim");
    let host = scratch.user_dir("host");
    scratch.user_dir("claim/real");
    std::os::unix::fs::symlink("real", claim.join("inner")).expect("a link inside");
    std::os::unix::fs::symlink(&host, claim.join("esc")).expect("a link out");
    let binding = format!("shared={}", claim.display());
    let volumes = ["{name: data, persistentVolumeClaim: {claimName: shared}}"];
    let run_with = |sub_path: &str| {
        let mount = format!("{{name: data, mountPath: /out, subPath: '{sub_path}'}}");
        let manifest = scratch.write(
            "job.yaml",
            &tfjob(
                "links",
                "",
                &[Replicas::chief("echo written > /out/file.txt").with(&volumes, &[&mount])],
            ),
        );
        scratch.run(&manifest, &["--volume", &binding])
    };
    let inside = run_with("inner");
    assert_eq!(inside.code, Some(0), "{inside}");
    assert_eq!(
        std::fs::read_to_string(claim.join("real/file.txt"))
            .ok()
            .as_deref(),
        Some("written\n")
    );
    for sub_path in ["esc", "esc/deeper"] {
        let out = run_with(sub_path);
        assert_eq!(out.code, Some(1), "{sub_path}: {out}");
        let refusal = format!(
            "{}: the subPath leads out of its volume {} (through a symbolic link); a subPath \
             stays inside its volume",
            claim.join(sub_path).display(),
            claim.display()
        );
        assert!(out.stderr.contains(&refusal), "{sub_path}: {out}");
        assert_eq!(
            std::fs::read_dir(&host).expect("reads").count(),
            0,
            "{sub_path}: nothing is written or made out of the volume"
        );
    }
}

scenario!(a_sub_path_never_leads_out_of_its_volume);
