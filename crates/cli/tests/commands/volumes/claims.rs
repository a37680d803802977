//! Claims: one directory shared by the replicas of a job and by the jobs that mount it, whose
//! files belong to the user who runs `trainctl`.

use std::os::unix::fs::MetadataExt as _;

use crate::volumes::support::{INDEX_ENV, Replicas, Scratch, User, scenario, sorted, tfjob};

/// Appends a line to the claim's file, then waits (up to 5 s) for the other worker's: a TFJob
/// without a chief succeeds, and stops its other workers, as soon as worker 0 has succeeded.
const SHARE: &str = "echo worker $INDEX >> /data/lines.txt
for i in `seq 500`; do
  [ `wc -l < /data/lines.txt` -ge 2 ] && exit 0
  sleep 0.01
done
exit 1";

/// Two workers append to the same file of a claim: both lines are there, in a file of the
/// user's.
fn replicas_share_a_claim(user: &User) {
    let scratch = Scratch::new("shared", user);
    let manifest = scratch.write(
        "job.yaml",
        &tfjob(
            "shared",
            "",
            &[Replicas::workers(2, SHARE)
                .with(
                    &["{name: data, persistentVolumeClaim: {claimName: lines}}"],
                    &["{name: data, mountPath: /data}"],
                )
                .env(&[INDEX_ENV])],
        ),
    );
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    let file = scratch.claim("default", "lines").join("lines.txt");
    let text = std::fs::read_to_string(&file).expect("the claim's file");
    assert_eq!(
        sorted(text.lines()),
        ["worker 0", "worker 1"],
        "{text:?}\n{run}"
    );
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (user.uid, user.gid));
}

scenario!(replicas_share_a_claim);

/// What a job writes in a claim, the next job that mounts the claim reads: the directory,
/// and one of its files as a `subPath`.
fn a_claim_outlives_its_job(user: &User) {
    let scratch = Scratch::new("persist", user);
    let volumes = ["{name: data, persistentVolumeClaim: {claimName: models}}"];
    let first = scratch.write(
        "first.yaml",
        &tfjob(
            "first",
            "",
            &[Replicas::chief(
                "echo weights-1 > /data/model.txt; stat -c 'owner %u' /data/model.txt",
            )
            .with(&volumes, &["{name: data, mountPath: /data}"])],
        ),
    );
    let run = scratch.run(&first, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        [format!("owner {}", user.uid)],
        "{run}"
    );
    let second = scratch.write(
        "second.yaml",
        &tfjob(
            "second",
            "",
            &[Replicas::chief("cat /data/model.txt /model.txt").with(
                &volumes,
                &[
                    "{name: data, mountPath: /data, readOnly: true}",
                    "{name: data, mountPath: /model.txt, subPath: model.txt}",
                ],
            )],
        ),
    );
    let run = scratch.run(&second, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["weights-1", "weights-1"],
        "{run}"
    );
    let model = scratch.claim("default", "models").join("model.txt");
    assert_eq!(
        std::fs::read_to_string(&model).expect("kept"),
        "weights-1\n"
    );
    let meta = std::fs::metadata(&model).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (user.uid, user.gid));
}

scenario!(a_claim_outlives_its_job);
