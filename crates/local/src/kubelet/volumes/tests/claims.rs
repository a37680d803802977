//! Claims: a claim's directory under the claims' (or the one it is bound to, in its namespace
//! only), and the claims a job's replica types name.

use std::collections::BTreeMap;

use super::*;

/// Claims bound to a directory of the user's.
struct Bound(BTreeMap<(String, String), PathBuf>);

impl ClaimPaths for Bound {
    fn bound(&self, namespace: &str, name: &str) -> Option<PathBuf> {
        self.0
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }
}

#[test]
fn a_claim_is_its_own_directory_under_the_claims_unless_bound() {
    let volumes = json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]);
    let mounts = json!([{"name": "data", "mountPath": "/data"}]);
    let plan = planned(volumes.clone(), mounts.clone()).expect("plans");
    let own = PathBuf::from("/state/volumes/team/shared");
    assert_eq!(own, claim_dir(Path::new(CLAIMS), "team", "shared"));
    assert_eq!(plan.mounts, vec![bind("/data", &own, false)]);
    assert_eq!(
        plan.backings,
        vec![(
            "data".to_owned(),
            Backing::Claim {
                claim: "shared".to_owned(),
                path: own.clone()
            }
        )]
    );
    assert_eq!(plan.dirs, vec![own]);
    assert!(plan.warnings.is_empty());
    // A claim is not the replica's: its directory is not made afresh.
    assert_eq!(plan.replica_dir, None);

    // A bound directory is the user's: used as it is, never made.
    let dataset = tempfile::tempdir().expect("a dataset");
    let bound = Bound(BTreeMap::from([(
        ("team".to_owned(), "shared".to_owned()),
        dataset.path().to_owned(),
    )]));
    let plan =
        plan_with(volumes.clone(), mounts.clone(), &[], &companions(), &bound).expect("plans");
    let source = dataset.path().to_str().expect("UTF-8");
    assert_eq!(plan.mounts, vec![bind("/data", source, false)]);
    assert!(plan.dirs.is_empty(), "{:?}", plan.dirs);

    // One whose directory is gone (a disk not mounted) is refused, not made empty.
    let gone = Bound(BTreeMap::from([(
        ("team".to_owned(), "shared".to_owned()),
        dataset.path().join("unmounted"),
    )]));
    assert_eq!(
        plan_with(volumes, mounts, &[], &companions(), &gone).expect_err("refused"),
        format!(
            "volume `data`: claim shared is bound to {source}/unmounted, which is not a directory \
             now (mount it again, or bind the claim elsewhere with --volume)"
        )
    );
}

#[test]
fn a_binding_of_another_namespace_is_not_used() {
    let bound = Bound(BTreeMap::from([(
        ("other".to_owned(), "shared".to_owned()),
        PathBuf::from("/srv/datasets"),
    )]));
    let plan = plan_with(
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]),
        json!([{"name": "data", "mountPath": "/data"}]),
        &[],
        &companions(),
        &bound,
    )
    .expect("plans");
    assert_eq!(
        plan.mounts,
        vec![bind("/data", "/state/volumes/team/shared", false)]
    );
}

#[test]
fn claims_of_a_job_are_every_replica_types_claims() {
    let manifest = "apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: j}
spec:
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers: [{name: tensorflow, image: x}]
          volumes:
          - {name: a, persistentVolumeClaim: {claimName: b-claim}}
          - {name: c, emptyDir: {}}
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: tensorflow, image: x}]
          volumes:
          - {name: a, persistentVolumeClaim: {claimName: a-claim}}
          - {name: b, persistentVolumeClaim: {claimName: b-claim}}
";
    let loaded = trainctl_api::manifest::load_str("job.yaml", manifest);
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
    let claims: Vec<String> = claims_of(&loaded.jobs[0].job).into_iter().collect();
    assert_eq!(claims, ["a-claim", "b-claim"]);
}
