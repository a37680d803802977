//! The Helm chart's `PrometheusRule`
//! (`deploy/helm/trainctl-operator/templates/prometheusrule.yaml`, docs/deploy.md, "Alerts"):
//! its alerts read only metrics that the operator exports, as the operator's own metric
//! registry names them (so renaming a metric fails here), and
//! `helm template --set prometheusRule.enabled=true` renders a well-formed `PrometheusRule`.
//!
//! Rendering needs helm: those tests are ignored, as the `deploy` tests' `helm_*` are, and run
//! with `cargo test -p trainctl --test prometheus_rule -- --ignored` where helm is installed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::Value;
use trainctl_api::JobKind;
use trainctl_engine::reconcile::Transition;
use trainctl_operator::metrics::Metrics;

/// The chart, from the repository root.
const CHART: &str = "deploy/helm/trainctl-operator";

/// The alerts the chart defines, each with the metrics its expression reads.
const ALERTS: [(&str, &[&str]); 4] = [
    (
        "TrainctlJobsFailed",
        &["training_operator_jobs_failed_total"],
    ),
    (
        "TrainctlJobsRestarting",
        &["training_operator_jobs_restarted_total"],
    ),
    (
        "TrainctlReconcileErrors",
        &["trainctl_reconcile_errors_total"],
    ),
    ("TrainctlOperatorNoLeader", &["trainctl_leader"]),
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every series name the operator's `/metrics` can show: its registry, with a series in every
/// family (a family without one shows nothing), encoded as `/metrics` encodes it.
fn exported_metrics() -> BTreeSet<String> {
    let metrics = Metrics::default();
    metrics.enable(JobKind::TFJob);
    metrics.transitions(
        "ml",
        JobKind::TFJob,
        &[
            Transition::Created,
            Transition::Restarted,
            Transition::Succeeded,
            Transition::Failed,
        ],
    );
    metrics.deleted("ml", JobKind::TFJob);
    let error = trainctl_operator::Error::PatchStatus {
        job: "ml/mnist".to_owned(),
        source: kube::Error::Api(Box::new(kube::core::Status::failure(
            "conflict", "Conflict",
        ))),
    };
    metrics.reconciled(JobKind::TFJob, Duration::from_millis(3), Some(&error));
    let _queued = metrics.queued(JobKind::TFJob);
    metrics.set_leader(true);
    metrics
        .encode()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            line.split(['{', ' '])
                .next()
                .expect("a series line starts with its name")
                .to_owned()
        })
        .collect()
}

/// The names in `text` that are metric names of trainctl (`trainctl_*`, `training_operator_*`).
fn metric_names(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("trainctl_") || word.starts_with("training_operator_"))
        .collect()
}

#[test]
fn the_registry_knows_the_counters_the_alerts_are_about() {
    let exported = exported_metrics();
    for name in [
        "training_operator_jobs_failed_total",
        "training_operator_jobs_restarted_total",
        "trainctl_reconcile_errors_total",
        "trainctl_leader",
    ] {
        assert!(exported.contains(name), "{name} not in {exported:?}");
    }
}

#[test]
fn the_chart_s_alerts_read_only_metrics_the_operator_exports() {
    let path = repository()
        .join(CHART)
        .join("templates/prometheusrule.yaml");
    let template = std::fs::read_to_string(&path).expect("the template");
    let read = metric_names(&template);
    let exported = exported_metrics();
    let unknown: Vec<&&str> = read
        .iter()
        .filter(|name| !exported.contains(**name))
        .collect();
    assert!(
        unknown.is_empty(),
        "{} reads metrics the operator does not export: {unknown:?} (it exports {exported:?})",
        path.display()
    );
    let expected: BTreeSet<&str> = ALERTS
        .iter()
        .flat_map(|(_, metrics)| metrics.iter().copied())
        .collect();
    assert_eq!(read, expected);
}

