//! A container's `resources`, checked as the API server checks a pod's: every amount a
//! Kubernetes quantity, none negative, a name Kubernetes knows or one qualified by a domain,
//! extended resources (`nvidia.com/gpu`) whole and their request equal to their limit, and no
//! request above its limit.
//!
//! `run` reads these amounts to admit a job and to bound its replicas; a typo the API server
//! would refuse (`cpu: 2 cores`, `memory: 4GB`, `nvidia.com/gpu: 1.5`) is refused here too,
//! rather than read one way here and refused there.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::issue::Issue;
use crate::field_path::FieldPath;
use crate::quantity::Amount;

/// The resources a container may name without a domain, as the API server knows them.
const STANDARD: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// Checks one container's `resources` at `path` (the container's field path).
pub(super) fn validate_resources(container: &Container, path: &FieldPath, issues: &mut Vec<Issue>) {
    let Some(resources) = container.resources.as_ref() else {
        return;
    };
    let path = path.field("resources");
    let empty = BTreeMap::new();
    let limits = resources.limits.as_ref().unwrap_or(&empty);
    let requests = resources.requests.as_ref().unwrap_or(&empty);
    let limit_amounts = amounts(limits, &path.field("limits"), issues);
    let request_amounts = amounts(requests, &path.field("requests"), issues);
    for (name, (request, text)) in &request_amounts {
        let field = path.field("requests").key(name);
        let whole = is_extended(name);
        match limit_amounts.get(name) {
            Some((limit, limit_text)) if whole && request != limit => {
                issues.push(Issue::error(
                    field,
                    format!(
                        "is `{text}`: expected the {name} limit, `{limit_text}`: an extended \
                         resource is not overcommitted, so its request equals its limit (or \
                         leave the request out)"
                    ),
                ));
            }
            Some((limit, limit_text)) if request > limit => issues.push(Issue::error(
                field,
                format!("is `{text}`: expected at most the {name} limit, `{limit_text}`"),
            )),
            None if whole => issues.push(Issue::error(
                path.field("limits").key(name),
                format!(
                    "is required: an extended resource is not overcommitted, so its limit must \
                     be set (`{name}: {text}`)"
                ),
            )),
            _ => {}
        }
    }
}

/// Each well-formed amount of `map` by name, with its text; what is not is reported.
fn amounts<'a>(
    map: &'a BTreeMap<String, Quantity>,
    path: &FieldPath,
    issues: &mut Vec<Issue>,
) -> BTreeMap<&'a str, (i128, &'a str)> {
    let mut good = BTreeMap::new();
    for (name, quantity) in map {
        let field = path.key(name);
        if let Err(problem) = resource_name(name) {
            issues.push(Issue::error(field, problem));
            continue;
        }
        let text = quantity.0.as_str();
        let nanos = match Amount::parse(text) {
            Ok(amount) => amount.nanos(),
            Err(invalid) => {
                issues.push(Issue::error(field, invalid.to_string()));
                continue;
            }
        };
        if nanos < 0 {
            issues.push(Issue::error(
                field,
                format!("is `{text}`: expected an amount of 0 or more"),
            ));
        } else if is_extended(name) && nanos % 1_000_000_000 != 0 {
            issues.push(Issue::error(
                field,
                format!(
                    "is `{text}`: expected a whole number: {name} is counted in whole devices \
                     (a GPU is not shared between containers)"
                ),
            ));
        } else {
            good.insert(name.as_str(), (nanos, text));
        }
    }
    good
}

/// Whether `name` is an extended resource (`nvidia.com/gpu`): qualified by a domain other than
/// Kubernetes' own, counted whole and never overcommitted.
fn is_extended(name: &str) -> bool {
    name.split_once('/')
        .is_some_and(|(domain, _)| domain != "kubernetes.io" && !domain.ends_with(".kubernetes.io"))
}

/// Checks a resource name: a standard one (`cpu`, `memory`, `ephemeral-storage`,
/// `hugepages-2Mi`) or one qualified by a domain.
fn resource_name(name: &str) -> Result<(), String> {
    let standard = STANDARD.contains(&name)
        || name
            .strip_prefix("hugepages-")
            .is_some_and(|size| Amount::parse(size).is_ok());
    let qualified = name.split_once('/').is_some_and(|(domain, rest)| {
        super::names::dns_subdomain(domain).is_ok()
            && !rest.is_empty()
            && rest.len() <= 63
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    });
    if standard || qualified {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a resource a container can ask for: expected `cpu`, `memory`, \
             `ephemeral-storage`, `hugepages-<size>` or a name qualified by a domain, such as \
             `nvidia.com/gpu`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issues(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Vec<String> {
        let container = crate::resources::tests::container("main", requests, limits);
        let mut found = Vec::new();
        validate_resources(&container, &FieldPath::fields("c"), &mut found);
        found
            .into_iter()
            .map(|issue| format!("{}: {}", issue.path, issue.message))
            .collect()
    }

    #[test]
    fn kubernetes_quantities_pass() {
        let requests = [("cpu", "500m"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")];
        let limits = [("cpu", "2"), ("memory", "4G"), ("nvidia.com/gpu", "1")];
        assert_eq!(issues(&requests, &limits), Vec::<String>::new());
        assert_eq!(
            issues(
                &[("hugepages-2Mi", "1Gi"), ("ephemeral-storage", "1e9")],
                &[]
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn what_the_api_server_refuses_is_refused() {
        assert_eq!(
            issues(&[("cpu", "2 cores")], &[("memory", "4GB")]),
            [
                "c.resources.limits[memory]: `4GB` is not a valid resource quantity (unknown \
                 suffix); write e.g. `500m`, `2`, `1.5Gi` or `1e3`",
                "c.resources.requests[cpu]: `2 cores` is not a valid resource quantity (unknown \
                 suffix); write e.g. `500m`, `2`, `1.5Gi` or `1e3`"
            ]
        );
        assert_eq!(
            issues(&[], &[("nvidia.com/gpu", "1.5")]),
            [
                "c.resources.limits[nvidia.com/gpu]: is `1.5`: expected a whole number: \
              nvidia.com/gpu is counted in whole devices (a GPU is not shared between \
              containers)"
            ]
        );
        assert_eq!(
            issues(&[("memory", "-1Gi")], &[]),
            ["c.resources.requests[memory]: is `-1Gi`: expected an amount of 0 or more"]
        );
        assert_eq!(
            issues(&[("gpu", "1")], &[]),
            [
                "c.resources.requests[gpu]: `gpu` is not a resource a container can ask for: \
              expected `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>` or a name \
              qualified by a domain, such as `nvidia.com/gpu`"
            ]
        );
    }

    #[test]
    fn a_request_stays_within_its_limit() {
        assert_eq!(
            issues(&[("cpu", "2")], &[("cpu", "1500m")]),
            ["c.resources.requests[cpu]: is `2`: expected at most the cpu limit, `1500m`"]
        );
        assert_eq!(
            issues(&[("nvidia.com/gpu", "1")], &[("nvidia.com/gpu", "2")]),
            [
                "c.resources.requests[nvidia.com/gpu]: is `1`: expected the nvidia.com/gpu limit, \
              `2`: an extended resource is not overcommitted, so its request equals its limit \
              (or leave the request out)"
            ]
        );
        assert_eq!(
            issues(&[("nvidia.com/gpu", "1")], &[]),
            [
                "c.resources.limits[nvidia.com/gpu]: is required: an extended resource is not \
              overcommitted, so its limit must be set (`nvidia.com/gpu: 1`)"
            ]
        );
    }
}
