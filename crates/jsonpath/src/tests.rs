//! The template language against a v1 `List` of two TFJobs; expected strings follow kubectl's
//! (client-go's `jsonpath_test.go`). The columns' and sorting's tests are beside them.

use serde_json::{Value, json};

use super::{Template, relaxed_path};

/// A v1 `List` of two TFJobs: `mnist` running with two workers, `resnet` created with four.
fn tfjobs() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {
                    "name": "mnist",
                    "namespace": "team-a",
                    "labels": {"training.kubeflow.org/job-name": "mnist", "app": "vision"},
                    "creationTimestamp": "2025-03-02T10:00:00Z"
                },
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
                "status": {
                    "conditions": [
                        {"type": "Created", "status": "True", "reason": "TFJobCreated"},
                        {"type": "Running", "status": "True", "reason": "TFJobRunning"}
                    ],
                    "replicaStatuses": {"Worker": {"active": 2}}
                }
            },
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {
                    "name": "resnet",
                    "namespace": "team-b",
                    "labels": {"training.kubeflow.org/job-name": "resnet"},
                    "creationTimestamp": "2025-03-01T09:30:00Z"
                },
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 4}}},
                "status": {
                    "conditions": [
                        {"type": "Created", "status": "True", "reason": "TFJobCreated"}
                    ]
                }
            }
        ]
    })
}

/// The two TFJobs of [`tfjobs`].
pub(super) fn items() -> Vec<Value> {
    match tfjobs() {
        Value::Object(mut list) => match list.remove("items") {
            Some(Value::Array(items)) => items,
            other => panic!("no items: {other:?}"),
        },
        other => panic!("not an object: {other}"),
    }
}

fn render(template: &str, value: &Value) -> String {
    let parsed = Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
    parsed
        .render(value)
        .unwrap_or_else(|e| panic!("{template}: {e}"))
}

/// Checks each `(template, expected output)` on `value`.
fn check(value: &Value, cases: &[(&str, &str)]) {
    for (template, expected) in cases {
        assert_eq!(render(template, value), *expected, "{template}");
    }
}

fn parse_error(template: &str) -> String {
    match Template::parse(template) {
        Ok(parsed) => panic!("{template} parsed: {parsed:?}"),
        Err(error) => error.to_string(),
    }
}