/// A `PrometheusRule` (monitoring.coreos.com/v1), with the fields the chart may use; any other
/// is refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PrometheusRule {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: RuleSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    groups: Vec<RuleGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleGroup {
    name: String,
    rules: Vec<AlertRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertRule {
    alert: String,
    expr: String,
    #[serde(rename = "for")]
    for_: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

/// `helm template trainctl-operator CHART -n kubeflow --set VALUE...`: its `PrometheusRules`.
fn rendered_rules(values: &[&str]) -> Vec<PrometheusRule> {
    let mut command = Command::new("helm");
    command
        .args([
            "template",
            "trainctl-operator",
            CHART,
            "--namespace",
            "kubeflow",
        ])
        .current_dir(repository());
    for value in values {
        command.args(["--set", value]);
    }
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run helm (is it installed?): {error}"));
    assert!(
        output.status.success(),
        "helm template {values:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    serde_saphyr::from_multiple::<Value>(&text)
        .expect("helm renders YAML")
        .into_iter()
        .filter(|document| document["kind"] == "PrometheusRule")
        .map(|document| {
            serde_json::from_value(document)
                .unwrap_or_else(|error| panic!("not a PrometheusRule as the chart writes: {error}"))
        })
        .collect()
}

/// Whether `text` is a duration as the `PrometheusRule` CRD takes one (`0`, `15m`, `1h30m`).
fn is_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let units = ["y", "w", "d", "h", "m", "s", "ms"];
    let mut rest = text;
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let Some(found) = units[next_unit..]
            .iter()
            .position(|unit| rest.starts_with(unit) && !(*unit == "m" && rest.starts_with("ms")))
        else {
            return false;
        };
        rest = &rest[units[next_unit + found].len()..];
        next_unit += found + 1;
    }
    !text.is_empty()
}

/// Whether every `(`, `[` and `{` of `expr` is closed, in order.
fn is_balanced(expr: &str) -> bool {
    let mut open = Vec::new();
    for c in expr.chars() {
        match c {
            '(' | '[' | '{' => open.push(c),
            ')' | ']' | '}' => {
                let expected = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if open.pop() != Some(expected) {
                    return false;
                }
            }
            _ => {}
        }
    }
    open.is_empty()
}

/// The labels `expr` keeps: those of its `by (...)` clauses; `None` when it has none.
fn kept_labels(expr: &str) -> Option<BTreeSet<&str>> {
    let clauses: Vec<&str> = expr
        .split("by (")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(labels, _)| labels))
        .collect();
    (!clauses.is_empty()).then(|| {
        clauses
            .iter()
            .flat_map(|labels| labels.split(','))
            .map(str::trim)
            .collect()
    })
}

/// The labels an annotation shows: each `$labels.NAME`.
fn shown_labels(annotation: &str) -> BTreeSet<&str> {
    annotation
        .split("$labels.")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
        })
        .collect()
}

