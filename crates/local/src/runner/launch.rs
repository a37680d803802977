//! From a job to what each replica slot runs: the engine's pod (with the env it injects for the
//! loopback addresses), the kubelet's env resolution, the GPUs admission gave it, and the command
//! looked up on this machine.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use trainctl_api::manifest::Companion;
use trainctl_api::{ReplicaType, TrainingJob};
use trainctl_engine::addressing::Addressing;
use trainctl_engine::objects::{BuildOptions, build_pods, replica_slots};
use trainctl_engine::reconcile::ReplicaSlot;

use crate::kubelet::admission::Allocation;
use crate::kubelet::env::{EnvContext, resolve_env};
use crate::kubelet::resources::{ContainerLimits, InvalidResource, NodeCapacity, ReplicaNeeds};
use crate::kubelet::volumes::{self, ClaimPaths, ReplicaVolumes, VolumeContext, VolumeDirs};
use crate::process::Launch;
use crate::process::cgroup::Limits;
use crate::process::logs::{Console, LogLimit};
use crate::process::mounts::{self, Mounts};
use crate::runner::pod::PodRestart;
use trainctl_api::expansion::expand_command_and_args;

/// Kubernetes' default `terminationGracePeriodSeconds`.
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// What one replica slot runs.
#[derive(Debug, Clone)]
pub struct PreparedReplica {
    /// How to start its process.
    pub launch: Launch,
    /// The pod-level restart policy.
    pub policy: PodRestart,
    /// Its port on the loopback interface, if it has one.
    pub port: Option<u16>,
    /// The GPUs it sees.
    pub gpus: Vec<u32>,
    /// Its volumes: what backs them, what must be made before it starts.
    pub volumes: ReplicaVolumes,
}

/// Why a replica cannot run on this machine as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{replica}: {message}")]
pub struct LaunchError {
    /// The replica, e.g. `worker-1`.
    pub replica: String,
    /// Its type.
    pub replica_type: ReplicaType,
    /// What is wrong and what would be right.
    pub message: String,
}

/// The most replicas' problems a job's message names; the others are counted (a job of 7,500
/// replicas whose `TF_CONFIG` is too large has 7,500 alike).
const NAMED_PROBLEMS: usize = 3;

/// Why a job's replicas cannot run on this machine as written: the first replicas' problems,
/// and how many more replicas have one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrunnable {
    /// The first [`NAMED_PROBLEMS`] replicas' problems.
    pub errors: Vec<LaunchError>,
    /// How many more replicas cannot run.
    pub more: usize,
    /// The named problems without their replica's pod name, to know a problem met again.
    generic: Vec<String>,
}

impl Unrunnable {
    /// Whether a replica named already has the problem `message` of the replica `pod` (its
    /// messages name their own replica's pod).
    fn names_alike(&self, message: &str, pod: &str) -> bool {
        self.generic.contains(&message.replace(pod, ""))
    }
}

impl std::fmt::Display for Unrunnable {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (n, error) in self.errors.iter().enumerate() {
            if n > 0 {
                out.write_str("; ")?;
            }
            write!(out, "{error}")?;
        }
        match self.more {
            0 => Ok(()),
            1 => out.write_str("; and 1 more replica"),
            more => write!(out, "; and {more} more replicas"),
        }
    }
}

/// Where and with what a job's replicas are prepared.
#[derive(Debug, Clone, Copy)]
pub struct LaunchContext<'a> {
    /// The ConfigMaps and Secrets submitted with the job.
    pub companions: &'a [Companion],
    /// This machine.
    pub capacity: &'a NodeCapacity,
    /// What `spec.nodeName` reports.
    pub node_name: &'a str,
    /// The directory of the job's log files.
    pub logs_dir: &'a Path,
    /// Where prefixes are coloured, or not.
    pub console: &'a Console,
    /// How large each replica's log may grow.
    pub log_limit: LogLimit,
    /// Where the replicas' volumes are; `None` when volumes are left out (`--no-volumes`).
    pub volumes: Option<VolumeSetup<'a>>,
    /// The directory offered for TensorBoard event files, in [`TENSORBOARD_DIR_ENV`].
    pub tensorboard_dir: &'a Path,
}

