//! The volume flags of `run`, `server` and `submit`, and the arguments of `volumes`, as clap
//! reads them.

use clap::Parser;
use clap::error::ErrorKind;

use crate::cli::{Cli, Command, VolumesAction, VolumesFormat};

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("trainctl").chain(args.iter().copied()))
}

/// The message clap prints for a refused command line, without its usage lines.
fn refusal(args: &[&str]) -> (String, i32) {
    let error = parse(args).expect_err("refused");
    let text = error.render().to_string();
    (
        text.lines().next().unwrap_or_default().to_owned(),
        error.exit_code(),
    )
}

#[test]
fn run_and_server_take_repeated_volumes_made_absolute() {
    let dir = tempfile::tempdir().expect("tempdir");
    let canonical = std::fs::canonicalize(dir.path()).expect("canonical");
    let data = format!("data={}", dir.path().display());
    let other = format!("ml/other={}/.", dir.path().display());
    let cli = parse(&[
        "run", "-f", "job.yaml", "--volume", &data, "--volume", &other,
    ])
    .expect("run");
    let Command::Run(args) = cli.command else {
        panic!("not run: {:?}", cli.command)
    };
    let bindings = &args.machine.volumes.bindings;
    assert_eq!(bindings.len(), 2);
    assert_eq!(
        (bindings[0].namespace.as_deref(), bindings[0].claim.as_str()),
        (None, "data")
    );
    assert_eq!(
        (bindings[1].namespace.as_deref(), bindings[1].claim.as_str()),
        (Some("ml"), "other")
    );
    assert!(bindings.iter().all(|binding| binding.path == canonical));
    assert!(!args.machine.volumes.no_volumes);

    let cli = parse(&["server", "--volume", &data]).expect("server");
    let Command::Server(args) = cli.command else {
        panic!("not server: {:?}", cli.command)
    };
    assert_eq!(args.machine.volumes.bindings[0].path, canonical);

    let cli = parse(&["submit", "-f", "job.yaml", "--volume", &data]).expect("submit");
    let Command::Submit(args) = cli.command else {
        panic!("not submit: {:?}", cli.command)
    };
    assert_eq!(args.volumes[0].claim, "data");
}

#[test]
fn a_volume_that_is_not_claim_and_directory_is_a_usage_error() {
    assert_eq!(
        refusal(&["run", "-f", "job.yaml", "--volume", "training-data"]),
        (
            "error: invalid value 'training-data' for '--volume <CLAIM=PATH>': expected \
             CLAIM=PATH (e.g. --volume training-data-pvc=/srv/datasets/mnist), or \
             NAMESPACE/CLAIM=PATH"
                .to_owned(),
            2
        )
    );
    assert_eq!(
        refusal(&["server", "--volume", "x=/nope/never"]),
        (
            "error: invalid value 'x=/nope/never' for '--volume <CLAIM=PATH>': /nope/never is \
             not a directory (it does not exist)"
                .to_owned(),
            2
        )
    );
    let (message, code) = refusal(&["submit", "-f", "job.yaml", "--volume", "Data=/tmp"]);
    assert!(
        message.starts_with(
            "error: invalid value 'Data=/tmp' for '--volume <CLAIM=PATH>': `Data` is not a valid \
             claim name"
        ),
        "{message}"
    );
    assert_eq!(code, 2);
}

#[test]
fn no_volumes_is_a_switch_of_its_own() {
    let cli = parse(&["run", "-f", "job.yaml", "--no-volumes"]).expect("run");
    let Command::Run(args) = cli.command else {
        panic!("not run: {:?}", cli.command)
    };
    assert!(args.machine.volumes.no_volumes);
    let error = parse(&["server", "--no-volumes", "--volume", "data=/tmp"]).expect_err("both");
    assert_eq!(error.kind(), ErrorKind::ArgumentConflict);
}

#[test]
fn volumes_lists_or_deletes() {
    let cli = parse(&["volumes", "-A", "-o", "wide"]).expect("list");
    let Command::Volumes(args) = cli.command else {
        panic!("not volumes: {:?}", cli.command)
    };
    assert!(args.all_namespaces && args.action.is_none());
    assert_eq!(args.output, Some(VolumesFormat::Wide));

    let cli = parse(&["pvc", "delete", "a", "b", "-n", "ml"]).expect("delete");
    let Command::Volumes(args) = cli.command else {
        panic!("not volumes: {:?}", cli.command)
    };
    let Some(VolumesAction::Delete(delete)) = args.action else {
        panic!("not delete: {:?}", args.action)
    };
    assert_eq!(delete.claims, ["a", "b"]);
    assert_eq!(delete.namespace.as_deref(), Some("ml"));

    let error = parse(&["volumes", "delete"]).expect_err("no claim");
    assert_eq!(error.kind(), ErrorKind::MissingRequiredArgument);
    let error = parse(&["volumes", "-n", "ml", "-A"]).expect_err("both");
    assert_eq!(error.kind(), ErrorKind::ArgumentConflict);
}

#[test]
fn delete_takes_claim_names_never_paths() {
    for path in ["..", "/", "a/b", "../team-b"] {
        let (message, code) = refusal(&["volumes", "delete", path]);
        assert!(
            message.starts_with(&format!(
                "error: invalid value '{path}' for '<CLAIM>...': `{path}` is not a claim's name: "
            )),
            "{message}"
        );
        assert_eq!(code, 2);
    }
    assert!(parse(&["volumes", "delete", "training-data.v2"]).is_ok());
}