fn execute_error(template: &str, value: &Value) -> String {
    let parsed = Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
    match parsed.render(value) {
        Ok(out) => panic!("{template} printed {out:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn prints_members_and_the_text_around_them() {
    check(
        &tfjobs(),
        &[
            ("{.kind}", "List"),
            ("kind is {.kind}", "kind is List"),
            ("{.items[*].metadata.name}", "mnist resnet"),
            (
                "{.items[0].metadata.namespace}/{.items[0].metadata.name}",
                "team-a/mnist",
            ),
            (r"{.kind}\n", r"List\n"),
            ("a } b", "a } b"),
            ("", ""),
        ],
    );
    let job = &items()[0];
    assert_eq!(render("{.metadata.name}", job), "mnist");
    assert_eq!(render("{ .metadata.name }", job), "mnist");
}

#[test]
fn at_dollar_and_an_empty_action_are_the_current_value() {
    let value = json!({"b": 1, "a": "x"});
    check(
        &value,
        &[
            ("{@}", r#"{"a":"x","b":1}"#),
            ("{$}", r#"{"a":"x","b":1}"#),
            ("{}", r#"{"a":"x","b":1}"#),
            ("{$.b}", "1"),
            ("{@.a}", "x"),
        ],
    );
}

#[test]
fn indexes_and_slices() {
    check(
        &tfjobs(),
        &[
            ("{.items[0].metadata.name}", "mnist"),
            ("{.items[1].metadata.name}", "resnet"),
            ("{.items[-1].metadata.name}", "resnet"),
            ("{.items[-2].metadata.name}", "mnist"),
            ("{.items[-1:].metadata.name}", "resnet"),
            ("{.items[0:1].metadata.name}", "mnist"),
            ("{.items[:2].metadata.name}", "mnist resnet"),
            ("{.items[1:].metadata.name}", "resnet"),
            ("{.items[0:-1].metadata.name}", "mnist"),
            ("{.items[::2].metadata.name}", "mnist"),
            ("{.items[*].status.conditions[-1:].type}", "Running Created"),
            ("{.items[2:2]}", ""),
            ("{.items[5:5]}", ""),
        ],
    );
    check(
        &json!({"n": [0, 1, 2, 3, 4, 5], "none": null}),
        &[
            ("{.n[1:4:2]}", "1 3"),
            ("{.n[0:6:5]}", "0 5"),
            ("{.n[0:6:]}", "0 1 2 3 4 5"),
            ("{.n[-3:-1]}", "3 4"),
            ("{.none[0]}", ""),
        ],
    );
}

#[test]
fn an_index_outside_the_array_is_an_error() {
    let list = tfjobs();
    for (template, problem) in [
        (
            "{.items[2]}",
            "array index out of bounds: index 2, length 2",
        ),
        (
            "{.items[-3]}",
            "array index out of bounds: index -1, length 2",
        ),
        (
            "{.items[0:3]}",
            "array index out of bounds: index 2, length 2",
        ),
        (
            "{.items[1:0]}",
            "starting index 1 is greater than ending index 0",
        ),
        ("{.items[0].metadata[0]}", "object is not array or slice"),
        ("{..[0]}", "object is not array or slice"),
    ] {
        let expected = format!("error executing jsonpath {template:?}: {problem}");
        assert_eq!(execute_error(template, &list), expected);
    }
    let empty = json!({"status": {"conditions": []}});
    assert_eq!(
        execute_error("{.status.conditions[-1:].type}", &empty),
        "error executing jsonpath \"{.status.conditions[-1:].type}\": \
         array index out of bounds: index -1, length 0"
    );
}

#[test]
fn escaped_dots_and_bracketed_keys() {
    check(
        &tfjobs(),
        &[
            (
                r"{.items[0].metadata.labels.training\.kubeflow\.org/job-name}",
                "mnist",
            ),
            (
                r"{.items[*].metadata.labels.training\.kubeflow\.org/job-name}",
                "mnist resnet",
            ),
            (
                r"{.items[0].metadata.labels['training\.kubeflow\.org/job-name']}",
                "mnist",
            ),
            // As in kubectl, a bracketed key is a path: this looks for `training`.
            (
                "{.items[0].metadata.labels['training.kubeflow.org/job-name']}",
                "",
            ),
            ("{.items[0]['metadata']['name']}", "mnist"),
            ("{.items[*]['metadata.name']}", "mnist resnet"),
            ("{.items[0].metadata.labels.*}", "mnist vision"),
            ("{.items[0].spec.tfReplicaSpecs.*.replicas}", "2"),
        ],
    );
    check(
        &json!({"a.b": 1, "a": {"b": 2}, "*": 3}),
        &[(r"{.a\.b}", "1"), ("{['a.b']}", "2"), (r"{.\*}", "3")],
    );
}

#[test]
fn unions_take_each_branch_in_turn() {
    check(
        &tfjobs(),
        &[
            (
                "{.items[*]['metadata.name', 'metadata.namespace']}",
                "mnist resnet team-a team-b",
            ),
            ("{.items[0].status.conditions[0,1].type}", "Created Running"),
            (
                "{.items[0].status.conditions[1, 0].reason}",
                "TFJobRunning TFJobCreated",
            ),
        ],
    );
}

#[test]
fn recursive_descent() {
    check(
        &tfjobs(),
        &[
            ("{..name}", "mnist resnet"),
            ("{...name}", "mnist resnet"),
            ("{..replicas}", "2 4"),
            ("{..kind}", "List TFJob TFJob"),
            ("{.items[0]..type}", "Created Running"),
        ],
    );
    assert_eq!(render("{..}", &json!([1, 2, 3])), "[1,2,3]");
    assert_eq!(
        render("{..}", &json!({"a": {}, "b": [1]})),
        r#"{"a":{},"b":[1]} [1]"#
    );
}

#[test]
fn filters() {
    check(
        &tfjobs(),
        &[
            (
                r#"{.items[?(@.metadata.namespace=="team-a")].metadata.name}"#,
                "mnist",
            ),
            (
                r#"{.items[?(@.metadata.namespace!="team-a")].metadata.name}"#,
                "resnet",
            ),
            (
                "{.items[?(@.spec.tfReplicaSpecs.Worker.replicas>2)].metadata.name}",
                "resnet",
            ),
            (
                "{.items[?(@.spec.tfReplicaSpecs.Worker.replicas<4)].metadata.name}",
                "mnist",
            ),
            (
                "{.items[?(@.spec.tfReplicaSpecs.Worker.replicas<=4)].metadata.name}",
                "mnist resnet",
            ),
            (
                "{.items[?(@.spec.tfReplicaSpecs.Worker.replicas>=4)].metadata.name}",
                "resnet",
            ),
            (
                "{.items[?(@.spec.tfReplicaSpecs.Worker.replicas==2.0)].metadata.name}",
                "mnist",
            ),
            (
                "{.items[?(@.status.replicaStatuses)].metadata.name}",
                "mnist",
            ),
            (
                "{.items[?(.status.replicaStatuses.Worker.active)].metadata.name}",
                "mnist",
            ),
            (
                "{.items[0].status.conditions[?(@.type=='Running')].reason}",
                "TFJobRunning",
            ),
            (
                r#"{.items[0].status.conditions[?(@.type == "Running")].reason}"#,
                "TFJobRunning",
            ),
            (
                r#"{.items[?(@.metadata.labels.training\.kubeflow\.org/job-name=="resnet")].metadata.namespace}"#,
                "team-b",
            ),
            (
                "{range .items[?(@.spec.tfReplicaSpecs.Worker.replicas>=2)]}{.metadata.name};{end}",
                "mnist;resnet;",
            ),
        ],
    );
    check(
        &json!({"l": [{"v": "()", "ok": true, "n": null}, {"v": "x)", "ok": false}]}),
        &[
            (r#"{.l[?(@.v=="()")].v}"#, "()"),
            (r"{.l[?(@.v=='x)')].v}", "x)"),
            ("{.l[?(@.ok==true)].v}", "()"),
            ("{.l[?(@.ok!=true)].v}", "x)"),
            ("{.l[?(@.n)].v}", "()"),
        ],
    );
}

#[test]
fn filter_errors() {
    let list = tfjobs();
    for (template, problem) in [
        (
            r#"{.items[?(@.status.conditions[*].type=="Running")]}"#,
            "can only compare one element at a time",
        ),
        (
            "{.items[?(@.metadata.name==2)]}",
            "incompatible types for comparison",
        ),
        ("{.items[?(@.metadata==2)]}", "invalid type for comparison"),
        (
            "{.items[?(@.metadata.name<true)]}",
            "incompatible types for comparison",
        ),
        (
            "{.items[0].metadata[?(@.name)]}",
            "object is not array or slice and cannot be filtered",
        ),
    ] {
        let expected = format!("error executing jsonpath {template:?}: {problem}");
        assert_eq!(execute_error(template, &list), expected);
    }
    assert_eq!(
        execute_error("{.l[?(@<true)]}", &json!({"l": [true]})),
        "error executing jsonpath \"{.l[?(@<true)]}\": invalid type for comparison"
    );
}

#[test]
fn ranges_and_nested_ranges() {
    check(
        &tfjobs(),
        &[
            (
                r#"{range .items[*]}{.metadata.name}{"\t"}{.metadata.namespace}{"\n"}{end}"#,
                "mnist\tteam-a\nresnet\tteam-b\n",
            ),
            (
                r#"{range .items[*]}{.metadata.name}:{range .status.conditions[*]} {.type}{end}{"\n"}{end}"#,
                "mnist: Created Running\nresnet: Created\n",
            ),
            (
                "{range .items[*]}[{.metadata.name}]{end} of {.kind}",
                "[mnist][resnet] of List",
            ),
            ("{range .items[*].metadata}{@.name} {end}", "mnist resnet "),
            ("{range .items[*]}{$.metadata.name} {end}", "mnist resnet "),
            (
                "{range .items[*]}[{.metadata.name}, {.spec.tfReplicaSpecs}] {end}",
                r#"[mnist, {"Worker":{"replicas":2}}] [resnet, {"Worker":{"replicas":4}}] "#,
            ),
        ],
    );
    let empty = json!({"items": []});
    assert_eq!(render("{range .items[*]}{.metadata.name}{end}", &empty), "");
    assert_eq!(
        render(
            r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
            &empty
        ),
        ""
    );
}

#[test]
fn output_as_kubectl_prints_it() {
    check(
        &tfjobs(),
        &[
            (
                "{.items[0].metadata.labels}",
                r#"{"app":"vision","training.kubeflow.org/job-name":"mnist"}"#,
            ),
            (
                "{.items[0].status.conditions[0]}",
                r#"{"reason":"TFJobCreated","status":"True","type":"Created"}"#,
            ),
            ("{.items[*].spec.tfReplicaSpecs.Worker.replicas}", "2 4"),
            ("{.items[1].status.conditions[*].type}", "Created"),
        ],
    );
    check(
        &json!({
            "f": 2.0, "big": 1e6, "small": 1e-7, "half": 0.5, "int": 1_000_000,
            "flag": true, "none": null, "html": "<a & b>", "ctl": "a\u{1}\n\"\\",
            "list": [1.0, 1e21, 1e-7, "x", null]
        }),
        &[
            ("{.f}", "2"),
            ("{.big}", "1e+06"),
            ("{.small}", "1e-07"),
            ("{.half}", "0.5"),
            ("{.int}", "1000000"),
            ("{.flag}", "true"),
            ("{.none}", "null"),
            ("{.html}", "<a & b>"),
            ("{.list}", r#"[1,1e+21,1e-7,"x",null]"#),
            ("{.list[*]}", "1 1e+21 1e-07 x null"),
            ("{['html','big']}", "<a & b> 1e+06"),
        ],
    );
    assert_eq!(
        render(
            "{@}",
            &json!({"html": "<a & b>", "big": 1e6, "ctl": "a\u{1}\n\"\\\u{8}\u{2028}"})
        ),
        r#"{"big":1000000,"ctl":"a\u0001\n\"\\\b\u2028","html":"\u003ca \u0026 b\u003e"}"#
    );
}

#[test]
fn missing_members_print_nothing() {
    check(
        &tfjobs(),
        &[
            ("{.status.nope}", ""),
            ("before-{.x}after", "before-after"),
            ("{.items[*].status.replicaStatuses.Worker.active}", "2"),
            ("{.items[1].status.replicaStatuses.Worker.active}", ""),
            ("{.items[*].nope[0]}", ""),
        ],
    );
}

#[test]
fn quoted_text_numbers_and_booleans() {
    check(
        &tfjobs(),
        &[
            (r#"{"\n"}"#, "\n"),
            (r#"{"\t"}"#, "\t"),
            (r"{'it\'s'}", "it's"),
            (r#"{"say \"hi\""}"#, "say \"hi\""),
            (r#"{"\u00e9\x41\101\\"}"#, "\u{e9}AA\\"),
            (r#"{"{"}"#, "{"),
            (r#"{'"'}"#, "\""),
            (r#"{.items[*] "x"}"#, "x"),
            ("{.items[*] 1}", "1 1"),
            ("{1}", "1"),
            ("{-1.5}", "-1.5"),
            ("{true}", "true"),
        ],
    );
}

#[test]
fn errors_reading_a_template() {
    for (template, problem) in [
        ("{.x", "unclosed action"),
        ("{.x\n}", "unclosed action"),
        ("{*}", "unrecognized character in action: U+002A '*'"),
        ("{\t.x}", "unrecognized character in action: U+0009"),
        ("{..*}", "unrecognized character in action: U+002A '*'"),
        ("{+12.3.0}", "cannot parse number +12.3.0"),
        ("{[1}", "unterminated array"),
        ("{[?(.price]}", "unterminated filter"),
        ("{........}", "invalid multiple recursive descent"),
        ("{hello}", "unrecognized identifier hello"),
        ("{end}", "not in range, nothing to end"),
        (
            "{range .items[*]}{.metadata.name}",
            "unclosed range, expected {end}",
        ),
        ("{.a[?(@.b<>1)]}", "unrecognized filter operator <>"),
        ("{.a[?(@.b==1)x}", "unclosed array expect ]"),
        ("{.a[x]}", "invalid array index x"),
        ("{.a[\"k\"]}", "invalid array index \"k\""),
        ("{.a[1:2:3:4]}", "invalid array index 1:2:3:4"),
        ("{.a[-]}", "array index - is not a number"),
        ("{.a[0:2:0]}", "step must be > 0"),
        ("{.a[0:2:-1]}", "step must be > 0"),
        ("{\"abc}", "unterminated quoted string"),
        (r#"{"\q"}"#, r#"unquote string "\q" error invalid syntax"#),
        (
            r#"{"\xff"}"#,
            r#"unquote string "\xff" error invalid syntax"#,
        ),
        ("{.a range .b}", "unexpected range: it must begin an action"),
        (
            "{range .items[*]}{end .x}",
            "unexpected end: it must stand alone in an action",
        ),
        (
            "{.a[?(@.b=={)]}",
            "unrecognized character in action: U+007B '{'",
        ),
    ] {
        assert_eq!(
            parse_error(template),
            format!("error parsing jsonpath {template}, {problem}"),
            "{template}"
        );
    }
}

#[test]
fn paths_are_completed_as_kubectl_completes_them() {
    for (path, relaxed) in [
        ("foo.bar", "{.foo.bar}"),
        ("{foo.bar}", "{.foo.bar}"),
        (".foo.bar", "{.foo.bar}"),
        ("{.foo.bar}", "{.foo.bar}"),
        ("", ""),
        (".", "{..}"),
        ("{..name}", "{..name}"),
    ] {
        assert_eq!(relaxed_path(path).as_deref(), Ok(relaxed), "{path}");
    }
    for path in [
        "{foo.bar",
        "foo.bar}",
        "{foo.bar}}",
        "{{foo.bar}",
        "{}",
        "{.a}{.b}",
    ] {
        assert!(relaxed_path(path).is_err(), "{path}");
    }
}