/// The variable that gives each replica the job's directory for TensorBoard event files
/// (`tf.keras.callbacks.TensorBoard(log_dir=os.environ["TRAINCTL_TENSORBOARD_DIR"])`), where
/// trainctl looks for the job's training curves; one the manifest sets is left as it is.
pub const TENSORBOARD_DIR_ENV: &str = "TRAINCTL_TENSORBOARD_DIR";

/// Where a job's volumes are had.
#[derive(Clone, Copy)]
pub struct VolumeSetup<'a> {
    /// The claims bound to a directory of the user's.
    pub bindings: &'a dyn ClaimPaths,
    /// The claims' own directories ([`crate::store::Store::claims_dir`]).
    pub claims_dir: &'a Path,
    /// The job's replicas' directories ([`crate::store::Store::pods_dir`]).
    pub pods_dir: &'a Path,
    /// Where a replica's new root is put together ([`crate::store::Store::staging_dir`]).
    pub staging: &'a Path,
}

impl std::fmt::Debug for VolumeSetup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolumeSetup")
            .field("claims_dir", &self.claims_dir)
            .field("pods_dir", &self.pods_dir)
            .finish_non_exhaustive()
    }
}

/// Prepares every slot of `job` with these loopback `ports` and GPU `allocation`; collects every
/// replica's problem rather than stopping at the first.
pub fn prepare(
    job: &TrainingJob,
    ports: &BTreeMap<(ReplicaType, i32), u16>,
    allocation: &Allocation,
    context: &LaunchContext<'_>,
) -> Result<BTreeMap<ReplicaSlot, PreparedReplica>, Unrunnable> {
    let options = BuildOptions {
        addressing: Addressing::Loopback {
            ports: ports.clone(),
        },
        ..BuildOptions::default()
    };
    let slot_of_name: BTreeMap<String, ReplicaSlot> = replica_slots(job)
        .into_iter()
        .map(|(replica_type, index)| {
            let slot = ReplicaSlot::new(replica_type, index);
            (slot.name(job.name()), slot)
        })
        .collect();
    let width = slot_of_name
        .values()
        .map(|slot| slot.to_string().len())
        .max()
        .unwrap_or(0);
    let mut prepared = BTreeMap::new();
    let mut unrunnable = Unrunnable {
        errors: Vec::new(),
        more: 0,
        generic: Vec::new(),
    };
    // One pod at a time: together they can be gigabytes (each names every replica).
    for (n, pod) in build_pods(job, &options).enumerate() {
        let Some(slot) = pod
            .metadata
            .name
            .as_ref()
            .and_then(|name| slot_of_name.get(name))
        else {
            continue;
        };
        let key = (slot.replica_type.clone(), slot.index);
        let gpus = allocation.gpus.get(&key).cloned().unwrap_or_default();
        let prefix = context.console.prefix(&slot.to_string(), width, n);
        match prepare_one(job, slot, &pod, &gpus, allocation, prefix, context) {
            // Once one cannot run, the job does not: the others are only checked.
            Ok(mut replica) if unrunnable.errors.is_empty() => {
                replica.port = ports.get(&key).copied();
                prepared.insert(slot.clone(), replica);
            }
            Ok(_) => {}
            // The same problem as a replica named already: counted, not repeated.
            Err(message) if unrunnable.names_alike(&message, &slot.name(job.name())) => {
                unrunnable.more += 1;
            }
            Err(message) if unrunnable.errors.len() < NAMED_PROBLEMS => {
                prepared.clear();
                let generic = message.replace(&slot.name(job.name()), "");
                unrunnable.generic.push(generic);
                unrunnable.errors.push(LaunchError {
                    replica: slot.to_string(),
                    replica_type: slot.replica_type.clone(),
                    message,
                });
            }
            Err(_) => unrunnable.more += 1,
        }
    }
    if unrunnable.errors.is_empty() {
        Ok(prepared)
    } else {
        Err(unrunnable)
    }
}

