use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _, symlink};

use super::*;

/// The uid the tests give files away to (`nobody`).
const OTHER_UID: u32 = 65534;

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, Permissions::from_mode(mode)).expect("chmod");
}

/// Gives `path` to another user; `false` (the test cannot run) when this process may not.
fn give_away(path: &Path) -> bool {
    match std::os::unix::fs::lchown(path, Some(OTHER_UID), Some(OTHER_UID)) {
        Ok(()) => true,
        Err(error) => {
            eprintln!("skipped: giving a file to uid {OTHER_UID} needs root ({error})");
            false
        }
    }
}

#[test]
fn a_missing_state_dir_and_its_parents_are_created_0700() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("a").join("state");
    assert_eq!(prepare(&dir).expect("prepare"), None);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&temp.path().join("a")), 0o700);
}

#[test]
fn an_open_state_dir_is_restricted_and_said_so_once() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("state");
    fs::create_dir(&dir).expect("mkdir");
    set_mode(&dir, 0o755);
    let restricted = prepare(&dir).expect("prepare").expect("restricted");
    assert_eq!(
        restricted,
        Restricted {
            dir: dir.clone(),
            was: 0o755
        }
    );
    assert_eq!(
        restricted.to_string(),
        format!(
            "the state directory {} was open to other users (mode 755): restricted it to you \
             (mode 700)",
            dir.display()
        )
    );
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(prepare(&dir).expect("prepare again"), None);
}

#[test]
fn a_world_writable_sticky_state_dir_is_restricted() {
    let temp = tempfile::tempdir().expect("tempdir");
    set_mode(temp.path(), 0o1777);
    let restricted = prepare(temp.path()).expect("prepare").expect("restricted");
    assert_eq!(restricted.was, 0o777);
    assert_eq!(mode(temp.path()), 0o700);
}

#[test]
fn a_state_dir_of_another_user_is_refused_and_left_alone() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("theirs");
    fs::create_dir(&dir).expect("mkdir");
    set_mode(&dir, 0o755);
    if !give_away(&dir) {
        return;
    }
    let error = prepare(&dir).expect_err("another user's directory is refused");
    let me = user_name(geteuid());
    assert_eq!(
        error.to_string(),
        format!(
            "the state directory {} is owned by {}, not by you ({me}): refusing to use it, since \
             its owner could read and change what trainctl keeps there (Secrets in the database \
             and logs, the server's token, the socket that starts replicas as you); use a \
             directory of your own (--state-dir or TRAINCTL_HOME), or have {} give it to you \
             (chown)",
            dir.display(),
            user_name(Uid::from_raw(OTHER_UID)),
            user_name(Uid::from_raw(OTHER_UID)),
        )
    );
    assert_eq!(mode(&dir), 0o755, "another user's directory is not changed");
}

#[test]
fn a_file_in_place_of_the_state_dir_is_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let file = temp.path().join("state");
    fs::write(&file, "").expect("write");
    let error = prepare(&file).expect_err("not a directory");
    assert!(
        error.to_string().starts_with(&format!(
            "cannot create the state directory {}: ",
            file.display()
        )),
        "{error}"
    );
}

#[test]
fn private_files_are_0600_and_never_follow_a_link() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("file");
    drop(create_private(&path).expect("create"));
    assert_eq!(mode(&path), 0o600);
    let again = create_private(&path).expect_err("exists");
    assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);

    let target = temp.path().join("target");
    let link = temp.path().join("link");
    symlink(&target, &link).expect("symlink");
    let linked = create_private(&link).expect_err("a link is not followed");
    assert_eq!(linked.kind(), io::ErrorKind::AlreadyExists);
    assert!(!target.exists(), "nothing was created through the link");
}

#[test]
fn write_private_writes_0600_through_a_temporary_file() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("server.token");
    write_private(&path, b"first").expect("write");
    write_private(&path, b"second").expect("overwrite");
    assert_eq!(fs::read(&path).expect("read"), b"second");
    assert_eq!(mode(&path), 0o600);
    let names: Vec<_> = fs::read_dir(temp.path())
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["server.token"], "no temporary file is left");
}

#[test]
fn a_stale_temporary_file_of_ours_is_replaced() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("server.json");
    let stale = temp
        .path()
        .join(format!("server.json.{}.tmp", std::process::id()));
    fs::write(&stale, "stale, and longer than what replaces it").expect("write");
    set_mode(&stale, 0o666);
    write_private(&path, b"{}").expect("write");
    assert_eq!(fs::read(&path).expect("read"), b"{}");
    assert_eq!(mode(&path), 0o600);
    assert!(!stale.exists());
}

#[test]
fn a_temporary_file_of_another_user_is_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("server.token");
    let planted = temp
        .path()
        .join(format!("server.token.{}.tmp", std::process::id()));
    fs::write(&planted, "planted").expect("write");
    set_mode(&planted, 0o666);
    if !give_away(&planted) {
        return;
    }
    let error = write_private(&path, b"secret").expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "{} is in the way: it is a file owned by {}, not a temporary file of yours; remove it",
            planted.display(),
            user_name(Uid::from_raw(OTHER_UID))
        )
    );
    assert!(!path.exists(), "no token was written");
    assert_eq!(fs::read(&planted).expect("read"), b"planted");
    assert_eq!(fs::metadata(&planted).expect("stat").uid(), OTHER_UID);
}

#[test]
fn a_temporary_link_is_refused_and_not_followed() {
    let temp = tempfile::tempdir().expect("tempdir");
    let path = temp.path().join("server.token");
    let elsewhere = temp.path().join("elsewhere");
    fs::write(&elsewhere, "theirs").expect("write");
    let planted = temp
        .path()
        .join(format!("server.token.{}.tmp", std::process::id()));
    symlink(&elsewhere, &planted).expect("symlink");
    let error = write_private(&path, b"secret").expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "{} is in the way: it is a symbolic link owned by {}, not a temporary file of \
             yours; remove it",
            planted.display(),
            user_name(geteuid())
        )
    );
    assert_eq!(fs::read(&elsewhere).expect("read"), b"theirs");
    assert!(!path.exists());
}

#[test]
fn restrict_file_tightens_only_what_others_may_read() {
    let temp = tempfile::tempdir().expect("tempdir");
    let open = temp.path().join("open");
    fs::write(&open, "").expect("write");
    set_mode(&open, 0o644);
    restrict_file(&open).expect("restrict");
    assert_eq!(mode(&open), 0o600);
    let read_only = temp.path().join("read-only");
    fs::write(&read_only, "").expect("write");
    set_mode(&read_only, 0o400);
    restrict_file(&read_only).expect("restrict");
    assert_eq!(mode(&read_only), 0o400, "a private file is left as it is");
    restrict_file(&temp.path().join("missing")).expect("a missing file is fine");
}

#[test]
fn the_reserve_does_not_compress() {
    let block = incompressible_block();
    assert_eq!(block.len(), RESERVE_BLOCK);
    let mut distinct = block.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 256, "every byte value occurs");
    assert_ne!(block[..RESERVE_BLOCK / 2], block[RESERVE_BLOCK / 2..]);
}
