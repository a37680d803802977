//! What the API server serves, asked once at start: the gang scheduler's PodGroups
//! ([`gang`](super::gang)), the job kinds whose CRD is installed (the runtime's manager).

/// The names (plurals) of the resources the API server serves in `api_version`
/// (`kubeflow.org/v1`); none when it does not serve that group version at all.
pub async fn served_resources(
    client: &kube::Client,
    api_version: &str,
) -> Result<Vec<String>, kube::Error> {
    match client.list_api_group_resources(api_version).await {
        Ok(list) => Ok(list
            .resources
            .into_iter()
            .map(|resource| resource.name)
            .collect()),
        // A group version it does not serve is a plain-text `404 page not found`, no Status.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}
