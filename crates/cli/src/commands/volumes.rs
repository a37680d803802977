//! `trainctl volumes`: the claims of this machine's jobs (their directories, sizes and users),
//! read from the state directory as `get` reads jobs; `volumes delete`; and the `--volume`
//! bindings of `run` and `server`, recorded before their jobs run.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use jiff::Timestamp;
use trainctl_local::claims::{self, VolumeBinding, user_label};
use trainctl_local::kubelet::volumes::claims_of;
use trainctl_local::store::{ClaimBinding, Store};

use crate::backend::local::claims::{backing, own_directory};
use crate::cli::{Format, VolumesAction, VolumesArgs, VolumesDeleteArgs, VolumesFormat};
use crate::output;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;
use crate::view::volumes::{self, ClaimRow, ClaimUser, Columns, DiskUsage};

/// The most entries a claim's directory is walked through to count its size: a dataset bound
/// with `--volume` may hold millions of files.
const MAX_ENTRIES: u64 = 1_000_000;

/// Lists the claims, or deletes some (`volumes delete`).
pub fn run(args: &VolumesArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    if let Some(VolumesAction::Delete(delete_args)) = &args.action {
        return delete(delete_args, state);
    }
    let store = Store::open(&state_dir(state)?)?;
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let scope = (!args.all_namespaces).then_some(namespace);
    let rows = known_claims(&store, scope)?;
    match args.output {
        Some(VolumesFormat::Json) => output::print(&volumes::document(&rows), Format::Json)?,
        Some(VolumesFormat::Yaml) => output::print(&volumes::document(&rows), Format::Yaml)?,
        None | Some(VolumesFormat::Wide) if rows.is_empty() => match scope {
            Some(namespace) => eprintln!("No resources found in {namespace} namespace."),
            None => eprintln!("No resources found"),
        },
        None | Some(VolumesFormat::Wide) => {
            let columns = Columns {
                with_namespace: args.all_namespaces,
                wide: args.output == Some(VolumesFormat::Wide),
            };
            print!(
                "{}",
                volumes::table(&rows, columns, Timestamp::now()).render()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Records the `--volume` bindings of `run` or `server` (a claim that names no namespace in
/// `namespace`), and says on stderr each claim whose directory changed; refused, nothing
/// recorded, while a job that has not finished mounts a claim from another directory.
pub(super) fn bind_flags(
    store: &mut Store,
    bindings: &[VolumeBinding],
    namespace: &str,
) -> anyhow::Result<()> {
    let targets: Vec<_> = bindings
        .iter()
        .map(|binding| binding.target(namespace))
        .collect();
    for bound in claims::bind(store, &targets, Timestamp::now())? {
        if let Some(previous) = bound.previous {
            eprintln!(
                "claim {}/{}: bound to {} (was {})",
                bound.namespace,
                bound.claim,
                bound.path.display(),
                previous.display()
            );
        }
    }
    Ok(())
}

/// What is known of a claim before it is shown.
#[derive(Default)]
struct Known {
    binding: Option<ClaimBinding>,
    used_by: Vec<ClaimUser>,
}

/// Every claim of `scope` (every namespace when `None`): those bound, those with a directory
/// of their own, and those that a recorded job mounts; by namespace, then name.
fn known_claims(store: &Store, scope: Option<&str>) -> anyhow::Result<Vec<ClaimRow>> {
    let mut known: BTreeMap<(String, String), Known> = BTreeMap::new();
    for binding in store.claim_bindings(scope)? {
        let key = (binding.namespace.clone(), binding.name.clone());
        known.entry(key).or_default().binding = Some(binding);
    }
    for key in own_directories(&store.claims_dir(), scope)? {
        known.entry(key).or_default();
    }
    for record in store.jobs(scope, None)? {
        for claim in claims_of(&record.job) {
            let key = (record.namespace.clone(), claim);
            known.entry(key).or_default().used_by.push(ClaimUser {
                kind: record.kind,
                name: record.name.clone(),
                state: record.state().to_owned(),
            });
        }
    }
    Ok(known
        .into_iter()
        .map(|((namespace, name), known)| {
            let backing = backing(store, known.binding.as_ref(), &namespace, &name);
            let since = match &known.binding {
                Some(binding) => Some(binding.bound_at),
                None => made_at(backing.path()),
            };
            ClaimRow {
                usage: disk_usage(backing.path()),
                namespace,
                name,
                backing,
                since,
                used_by: known.used_by,
            }
        })
        .collect())
}

/// The claims with a directory of their own under `claims_dir` (`<namespace>/<claim>`), of
/// `scope` (every namespace when `None`).
fn own_directories(
    claims_dir: &Path,
    scope: Option<&str>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut claims = Vec::new();
    for (namespace, dir) in subdirectories(claims_dir)? {
        if scope.is_some_and(|scope| scope != namespace) {
            continue;
        }
        for (claim, _) in subdirectories(&dir)? {
            claims.push((namespace.clone(), claim));
        }
    }
    Ok(claims)
}

/// The directories in `dir` (not links to one), by name; none when `dir` does not exist.
fn subdirectories(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
        if entry.file_type().is_ok_and(|kind| kind.is_dir())
            && let Ok(name) = entry.file_name().into_string()
        {
            found.push((name, entry.path()));
        }
    }
    Ok(found)
}

/// When the directory `path` was made, where the file system says.
fn made_at(path: &Path) -> Option<Timestamp> {
    let made = fs::metadata(path).ok()?.created().ok()?;
    Timestamp::try_from(made).ok()
}

/// What the directory `root` holds: its files' sizes added up, through its subdirectories but
/// never through a link, over at most [`MAX_ENTRIES`] entries; `None` when it is not a
/// directory.
fn disk_usage(root: &Path) -> Option<DiskUsage> {
    if !fs::metadata(root).ok()?.is_dir() {
        return None;
    }
    let mut usage = DiskUsage {
        bytes: 0,
        files: 0,
        complete: true,
    };
    let mut entries: u64 = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(read) = fs::read_dir(&dir) else {
            usage.complete = false;
            continue;
        };
        for entry in read {
            let Ok(entry) = entry else {
                usage.complete = false;
                continue;
            };
            entries += 1;
            if entries > MAX_ENTRIES {
                usage.complete = false;
                return Some(usage);
            }
            // Neither `file_type` nor `metadata` of a directory entry follows a link.
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(kind) if kind.is_file() => {
                    usage.files += 1;
                    usage.bytes += entry.metadata().map_or(0, |metadata| metadata.len());
                }
                Ok(_) => {}
                Err(_) => usage.complete = false,
            }
        }
    }
    Some(usage)
}

/// Deletes each claim named; exit 1 when one is not found or is in use (the others are
/// deleted).
fn delete(args: &VolumesDeleteArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(&state_dir(state)?)?;
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let mut code = ExitCode::SUCCESS;
    for claim in &args.claims {
        match delete_claim(&mut store, namespace, claim) {
            Ok(done) => println!("persistentvolumeclaim \"{claim}\" deleted ({done})"),
            Err(error) => {
                eprintln!("error: {error:#}");
                code = ExitCode::FAILURE;
            }
        }
    }
    Ok(code)
}

/// Deletes the claim `claim` of `namespace`: unbinds it, or removes its own directory; what was
/// done, in words. Refused while a job that has not finished mounts it.
fn delete_claim(store: &mut Store, namespace: &str, claim: &str) -> anyhow::Result<String> {
    let binding = store.claim_binding(namespace, claim)?;
    let own = own_directory(store, namespace, claim);
    let own_exists = fs::symlink_metadata(&own).is_ok_and(|metadata| metadata.is_dir());
    if binding.is_none() && !own_exists {
        bail!("persistentvolumeclaim \"{claim}\" not found in namespace \"{namespace}\"");
    }
    let users = claims::users(store, namespace, claim)?;
    if !users.is_empty() {
        let users: Vec<String> = users.iter().map(user_label).collect();
        bail!(
            "persistentvolumeclaim \"{claim}\" is used by {}, which has not finished; wait until \
             it has, or delete it first",
            users.join(", ")
        );
    }
    if let Some(binding) = binding {
        store.unbind_claim(namespace, claim)?;
        return Ok(format!(
            "unbound; its directory {} was left as it is",
            binding.path.display()
        ));
    }
    fs::remove_dir_all(&own).with_context(|| format!("cannot remove {}", own.display()))?;
    // The namespace's directory goes with its last claim.
    if let Some(parent) = own.parent() {
        let _ = fs::remove_dir(parent);
    }
    Ok(format!("its directory {} was removed", own.display()))
}
