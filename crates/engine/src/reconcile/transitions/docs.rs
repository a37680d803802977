//! `docs/transitions.md`, rendered from the table, and the test that keeps them the same.

use std::fmt::Write as _;

use super::table::TABLE;

/// `docs/transitions.md`, rendered from [`TABLE`].
fn render_docs() -> String {
    let mut doc = String::from(
        "# Reconcile transitions\n\n\
         <!-- Generated from crates/engine/src/reconcile/transitions/table.rs: do not edit by hand. \
         Regenerate with `UPDATE_DOCS=1 cargo test -p trainctl-engine transitions`. -->\n\n\
         What `trainctl_engine::reconcile` decides, one row per rule of `docs/semantics.md` (and \
         per kind where kinds differ). Every row is a test named for its rule.\n\n\
         - **Section**: where `docs/semantics.md` states the rule; **[fix]** marks a deliberate \
         difference from the Kubeflow operator, whose reason its §8 gives.\n\
         - **Job**: the kind, `<Type>=<replicas>[/<restartPolicy>]` (default restart policy per \
         kind otherwise), and `runPolicy`/kind options (`backoffLimit`, `deadline` = \
         `activeDeadlineSeconds`, `ttl` = `ttlSecondsAfterFinished`, `clean` = `cleanPodPolicy`, \
         `suspend`, `multikueue` = `managedBy: kueue.x-k8s.io/multikueue`, `successPolicy`, \
         `jobMode`, `dynamicWorker`, `elastic`, `autoscaled` = `elastic` with `metrics`). Jobs are named `mnist` in namespace `ml`.\n\
         - **Before**: the job's conditions before this reconcile (`new`: no status). Times are \
         relative to now: `started` (default -60s) and `completed` (default -10s).\n\
         - **Observed**: the pods (`all <phase>` for every slot), their exit codes, in-place \
         `restarts`, `reason`s and deletion; a service per observed pod unless `no services` (`services`: one per slot of the job); \
         the volcano `podgroup` phase; the runtime's `waiting` facts (`gpu:<needed>/<free>`); \
         `retired` restarts from earlier plans; the restart `backoff`.\n\
         - **Plan**: the conditions (`=False` marks one that does not hold) with the newest \
         one's reason and message, pods and services to create and delete (and why), PodGroup, \
         HorizontalPodAutoscaler (`apply HPA`, `delete HPA`), events, `requeue` after, job deletion, metrics `count`ed, and the restart ledger.\n\n\
         | Rule | Section | Job | Before | Observed | Plan |\n\
         |---|---|---|---|---|---|\n",
    );
    for row in TABLE {
        writeln!(
            doc,
            "| `{}` | {} | `{}` | `{}` | `{}` | {} |",
            row.rule,
            row.spec,
            row.job,
            row.before,
            row.observed,
            row.plan.replace('|', "\\|")
        )
        .expect("writing to a String cannot fail");
    }
    doc
}

#[test]
fn transitions_table_matches_docs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/transitions.md");
    let rendered = render_docs();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let path = std::path::Path::new(path);
        if let Some(docs) = path.parent() {
            std::fs::create_dir_all(docs).expect("docs/ can be created");
        }
        std::fs::write(path, &rendered).expect("docs/transitions.md is writable");
        return;
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/transitions.md is out of date with the transition table: run \
         `UPDATE_DOCS=1 cargo test -p trainctl-engine transitions` to regenerate it"
    );
}
