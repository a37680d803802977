//! `get quota`, `describe quota` and `delete quota`: the server's ResourceQuotas, as kubectl
//! shows a cluster's (`kubectl get quota` prints REQUEST and LIMIT as `used/hard`). Quotas live
//! in the local control plane, which counts what each namespace uses: these commands need it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::ResourceQuota;

use crate::backend::Local;
use crate::client::Client;
use crate::table::Table;

/// The words that name quotas, as kubectl spells the resource.
pub const RESOURCE_NAMES: [&str; 4] = ["quota", "quotas", "resourcequota", "resourcequotas"];

/// Whether `words` start with a name of the quota resource; the names after it.
pub fn asked(words: &[String]) -> Option<&[String]> {
    let (first, names) = words.split_first()?;
    RESOURCE_NAMES.contains(&first.as_str()).then_some(names)
}

/// `get quota [NAME...]`: NAME, REQUEST and LIMIT (NAMESPACE first with `-A`); exit 1 when a
/// quota named does not exist.
pub fn get(
    names: &[String],
    namespace: Option<&str>,
    all_namespaces: bool,
    local: &Local,
) -> anyhow::Result<ExitCode> {
    let namespace = namespace.unwrap_or(crate::target::DEFAULT_NAMESPACE);
    let scope = (!all_namespaces).then_some(namespace);
    let quotas = Client::find(local.dir())?.quotas(scope)?;
    let (shown, code) = named(quotas, names, namespace);
    if shown.is_empty() {
        if names.is_empty() {
            match scope {
                Some(namespace) => eprintln!("No resources found in {namespace} namespace."),
                None => eprintln!("No resources found"),
            }
        }
        return Ok(code);
    }
    let mut table = Table::new(["NAMESPACE", "NAME", "REQUEST", "LIMIT"]);
    for quota in &shown {
        let (request, limit) = usage_columns(quota);
        table.row([
            quota.metadata.namespace.clone().unwrap_or_default(),
            quota.metadata.name.clone().unwrap_or_default(),
            request,
            limit,
        ]);
    }
    table.keep_columns(&[all_namespaces]);
    print!("{}", table.render());
    Ok(code)
}

/// `describe quota NAME...`: each quota's resources, used and hard, as `kubectl describe quota`.
pub fn describe(
    names: &[String],
    namespace: Option<&str>,
    local: &Local,
) -> anyhow::Result<ExitCode> {
    let (namespace, client) = named_command("describe", names, namespace, local)?;
    let quotas = client.quotas(Some(namespace))?;
    let (shown, code) = named(quotas, names, namespace);
    let texts: Vec<String> = shown.iter().map(description).collect();
    print!("{}", texts.join("\n\n"));
    Ok(code)
}

/// `delete quota NAME...`: the namespace's jobs it held may start at once.
pub fn delete(
    names: &[String],
    namespace: Option<&str>,
    local: &Local,
) -> anyhow::Result<ExitCode> {
    let (namespace, client) = named_command("delete", names, namespace, local)?;
    let mut code = ExitCode::SUCCESS;
    for name in names {
        match client.delete_quota(namespace, name) {
            Ok(_) => println!("resourcequota \"{name}\" deleted"),
            Err(error) => {
                eprintln!("error: {error}");
                code = ExitCode::FAILURE;
            }
        }
    }
    Ok(code)
}

/// The namespace and the server of a `command` that acts on the quotas `names` (an error when
/// none is named).
fn named_command<'a>(
    command: &str,
    names: &[String],
    namespace: Option<&'a str>,
    local: &Local,
) -> anyhow::Result<(&'a str, Client)> {
    if names.is_empty() {
        anyhow::bail!("name the quota: `trainctl {command} quota NAME`");
    }
    let namespace = namespace.unwrap_or(crate::target::DEFAULT_NAMESPACE);
    Ok((namespace, Client::find(local.dir())?))
}

/// The quotas `names` names (all when none), in that order; exit 1, said on stderr, for a name
/// no quota of `namespace` has.
fn named(
    quotas: Vec<ResourceQuota>,
    names: &[String],
    namespace: &str,
) -> (Vec<ResourceQuota>, ExitCode) {
    if names.is_empty() {
        return (quotas, ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    let mut shown = Vec::new();
    for name in names {
        if let Some(quota) = quotas
            .iter()
            .find(|quota| quota.metadata.name.as_deref() == Some(name))
        {
            shown.push(quota.clone());
        } else {
            eprintln!("error: resourcequota \"{name}\" not found in namespace \"{namespace}\"");
            code = ExitCode::FAILURE;
        }
    }
    (shown, code)
}

/// Each resource of the quota: its hard limit, and what is used of it.
fn resources(quota: &ResourceQuota) -> BTreeMap<String, (String, String)> {
    let status = quota.status.as_ref();
    let hard = status.and_then(|status| status.hard.as_ref());
    let used = status.and_then(|status| status.used.as_ref());
    hard.into_iter()
        .flatten()
        .map(|(resource, limit)| {
            let used = used
                .and_then(|used| used.get(resource))
                .map_or_else(|| "0".to_owned(), |used| used.0.clone());
            (resource.clone(), (used, limit.0.clone()))
        })
        .collect()
}

/// kubectl's REQUEST and LIMIT cells: `pods: 1/4, requests.cpu: 500m/2`, the `limits.*`
/// resources in LIMIT.
fn usage_columns(quota: &ResourceQuota) -> (String, String) {
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (resource, (used, hard)) in resources(quota) {
        let cell = format!("{resource}: {used}/{hard}");
        if resource.starts_with("limits.") {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    (request.join(", "), limit.join(", "))
}

/// `kubectl describe quota`'s text: name, namespace, and a table of each resource's use.
fn description(quota: &ResourceQuota) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Name:       {}",
        quota.metadata.name.as_deref().unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "Namespace:  {}",
        quota.metadata.namespace.as_deref().unwrap_or_default()
    );
    let mut table = Table::new(["Resource", "Used", "Hard"]);
    table.row(["--------".to_owned(), "----".to_owned(), "----".to_owned()]);
    for (resource, (used, hard)) in resources(quota) {
        table.row([resource, used, hard]);
    }
    out.push_str(&table.render());
    out
}
