//! A crash loop you can see: a replica whose script is not on this machine is said to be
//! missing before it starts, each exit and restart is an event, a replica waiting out its
//! back-off is `CrashLoopBackOff` with its next start, and its log is pointed at once it has
//! exited alike three times.

use super::*;

#[test]
fn a_missing_script_is_warned_of_and_its_crash_loop_is_visible() {
    let scratch = Scratch::new("crash-loop");
    let manifest = scratch.write(
        "job.yaml",
        "apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: loop
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          terminationGracePeriodSeconds: 1
          containers:
            - name: tensorflow
              image: registry.example/model:1
              command: [python3, /opt/model/train.py]
",
    );
    let running = scratch.spawn_run(&manifest, &["-q"], "run");
    let hint = "trainctl: worker-0 exited with code 2 3 times in a row: see why in its log, \
                `trainctl logs tfjob loop --replica worker-0`";
    wait_for("the hint at the log", SOON, || {
        running.stderr().contains(hint).then_some(())
    });
    let warning = "trainctl: warning: Worker: `/opt/model/train.py` does not exist on this \
                   machine (the image's files are not used locally): `python3` will fail to open \
                   it; put the script there, or point the command at where it is";
    assert!(running.stderr().contains(warning), "{}", running.stderr());
    // Between two starts, the replica waits out its back-off, and says until when.
    let described = wait_for("worker-0 in CrashLoopBackOff", SOON, || {
        let described = scratch.trainctl(&["describe", "tfjob", "loop"]);
        described
            .stdout
            .lines()
            .any(|line| {
                line.trim_start().starts_with("worker-0")
                    && line.contains("CrashLoopBackOff (next start in ")
            })
            .then_some(described)
    });
    let events: Vec<&str> = described
        .stdout
        .split_once("Events:")
        .map_or("", |(_, events)| events)
        .lines()
        .collect();
    for expected in [
        "Normal    ExitedWithCode   Pod: default.loop-worker-0 exited with code 2",
        "Warning   BackOff          Back-off 0.1s restarting failed container of pod loop-worker-0",
        "Warning   ScriptNotFound   Worker: `/opt/model/train.py` does not exist on this machine",
    ] {
        assert!(
            events.iter().any(|line| line.contains(expected)),
            "no `{expected}` in:\n{}",
            described.stdout
        );
    }
    signal(running.pid(), "INT");
    let run = running.finish(SOON);
    assert_eq!(run.code, Some(130), "{run}");
}
