//! The seeds that mount volumes (`testdata/fixtures/seeds`: storage, config, single-node GPU),
//! as users wrote them, their `tensorflow` image's program swapped for a small shell script that
//! reads and writes the mounted paths: each Succeeds.

use std::fmt::Write as _;
use std::path::Path;

use crate::volumes::support::{Scratch, User, scenario};

/// The namespace the seeds name.
const NAMESPACE: &str = "kubeflow-user-example-com";

/// The seed `name`, its container given `command: [sh, -c, SCRIPT]` after its `image:` line.
fn seed_with_script(name: &str, script: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/fixtures/seeds")
        .join(format!("{name}.yaml"));
    let seed = std::fs::read_to_string(&path).expect("the seed");
    let images: Vec<&str> = seed
        .lines()
        .filter(|line| line.trim_start().starts_with("image:"))
        .collect();
    assert_eq!(images.len(), 1, "one container in {name}");
    let indent = images[0].len() - images[0].trim_start().len();
    let mut out = String::new();
    for line in seed.lines() {
        out.push_str(line);
        out.push('\n');
        if line.trim_start().starts_with("image:") {
            for text in ["command:", "- sh", "- -c", "- |"] {
                writeln!(out, "{:indent$}{text}", "").expect("writing to a String cannot fail");
            }
            for text in script.lines() {
                writeln!(out, "{:indent$}  {text}", "").expect("writing to a String cannot fail");
            }
        }
    }
    out
}

/// `config-tfjob`: the chief reads the ConfigMap's `config.yaml` at `/etc/config`, and
/// cannot write there.
fn the_config_seed_reads_its_config_map(user: &User) {
    let scratch = Scratch::new("seed-config", user);
    let script = "grep 'epochs: 100' /etc/config/config.yaml
grep -c '' /etc/config/config.yaml
if touch /etc/config/new 2>/dev/null; then exit 1; fi";
    let manifest = scratch.write("config.yaml", &seed_with_script("config-tfjob", script));
    let run = scratch.run(&manifest, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["  epochs: 100", "4"],
        "{run}"
    );
    assert!(run.stderr.contains("Succeeded"), "{run}");
}

scenario!(the_config_seed_reads_its_config_map);

/// `single-node-gpu-tfjob` (4 GPUs, on a machine said to have 4) writes the training data to
/// its claim; `storage-tfjob` reads it from the same claim and writes its other two.
fn the_storage_and_gpu_seeds_share_their_claims(user: &User) {
    let scratch = Scratch::new("seed-storage", user);
    let gpu = scratch.write(
        "gpu.yaml",
        &seed_with_script(
            "single-node-gpu-tfjob",
            "echo $CUDA_VISIBLE_DEVICES > /data/gpus.txt\necho 1,2,3 > /data/train.csv",
        ),
    );
    let run = scratch.run(&gpu, &["--gpus", "4"]);
    assert_eq!(run.code, Some(0), "{run}");
    let storage = scratch.write(
        "storage.yaml",
        &seed_with_script(
            "storage-tfjob",
            "cat /data/gpus.txt
wc -l < /data/train.csv > /output/model.txt
echo step 1 >> /logs/events.txt
cat /output/model.txt /logs/events.txt",
        ),
    );
    let run = scratch.run(&storage, &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(
        run.replica_lines("chief-0"),
        ["0,1,2,3", "1", "step 1"],
        "{run}"
    );
    let claim = |name: &str, file: &str| {
        std::fs::read_to_string(scratch.claim(NAMESPACE, name).join(file)).ok()
    };
    assert_eq!(
        claim("training-data-pvc", "train.csv").as_deref(),
        Some("1,2,3\n")
    );
    assert_eq!(
        claim("model-output-pvc", "model.txt").as_deref(),
        Some("1\n")
    );
    assert_eq!(
        claim("tensorboard-logs-pvc", "events.txt").as_deref(),
        Some("step 1\n")
    );
}

scenario!(the_storage_and_gpu_seeds_share_their_claims);