#[test]
#[ignore = "needs helm; run with --ignored where helm is installed"]
fn helm_renders_a_prometheus_rule_of_the_operators_metrics_when_enabled() {
    assert!(
        rendered_rules(&[]).is_empty(),
        "no PrometheusRule unless enabled"
    );
    let rules = rendered_rules(&[
        "prometheusRule.enabled=true",
        "prometheusRule.labels.release=kps",
    ]);
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert_eq!(rule.api_version, "monitoring.coreos.com/v1");
    assert_eq!(rule.kind, "PrometheusRule");
    assert_eq!(rule.metadata.name.as_deref(), Some("trainctl-operator"));
    assert_eq!(rule.metadata.namespace.as_deref(), Some("kubeflow"));
    let labels = rule.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("release").map(String::as_str), Some("kps"));
    assert_eq!(
        labels.get("app.kubernetes.io/name").map(String::as_str),
        Some("trainctl-operator")
    );

    let exported = exported_metrics();
    let groups: BTreeSet<&str> = rule
        .spec
        .groups
        .iter()
        .map(|group| group.name.as_str())
        .collect();
    assert_eq!(
        groups.len(),
        rule.spec.groups.len(),
        "group names are unique"
    );
    let mut alerts = Vec::new();
    for group in &rule.spec.groups {
        assert!(!group.rules.is_empty(), "group {} has rules", group.name);
        for alert in &group.rules {
            let name = &alert.alert;
            alerts.push(name.as_str());
            assert!(is_balanced(&alert.expr), "{name}: {}", alert.expr);
            assert!(is_duration(&alert.for_), "{name}: for {}", alert.for_);
            assert!(
                ["warning", "critical"].contains(&alert.labels["severity"].as_str()),
                "{name}: severity {:?}",
                alert.labels.get("severity")
            );
            let read = metric_names(&alert.expr);
            let expected = ALERTS
                .iter()
                .find(|(alert, _)| alert == name)
                .map(|(_, metrics)| metrics.iter().copied().collect::<BTreeSet<_>>());
            assert_eq!(Some(read.clone()), expected, "{name}: {}", alert.expr);
            assert!(
                read.iter().all(|metric| exported.contains(*metric)),
                "{name} reads a metric the operator does not export: {}",
                alert.expr
            );
            for key in ["summary", "description"] {
                let text = alert.annotations.get(key).map_or("", String::as_str);
                assert!(!text.is_empty(), "{name}: no {key}");
                let shown = shown_labels(text);
                let kept = kept_labels(&alert.expr).unwrap_or_default();
                assert!(
                    shown.is_subset(&kept),
                    "{name}: its {key} shows labels {shown:?} the expression drops (keeps {kept:?})"
                );
            }
        }
    }
    let expected: Vec<&str> = ALERTS.iter().map(|(alert, _)| *alert).collect();
    assert_eq!(alerts, expected);
    let failed = &rule.spec.groups[0].rules[0];
    assert!(failed.expr.contains("[15m]"), "{}", failed.expr);
    assert!(failed.expr.contains("> 0"), "{}", failed.expr);
}

#[test]
#[ignore = "needs helm; run with --ignored where helm is installed"]
fn helm_puts_the_values_thresholds_windows_and_selector_into_the_alerts() {
    let rules = rendered_rules(&[
        "prometheusRule.enabled=true",
        "prometheusRule.jobFailures.threshold=2",
        "prometheusRule.jobFailures.window=1h",
        "prometheusRule.jobFailures.for=5m",
        "prometheusRule.jobRestarts.enabled=false",
        "prometheusRule.noLeader.enabled=false",
        "prometheusRule.reconcileErrors.enabled=false",
        r#"prometheusRule.metricSelector=namespace="kubeflow""#,
    ]);
    let groups = &rules[0].spec.groups;
    assert_eq!(
        groups.len(),
        1,
        "a group whose alerts are all disabled is left out"
    );
    let [failed] = groups[0].rules.as_slice() else {
        panic!("one alert: {:?}", groups[0].rules);
    };
    assert_eq!(failed.alert, "TrainctlJobsFailed");
    assert_eq!(failed.for_, "5m");
    assert!(is_balanced(&failed.expr), "{}", failed.expr);
    for part in [
        r#"increase(training_operator_jobs_failed_total{namespace="kubeflow"}[1h])"#,
        "offset 1h",
        "> 2",
    ] {
        assert!(failed.expr.contains(part), "{part} not in {}", failed.expr);
    }
    assert!(
        !failed.expr.contains("total["),
        "every metric is selected: {}",
        failed.expr
    );
}

#[test]
fn the_test_s_readers_read_as_prometheus_does() {
    for good in ["0", "0m", "15m", "1h30m", "2d", "500ms", "1m30s"] {
        assert!(is_duration(good), "{good}");
    }
    for bad in ["", "15", "m", "30m1h", "1.5h", "5 m"] {
        assert!(!is_duration(bad), "{bad}");
    }
    assert!(is_balanced("sum(rate(x{a=\"b\"}[5m])) > 0"));
    assert!(!is_balanced("sum(rate(x[5m)) > 0"));
    assert_eq!(
        kept_labels("sum by (kind, operation) (rate(x[5m])) or max(y)"),
        Some(BTreeSet::from(["kind", "operation"]))
    );
    assert_eq!(kept_labels("max(y) < 1"), None);
    assert_eq!(
        shown_labels("{{ $labels.kind }} at {{ $value }} in {{ $labels.operation }}"),
        BTreeSet::from(["kind", "operation"])
    );
}
