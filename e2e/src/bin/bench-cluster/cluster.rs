//! The control plane: `scripts/cluster up` and `down` for each measurement, the CRDs, and the
//! namespaces the subjects need.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config, ResourceExt as _};
use tokio::process::Command;

/// The control plane's processes, as `scripts/cluster` names them.
const COMPONENTS: [&str; 5] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
];

/// Where the upstream operator looks for its Secret (`MY_POD_NAMESPACE`).
pub const UPSTREAM_NAMESPACE: &str = "kubeflow";

/// The Secret upstream's certificate rotator fills (its `--webhook-secret-name` default).
const UPSTREAM_SECRET: &str = "training-operator-webhook-cert";

/// How long the CRDs and the namespace's `ServiceAccount` may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Takes down what a previous run left, starts a fresh control plane and returns its
/// kubeconfig. `scripts/cluster`'s progress goes to `OUT/cluster.log`.
pub async fn fresh(script: &Path, out: &Path) -> Result<PathBuf> {
    down(script, out).await?;
    let output = cluster(script, "up", out, Stdio::piped()).await?;
    let stdout = String::from_utf8_lossy(&output);
    let kubeconfig = stdout
        .lines()
        .last()
        .context("scripts/cluster up printed no kubeconfig")?;
    Ok(PathBuf::from(kubeconfig.trim()))
}

/// Stops the control plane and removes its folder.
pub async fn down(script: &Path, out: &Path) -> Result<()> {
    cluster(script, "down", out, Stdio::null()).await.map(drop)
}

/// Runs `scripts/cluster ACTION`, its stderr appended to `OUT/cluster.log`; its stdout.
async fn cluster(script: &Path, action: &str, out: &Path, stdout: Stdio) -> Result<Vec<u8>> {
    let log_path = out.join("cluster.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let output = Command::new(script)
        .arg(action)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(log)
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !output.status.success() {
        bail!(
            "scripts/cluster {action} failed ({}): see {}",
            output.status,
            log_path.display()
        );
    }
    Ok(output.stdout)
}

/// A client of the cluster as the kubeconfig says (the admin's).
pub async fn client(kubeconfig: &Path) -> Result<Client> {
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("cannot read {}", kubeconfig.display()))?;
    let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Installs the CRDs of the `*.yaml` files in `dir` (server-side apply) and waits until each
/// is established.
pub async fn install_crds(client: &Client, dir: &Path) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    anyhow::ensure!(!files.is_empty(), "no CRDs in {}", dir.display());
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("bench-cluster").force();
    let mut names = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
            .with_context(|| format!("{} is not a CRD", file.display()))?;
        let name = crd.name_any();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("cannot install {}", file.display()))?;
        names.push(name);
    }
    for name in names {
        tokio::time::timeout(
            SETUP_TIMEOUT,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .with_context(|| format!("the CRD {name} was not established"))??;
    }
    Ok(())
}

/// Creates the namespace and waits for its `default` `ServiceAccount`, without which no pod can
/// be created in it.
pub async fn namespace(client: &Client, name: &str) -> Result<()> {
    create_namespace(client, name).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    let exists = |account: Option<&ServiceAccount>| account.is_some();
    tokio::time::timeout(SETUP_TIMEOUT, await_condition(accounts, "default", exists))
        .await
        .with_context(|| format!("no ServiceAccount {name}/default"))??;
    Ok(())
}

async fn create_namespace(client: &Client, name: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("cannot create the namespace {name}"))?;
    Ok(())
}

/// What the upstream operator needs out of a cluster: its namespace and the (empty) Secret its
/// certificate rotator fills. (The serving certificates' files are the script's.)
pub async fn upstream_prerequisites(client: &Client, namespace: &str) -> Result<()> {
    create_namespace(client, namespace).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(UPSTREAM_SECRET.to_owned()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .context("cannot create upstream's webhook Secret")?;
    Ok(())
}

/// The CPU seconds each component of the control plane has used so far (from its pid file in
/// `TRAINCTL_CLUSTER_DIR`); those that cannot be read are left out.
pub fn control_plane_cpu() -> BTreeMap<String, f64> {
    let Some(dir) = std::env::var_os("TRAINCTL_CLUSTER_DIR") else {
        return BTreeMap::new();
    };
    let dir = PathBuf::from(dir);
    COMPONENTS
        .iter()
        .filter_map(|name| {
            let pid = std::fs::read_to_string(dir.join("pids").join(format!("{name}.pid"))).ok()?;
            let seconds = crate::process::cpu_of(pid.trim().parse().ok()?)?;
            Some(((*name).to_owned(), seconds))
        })
        .collect()
}
