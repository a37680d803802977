//! The claims' table and document, from rows built here.

use super::*;

fn at(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

fn rows() -> Vec<ClaimRow> {
    vec![
        ClaimRow {
            namespace: "default".to_owned(),
            name: "checkpoints".to_owned(),
            backing: ClaimBacking::Own("/state/volumes/default/checkpoints".into()),
            usage: Some(DiskUsage {
                bytes: 12 * 1024,
                files: 3,
                complete: true,
            }),
            since: Some(at("2026-11-24T10:00:00Z")),
            used_by: vec![
                ClaimUser {
                    kind: JobKind::TFJob,
                    name: "mnist".to_owned(),
                    state: "Running".to_owned(),
                },
                ClaimUser {
                    kind: JobKind::PyTorchJob,
                    name: "bert".to_owned(),
                    state: "Succeeded".to_owned(),
                },
            ],
        },
        ClaimRow {
            namespace: "default".to_owned(),
            name: "training-data-pvc".to_owned(),
            backing: ClaimBacking::Bound("/srv/datasets/mnist".into()),
            usage: Some(DiskUsage {
                bytes: 3_565_158,
                files: 1_000_000,
                complete: false,
            }),
            since: Some(at("2026-11-24T08:00:00Z")),
            used_by: Vec::new(),
        },
        ClaimRow {
            namespace: "default".to_owned(),
            name: "scratch".to_owned(),
            backing: ClaimBacking::Own("/state/volumes/default/scratch".into()),
            usage: None,
            since: None,
            used_by: vec![ClaimUser {
                kind: JobKind::TFJob,
                name: "queued".to_owned(),
                state: "Pending".to_owned(),
            }],
        },
    ]
}

#[test]
fn the_table_shows_each_claims_path_size_source_and_users() {
    let table = table(&rows(), Columns::default(), at("2026-11-24T10:05:00Z"));
    assert_eq!(
        table.render(),
        "\
NAME                PATH                                 SIZE     SOURCE     USED BY
checkpoints         /state/volumes/default/checkpoints   12Ki     trainctl   tfjob/mnist (Running), pytorchjob/bert (Succeeded)
training-data-pvc   /srv/datasets/mnist                  3.4Mi+   bound      <none>
scratch             /state/volumes/default/scratch       -        trainctl   tfjob/queued (Pending)
"
    );
}

#[test]
fn wide_adds_files_and_age_and_all_namespaces_adds_the_namespace() {
    let columns = Columns {
        with_namespace: true,
        wide: true,
    };
    let table = table(&rows()[..2], columns, at("2026-11-24T10:05:00Z"));
    assert_eq!(
        table.render(),
        "\
NAMESPACE   NAME                PATH                                 SIZE     FILES      SOURCE     AGE   USED BY
default     checkpoints         /state/volumes/default/checkpoints   12Ki     3          trainctl   5m    tfjob/mnist (Running), pytorchjob/bert (Succeeded)
default     training-data-pvc   /srv/datasets/mnist                  3.4Mi+   1000000+   bound      2h    <none>
"
    );
}

#[test]
fn claims_of_several_namespaces_are_told_apart() {
    let mut rows = rows();
    rows[1].namespace = "ml".to_owned();
    let rendered = table(&rows, Columns::default(), at("2026-11-24T10:05:00Z")).render();
    let header = rendered.lines().next().expect("a header");
    assert!(header.starts_with("NAMESPACE   NAME"), "{rendered}");
}

#[test]
fn sizes_are_short_binary_quantities() {
    for (bytes, text) in [
        (0, "0"),
        (1023, "1023"),
        (1024, "1Ki"),
        (1536, "1.5Ki"),
        (12 * 1024, "12Ki"),
        (1_048_064, "1Mi"),
        (3_565_158, "3.4Mi"),
        (10 * 1024 * 1024 - 1, "10Mi"),
        (5 * 1024 * 1024 * 1024, "5Gi"),
        (u64::MAX, "16Ei"),
    ] {
        assert_eq!(size(bytes), text, "{bytes}");
    }
}

#[test]
fn the_document_has_every_field() {
    let document = document(&rows()[1..]);
    assert_eq!(
        document,
        json!({ "items": [
            { "namespace": "default", "name": "training-data-pvc", "path": "/srv/datasets/mnist",
              "source": "bound", "sizeBytes": 3_565_158, "files": 1_000_000, "counted": "partly",
              "since": "2026-11-24T08:00:00Z", "usedBy": [] },
            { "namespace": "default", "name": "scratch", "path": "/state/volumes/default/scratch",
              "source": "trainctl", "sizeBytes": null, "files": null, "counted": null,
              "since": null, "usedBy": [{ "kind": "TFJob", "name": "queued", "state": "Pending" }] },
        ] })
    );
}

#[test]
fn describe_says_what_backs_a_claim() {
    assert_eq!(
        ClaimBacking::Bound("/srv/datasets".into()).words(),
        "bound to /srv/datasets"
    );
    assert_eq!(
        ClaimBacking::Own("/state/volumes/default/data".into()).words(),
        "at /state/volumes/default/data"
    );
}
