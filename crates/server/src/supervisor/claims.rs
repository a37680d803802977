//! The claims a submission binds (`trainctl submit --volume CLAIM=PATH`, the API's `volume`
//! parameter): recorded before its jobs, all or none, and refused while a job that has not
//! finished mounts a claim from another directory (`trainctl_local::claims::bind`).

use std::collections::BTreeSet;

use jiff::Timestamp;
use trainctl_local::claims::{self, BindError, VolumeBinding};
use trainctl_local::store::JobRecord;
use trainctl_server_api::ClaimBound;

use super::{Supervisor, SupervisorError};

impl Supervisor {
    /// Binds the claims `volumes` names, before the jobs `records` are recorded: a claim that
    /// names no namespace is bound in `namespace` (`-n`) when given, else in each job's (in
    /// `default` when there is no job). The bindings that changed are logged.
    pub(super) fn bind_claims(
        &self,
        volumes: &[VolumeBinding],
        namespace: Option<&str>,
        records: &[JobRecord],
    ) -> Result<Vec<ClaimBound>, SupervisorError> {
        if volumes.is_empty() {
            return Ok(Vec::new());
        }
        let namespaces: BTreeSet<&str> = match namespace {
            Some(namespace) => BTreeSet::from([namespace]),
            None if records.is_empty() => BTreeSet::from(["default"]),
            None => records
                .iter()
                .map(|record| record.namespace.as_str())
                .collect(),
        };
        let targets: Vec<_> = volumes
            .iter()
            .flat_map(|volume| {
                // A claim that names its namespace is the same target for each: bound once.
                namespaces
                    .iter()
                    .map(move |namespace| volume.target(namespace))
            })
            .collect();
        let bound = claims::bind(&mut self.store(), &targets, Timestamp::now()).map_err(
            |error| match error {
                BindError::Store(error) => SupervisorError::Store(error),
                error @ BindError::Twice { .. } => SupervisorError::BadRequest(error.to_string()),
                error @ BindError::InUse { .. } => SupervisorError::Conflict(error.to_string()),
            },
        )?;
        Ok(bound
            .into_iter()
            .map(|bound| {
                let claim = ClaimBound {
                    namespace: bound.namespace,
                    name: bound.claim,
                    path: bound.path.display().to_string(),
                    previous: bound.previous.map(|path| path.display().to_string()),
                };
                if let Some(previous) = &claim.previous {
                    tracing::info!(
                        namespace = %claim.namespace,
                        claim = %claim.name,
                        "claim {}/{}: bound to {} (was {previous})",
                        claim.namespace,
                        claim.name,
                        claim.path
                    );
                }
                claim
            })
            .collect())
    }
}