fn prepare_one(
    job: &TrainingJob,
    slot: &ReplicaSlot,
    pod: &Pod,
    gpus: &[u32],
    allocation: &Allocation,
    prefix: String,
    context: &LaunchContext<'_>,
) -> Result<PreparedReplica, String> {
    let spec = pod.spec.as_ref().ok_or("the pod has no spec")?;
    let container = job
        .kind()
        .framework_container(&spec.containers)
        .ok_or("the pod has no containers")?;
    let env_context = EnvContext {
        pod,
        node_name: context.node_name,
        capacity: context.capacity,
        companions: context.companions,
    };
    let mut env = resolve_env(&env_context, container).map_err(|error| error.to_string())?;
    let key = (slot.replica_type.clone(), slot.index);
    for (name, value) in allocation.device_env(&key) {
        env.retain(|(existing, _)| existing != name);
        env.push((name.to_owned(), value));
    }
    if !env.iter().any(|(name, _)| name == TENSORBOARD_DIR_ENV) {
        let dir = context.tensorboard_dir.to_string_lossy().into_owned();
        env.push((TENSORBOARD_DIR_ENV.to_owned(), dir));
    }
    let argv = expand_command_and_args(container, &env)?;
    let volumes = match &context.volumes {
        Some(setup) => {
            let replica_dir = setup.pods_dir.join(slot.to_string());
            let volume_context = VolumeContext {
                namespace: job.namespace(),
                companions: context.companions,
                claims: setup.bindings,
                dirs: VolumeDirs {
                    claims: setup.claims_dir,
                    replica: &replica_dir,
                },
            };
            volumes::plan(spec, container, &env, &volume_context)?
        }
        None => ReplicaVolumes::default(),
    };
    let working_dir = container.working_dir.as_ref().map(PathBuf::from);
    check_files(container, &argv, &env, working_dir.as_deref(), &volumes)?;
    let mounts = match (&context.volumes, volumes.mounts.is_empty()) {
        (Some(setup), false) => Some(Mounts {
            mounts: volumes.mounts.clone(),
            staging: setup.staging.to_path_buf(),
            working_dir: mounts::working_dir(working_dir.as_deref())
                .map_err(|error| format!("no working directory: {error}"))?,
        }),
        _ => None,
    };
    let grace = spec
        .termination_grace_period_seconds
        .unwrap_or(DEFAULT_GRACE_SECONDS)
        .max(0)
        .unsigned_abs();
    let policy = PodRestart::parse(spec.restart_policy.as_deref());
    let limits = ContainerLimits::of(container).map_err(|error| error.to_string())?;
    Ok(PreparedReplica {
        launch: Launch {
            argv,
            env,
            working_dir,
            grace: Duration::from_secs(grace),
            log_path: context.logs_dir.join(format!("{slot}.log")),
            log_limit: context.log_limit,
            prefix,
            mounts,
            limits: Limits::from(limits),
        },
        policy,
        port: None,
        gpus: gpus.to_vec(),
        volumes,
    })
}

