//! The floor of the cluster benchmark (`scripts/bench-cluster`): a plain client of our own that
//! creates the Pods and Services of the TFJobs already in a namespace, as `trainctl operator`
//! would, with no operator logic and no rate limit, a fixed number of requests in flight.
//!
//! It lists the namespace's TFJobs and renders each one's objects with the engine, as the
//! operator does (`BuildOptions::default()`: cluster addressing, no gang scheduling), so the
//! objects carry the jobs' owner references and the garbage collector keeps them. Then:
//!
//! 1. prints `ready JOBS SERVICES PODS` on stdout and waits for a line on stdin (the benchmark
//!    samples its memory and starts its clock then);
//! 2. creates every object with a `POST` (field manager `trainctl`), job by job, each job's
//!    services before its pods (the operator's order), `--in-flight` requests at once;
//! 3. prints `done SECONDS CREATED EXISTING FAILED` (its own clock) and waits for stdin to
//!    close, so that its memory and CPU can be read after the work; exits 1 if a creation failed.
//!
//! The cluster comes from `KUBECONFIG`, as kubectl's.

use std::io::{BufRead as _, Read as _, Write as _};
use std::time::Instant;

use clap::Parser;
use futures_util::StreamExt as _;
use futures_util::future::Either;
use futures_util::stream;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use trainctl_api::JobKind;
use trainctl_engine::objects::{BuildOptions, build_objects};
use trainctl_operator::{FIELD_MANAGER, PARALLELISM, job};

/// Creates the Pods and Services of a namespace's TFJobs, a fixed number in flight.
#[derive(Debug, Parser)]
struct Args {
    /// The namespace whose TFJobs to create the children of.
    #[arg(long)]
    namespace: String,
    /// Creations in flight at once (default: the operator's per-job parallelism).
    #[arg(long, default_value_t = PARALLELISM, value_parser = clap::value_parser!(usize))]
    in_flight: usize,
}

/// How one creation went.
enum Created {
    /// The object was created.
    New,
    /// The object was there already.
    Existing,
    /// The creation failed.
    Failed(String),
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let args = Args::parse();
    let client = Client::try_default()
        .await
        .map_err(|error| format!("no cluster (KUBECONFIG): {error}"))?;
    let jobs_api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &args.namespace,
        &job::api_resource(JobKind::TFJob),
    );
    let mut listed = jobs_api
        .list(&ListParams::default())
        .await
        .map_err(|error| format!("cannot list the TFJobs of {}: {error}", args.namespace))?
        .items;
    listed.sort_by_key(ResourceExt::name_any);
    let options = BuildOptions::default();
    let (mut services, mut pods) = (0, 0);
    let mut objects = Vec::new();
    for object in &listed {
        let training_job = job::read(JobKind::TFJob, object)
            .map_err(|error| format!("TFJob {}: {error}", object.name_any()))?;
        let built = build_objects(&training_job, &options);
        services += built.services.len();
        pods += built.pods.len();
        objects.extend(built.services.into_iter().map(Either::Left));
        objects.extend(built.pods.into_iter().map(Either::Right));
    }
    say(&format!("ready {} {services} {pods}", listed.len()));
    let mut go = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut go)
        .map_err(|error| format!("stdin: {error}"))?;

    let started = Instant::now();
    let service_api: Api<Service> = Api::namespaced(client.clone(), &args.namespace);
    let pod_api: Api<Pod> = Api::namespaced(client, &args.namespace);
    let outcomes: Vec<Created> = stream::iter(objects)
        .map(|object| match object {
            Either::Left(service) => Either::Left(create(&service_api, service)),
            Either::Right(pod) => Either::Right(create(&pod_api, pod)),
        })
        .buffer_unordered(args.in_flight.max(1))
        .collect()
        .await;
    let seconds = started.elapsed().as_secs_f64();
    let count = |wanted: fn(&Created) -> bool| outcomes.iter().filter(|c| wanted(c)).count();
    let failed = count(|c| matches!(c, Created::Failed(_)));
    say(&format!(
        "done {seconds:.3} {} {} {failed}",
        count(|c| matches!(c, Created::New)),
        count(|c| matches!(c, Created::Existing)),
    ));
    if let Some(Created::Failed(error)) = outcomes.iter().find(|c| matches!(c, Created::Failed(_)))
    {
        eprintln!("bench-floor: {failed} creations failed, the first with: {error}");
    }
    // Stays until the benchmark has read its memory and CPU, and closes stdin.
    let _ = std::io::stdin().lock().read_to_end(&mut Vec::new());
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} creations failed"))
    }
}

/// Creates `object` as the operator does: a `POST` with its field manager.
async fn create<K>(api: &Api<K>, object: K) -> Created
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let params = PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    };
    match api.create(&params, &object).await {
        Ok(_) => Created::New,
        Err(kube::Error::Api(status)) if status.is_already_exists() => Created::Existing,
        Err(error) => Created::Failed(format!("{} {}: {error}", K::kind(&()), object.name_any())),
    }
}

/// One line on stdout, flushed at once (the benchmark reads it through a pipe).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the benchmark is gone; the next read of stdin ends the process.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
