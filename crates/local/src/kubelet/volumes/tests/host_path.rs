//! hostPaths: the path itself, checked against its `type` (made, for the `...OrCreate` types,
//! when the plan is materialized), in a temporary directory.

use super::*;

#[test]
fn a_host_path_is_the_path_itself_checked_against_its_type() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("dir");
    let file = temp.path().join("file");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(&file, "x").expect("write");
    let host = |path: &Path, kind: Option<&str>| {
        let mut source = json!({"path": path});
        if let Some(kind) = kind {
            source["type"] = json!(kind);
        }
        planned(
            json!([{"name": "host", "hostPath": source}]),
            json!([{"name": "host", "mountPath": "/host"}]),
        )
    };
    for (path, kind) in [
        (&dir, None),
        (&dir, Some("")),
        (&dir, Some("Directory")),
        (&file, Some("File")),
        (&file, None),
    ] {
        let plan = host(path, kind).unwrap_or_else(|error| panic!("{kind:?}: {error}"));
        assert_eq!(plan.mounts, vec![bind("/host", path, false)], "{kind:?}");
        assert_eq!(
            plan.backings,
            vec![("host".to_owned(), Backing::HostPath(path.clone()))]
        );
        assert!(plan.dirs.is_empty() && plan.files.is_empty(), "{kind:?}");
    }
    // The `...OrCreate` types are made when the plan is materialized.
    let made = temp.path().join("made/dir");
    let plan = host(&made, Some("DirectoryOrCreate")).expect("plans");
    assert_eq!(plan.dirs, vec![made.clone()]);
    let touched = temp.path().join("made/file");
    let plan = host(&touched, Some("FileOrCreate")).expect("plans");
    assert_eq!(plan.files, vec![touched.clone()]);
    plan.materialize().expect("materializes");
    assert!(touched.is_file());
    host(&made, Some("DirectoryOrCreate"))
        .expect("plans")
        .materialize()
        .expect("materializes");
    assert!(made.is_dir());
    // An existing file of a `FileOrCreate` keeps its content.
    std::fs::write(&touched, "kept").expect("write");
    host(&touched, Some("FileOrCreate"))
        .expect("plans")
        .materialize()
        .expect("materializes");
    assert_eq!(std::fs::read_to_string(&touched).expect("read"), "kept");
}

#[test]
fn a_host_path_of_the_wrong_type_is_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("dir");
    let file = temp.path().join("file");
    let missing = temp.path().join("missing");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(&file, "x").expect("write");
    let host = |path: &Path, kind: &str| {
        planned(
            json!([{"name": "host", "hostPath": {"path": path, "type": kind}}]),
            json!([{"name": "host", "mountPath": "/host"}]),
        )
        .expect_err(kind)
    };
    let failed = |path: &Path, what: &str| {
        format!(
            "volume `host`: hostPath type check failed: {} is not {what}",
            path.display()
        )
    };
    assert_eq!(host(&file, "Directory"), failed(&file, "a directory"));
    assert_eq!(host(&missing, "Directory"), failed(&missing, "a directory"));
    assert_eq!(host(&dir, "File"), failed(&dir, "a file"));
    assert_eq!(host(&missing, "File"), failed(&missing, "a file"));
    for kind in ["Socket", "CharDevice", "BlockDevice"] {
        assert_eq!(host(&missing, kind), failed(&missing, &format!("a {kind}")));
        // What exists must also be of the type.
        assert_eq!(host(&file, kind), failed(&file, &format!("a {kind}")));
    }
    assert_eq!(
        host(&dir, "Folder"),
        "volume `host`: hostPath type `Folder` is not one of DirectoryOrCreate, Directory, \
         FileOrCreate, File, Socket, CharDevice, BlockDevice"
    );
    let relative = planned(
        json!([{"name": "host", "hostPath": {"path": "data"}}]),
        json!([{"name": "host", "mountPath": "/host"}]),
    )
    .expect_err("relative");
    assert_eq!(
        relative,
        "volume `host`: hostPath `data` is not an absolute path"
    );
}

#[test]
fn a_host_path_of_a_device_or_socket_type_is_accepted_when_it_is_one() {
    let device = Path::new("/dev/null");
    let plan = planned(
        json!([{"name": "host", "hostPath": {"path": device, "type": "CharDevice"}}]),
        json!([{"name": "host", "mountPath": "/dev/null"}]),
    )
    .expect("a character device");
    assert_eq!(plan.mounts, vec![bind("/dev/null", device, false)]);
    let temp = tempfile::tempdir().expect("tempdir");
    let socket = temp.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    planned(
        json!([{"name": "host", "hostPath": {"path": socket, "type": "Socket"}}]),
        json!([{"name": "host", "mountPath": "/run/socket"}]),
    )
    .expect("a socket");
}