/// Checks that the working directory and the command exist here, but for what is in a volume,
/// which is there only once the volumes are made (inside the replica's namespace).
fn check_files(
    container: &Container,
    argv: &[String],
    env: &[(String, String)],
    working_dir: Option<&Path>,
    volumes: &ReplicaVolumes,
) -> Result<(), String> {
    let in_volume = |path: &Path| {
        volumes
            .mounts
            .iter()
            .any(|mount| path.starts_with(&mount.target))
    };
    if let Some(dir) = working_dir
        && !in_volume(dir)
        && !dir.is_dir()
    {
        return Err(format!(
            "workingDir `{}` is not a directory on this machine (the container image's files are not available locally)",
            dir.display()
        ));
    }
    // A program by path in a volume, or by name on a `PATH` that goes through one (an
    // environment mounted at `/opt/conda`), is found only inside the replica's namespace.
    let path_in_volume = env
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .is_some_and(|(_, path)| std::env::split_paths(path).any(|dir| in_volume(&dir)));
    let program_in_volume = argv.first().is_some_and(|program| {
        let cwd = mounts::working_dir(working_dir).unwrap_or_default();
        if program.contains('/') {
            in_volume(&cwd.join(program))
        } else {
            path_in_volume
        }
    });
    if !program_in_volume {
        check_command(
            container,
            argv,
            env,
            working_dir.filter(|dir| !in_volume(dir)),
        )?;
    }
    Ok(())
}

/// Checks that the command exists here: a path must name a file, a bare name must be on the
/// `PATH` the replica will have.
fn check_command(
    container: &Container,
    argv: &[String],
    env: &[(String, String)],
    working_dir: Option<&Path>,
) -> Result<(), String> {
    let image = container
        .image
        .as_deref()
        .map(|image| format!(" of image `{image}`"))
        .unwrap_or_default();
    let Some(program) = argv.first().filter(|program| !program.is_empty()) else {
        return Err(format!(
            "container `{}` has no `command`: locally the entrypoint{image} is not available; set `command` (and `args`)",
            container.name
        ));
    };
    let cwd = match working_dir {
        Some(dir) => dir.to_path_buf(),
        None => {
            std::env::current_dir().map_err(|error| format!("no working directory: {error}"))?
        }
    };
    let path: Option<OsString> = env
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.into())
        .or_else(|| std::env::var_os("PATH"));
    which::which_in(program, path, cwd).map(drop).map_err(|_| {
        format!(
            "command `{program}` not found on this machine (the container image's files{image} are not available locally; install it here or put it on PATH)"
        )
    })
}

/// What each slot of `job` needs, from its replica templates.
pub fn needs(job: &TrainingJob) -> Result<Vec<ReplicaNeeds>, LaunchError> {
    let mut all = Vec::new();
    for (replica_type, spec) in job.replica_specs().iter() {
        let Some(pod_spec) = spec.template.spec.as_ref() else {
            continue;
        };
        for index in 0..spec.replicas_or_default() {
            let needs = ReplicaNeeds::of_pod(replica_type.clone(), index, pod_spec).map_err(
                |error: InvalidResource| LaunchError {
                    replica: ReplicaSlot::new(replica_type.clone(), index).to_string(),
                    replica_type: replica_type.clone(),
                    message: error.to_string(),
                },
            )?;
            all.push(needs);
        }
    }
    Ok(all)
}

/// What each replica type runs that is not run locally: containers besides the main one and init
/// containers, as `(replica type, container names)`.
#[must_use]
pub fn not_run_locally(job: &TrainingJob) -> Vec<(ReplicaType, Vec<String>)> {
    let mut skipped = Vec::new();
    for (replica_type, spec) in job.replica_specs().iter() {
        let Some(pod_spec) = spec.template.spec.as_ref() else {
            continue;
        };
        let main = job
            .kind()
            .framework_container(&pod_spec.containers)
            .map(|c| c.name.clone());
        let names: Vec<String> = pod_spec
            .init_containers
            .iter()
            .flatten()
            .chain(&pod_spec.containers)
            .map(|container| container.name.clone())
            .filter(|name| Some(name) != main.as_ref())
            .collect();
        if !names.is_empty() {
            skipped.push((replica_type.clone(), names));
        }
    }
    skipped
}

/// The images the job's containers name, which are not used locally.
#[must_use]
pub fn images(job: &TrainingJob) -> BTreeSet<String> {
    job.replica_specs()
        .values()
        .filter_map(|spec| spec.template.spec.as_ref())
        .flat_map(|spec| &spec.containers)
        .filter_map(|container| container.image.clone())
        .collect()
}

