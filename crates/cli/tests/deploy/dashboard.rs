//! The Grafana dashboard: the operator's metrics, through a data source variable.

use super::*;

/// The metrics `trainctl operator` serves (docs/semantics.md §7, docs/operator.md), as the
/// dashboard queries them: a histogram by its `_bucket` and `_count` series.
const OPERATOR_METRICS: [&str; 10] = [
    "trainctl_leader",
    "trainctl_queue_depth",
    "trainctl_reconcile_duration_seconds_bucket",
    "trainctl_reconcile_duration_seconds_count",
    "trainctl_reconcile_errors_total",
    "training_operator_jobs_created_total",
    "training_operator_jobs_deleted_total",
    "training_operator_jobs_failed_total",
    "training_operator_jobs_restarted_total",
    "training_operator_jobs_successful_total",
];

#[test]
fn the_grafana_dashboard_queries_the_operator_metrics_through_a_datasource_variable() {
    let path = repository().join("deploy/grafana/trainctl-operator.json");
    let dashboard: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    assert_eq!(variables[0]["name"], "datasource");
    assert_eq!(variables[0]["type"], "datasource");
    assert_eq!(variables[0]["query"], "prometheus");
    let source = json!({"type": "prometheus", "uid": "${datasource}"});
    let mut queries = Vec::new();
    for variable in &variables[1..] {
        assert_eq!(
            variable["datasource"], source,
            "variable {}",
            variable["name"]
        );
        queries.push(variable["definition"].as_str().expect("a query").to_owned());
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        assert_eq!(panel["datasource"], source, "panel {}", panel["title"]);
        for target in panel["targets"].as_array().expect("targets") {
            assert_eq!(target["datasource"], source, "panel {}", panel["title"]);
            queries.push(target["expr"].as_str().expect("an expression").to_owned());
        }
    }
    let metrics: BTreeSet<&str> = queries
        .iter()
        .flat_map(|query| query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with("trainctl_") || word.starts_with("training_operator_"))
        .collect();
    assert_eq!(metrics, BTreeSet::from(OPERATOR_METRICS));
    for quantile in ["0.5", "0.99"] {
        assert!(
            queries
                .iter()
                .any(|query| query.starts_with(&format!("histogram_quantile({quantile}, "))),
            "a p{quantile} panel"
        );
    }
}