/// Programs that take the script they run as their first argument that is not an option.
const INTERPRETERS: [&str; 10] = [
    "python",
    "bash",
    "sh",
    "node",
    "perl",
    "ruby",
    "Rscript",
    "julia",
    "torchrun",
    "deepspeed",
];

/// A script a replica type's interpreter runs that is not here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingScript {
    /// The replica type.
    pub replica_type: ReplicaType,
    /// The interpreter (`python`).
    pub program: String,
    /// The script, as the command names it.
    pub script: String,
    /// Where the replica starts, from which a relative script is looked for.
    pub working_dir: PathBuf,
}

/// What a script an interpreter runs ends with, to tell a relative script from an option's value
/// (`torchrun --nproc_per_node 2 train.py`).
const SCRIPT_EXTENSIONS: [&str; 8] = ["py", "sh", "bash", "js", "pl", "rb", "R", "jl"];

/// The scripts the job's replicas run that do not exist on this machine: for each replica
/// type, `(program, script)` when its main container runs an interpreter on a script that is not
/// here, by absolute path (`python /opt/model/train.py`: the image's files are not used locally)
/// or relative to its working directory, the container's `workingDir` or else this process's
/// (`python examples/python/train.py`, run from another directory). Such a replica would
/// start, fail, and restart for ever under `OnFailure`.
#[must_use]
pub fn missing_scripts(job: &TrainingJob) -> Vec<MissingScript> {
    let mut missing = Vec::new();
    for (replica_type, spec) in job.replica_specs().iter() {
        let Some(pod_spec) = spec.template.spec.as_ref() else {
            continue;
        };
        let Some(container) = job.kind().framework_container(&pod_spec.containers) else {
            continue;
        };
        let argv: Vec<&String> = container
            .command
            .iter()
            .flatten()
            .chain(container.args.iter().flatten())
            .collect();
        let Some((program, rest)) = argv.split_first() else {
            continue;
        };
        let name = Path::new(program.as_str())
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        // `python3.11` is a python.
        let interpreter = INTERPRETERS.iter().any(|known| {
            name.strip_prefix(known)
                .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
        });
        // `python -m module`, `bash -c 'text'`: what follows is no script.
        let script = rest
            .iter()
            .take_while(|arg| !matches!(arg.as_str(), "-m" | "-c"))
            .find(|arg| !arg.starts_with('-'));
        let Some(script) = script.filter(|_| interpreter) else {
            continue;
        };
        let path = Path::new(script.as_str());
        let looks_like_script = path.is_absolute()
            || path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| SCRIPT_EXTENSIONS.contains(&extension));
        let working_dir = container.working_dir.as_deref().map(Path::new);
        let seen_as = match working_dir {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        };
        // A script in a volume is there once the volumes are mounted.
        if looks_like_script
            && !in_volume(job, replica_type, &seen_as)
            && working_dir.is_none_or(|dir| !in_volume(job, replica_type, dir))
            && !seen_as.exists()
        {
            missing.push(MissingScript {
                replica_type: replica_type.clone(),
                program: (*program).clone(),
                script: (*script).clone(),
                working_dir: working_dir.map_or_else(
                    || std::env::current_dir().unwrap_or_default(),
                    Path::to_path_buf,
                ),
            });
        }
    }
    missing
}

/// Whether `path`, as a replica of `replica_type` sees it, is in one of its volumes.
fn in_volume(job: &TrainingJob, replica_type: &ReplicaType, path: &Path) -> bool {
    let Some(pod) = job
        .replica_specs()
        .get(replica_type)
        .and_then(|spec| spec.template.spec.as_ref())
    else {
        return false;
    };
    job.kind()
        .framework_container(&pod.containers)
        .is_some_and(|container| {
            container
                .volume_mounts
                .iter()
                .flatten()
                .any(|mount| path.starts_with(&mount.mount_path))
        })
}
