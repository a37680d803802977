//! The supervisor's `ResourceQuota`s: applied (from a submitted manifest, before its jobs),
//! listed with what their namespace uses, deleted; each change reaches the queue at once.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ResourceQuota;
use trainctl_api::quota::Quota;
use trainctl_server_api::QuotaApplied;

use super::{Supervisor, SupervisorError};
use crate::journal::label;
use crate::quotas::{charge_of, with_status};

impl Supervisor {
    /// Gives the queue every recorded quota (at start).
    pub(super) fn load_quotas(&self) -> Result<(), SupervisorError> {
        let records = self.store().quotas(None)?;
        let mut namespaces: Vec<String> = records.into_iter().map(|r| r.namespace).collect();
        namespaces.dedup();
        for namespace in namespaces {
            self.refresh_quotas(&namespace)?;
        }
        Ok(())
    }

    /// Counts a job taken over from the server before, which holds its resources, against its
    /// namespace's quotas.
    pub(super) fn charge_adopted(&self, uid: &str) -> Result<(), SupervisorError> {
        if let Some(record) = self.store().job_by_uid(uid)? {
            self.queue.charge_running(
                uid,
                &label(&record.job),
                &record.namespace,
                charge_of(&record.job),
            );
        }
        Ok(())
    }

    /// Checks the quotas of a manifest, each in its namespace (its own, else `namespace`, else
    /// `default`): one line per problem.
    pub(super) fn check_quotas(
        quotas: &mut [ResourceQuota],
        source: &str,
        namespace: Option<&str>,
        problems: &mut Vec<String>,
    ) {
        for quota in quotas {
            let name = quota.metadata.name.clone().unwrap_or_default();
            match (quota.metadata.namespace.as_deref(), namespace) {
                (Some(own), Some(wanted)) if own != wanted => problems.push(format!(
                    "{source}: resourcequota/{name}: the quota's namespace `{own}` does not match \
                     the namespace `{wanted}`"
                )),
                (Some(_), _) => {}
                (None, wanted) => {
                    quota.metadata.namespace = Some(wanted.unwrap_or("default").to_owned());
                }
            }
            if let Err(issues) = Quota::of(quota) {
                for issue in issues {
                    problems.push(format!(
                        "{source}: resourcequota/{name}: {}: {}",
                        issue.path, issue.message
                    ));
                }
            }
        }
    }

    /// Records checked quotas (namespaced) and gives them to the queue.
    pub(super) fn apply_quotas(
        &self,
        quotas: Vec<ResourceQuota>,
    ) -> Result<Vec<QuotaApplied>, SupervisorError> {
        let now = Timestamp::now();
        let mut applied = Vec::new();
        for quota in quotas {
            let namespace = quota.metadata.namespace.clone().unwrap_or_default();
            let name = quota.metadata.name.clone().unwrap_or_default();
            let replaced = self.store().apply_quota(&namespace, &quota, now)?;
            self.refresh_quotas(&namespace)?;
            tracing::info!(
                quota = format!("{namespace}/{name}").as_str(),
                "quota applied"
            );
            applied.push(QuotaApplied {
                action: if replaced { "configured" } else { "created" },
                quota: self.quota(&namespace, &name)?,
            });
        }
        Ok(applied)
    }

    /// The quotas of `namespace` (of every namespace when `None`), with what each namespace's
    /// admitted jobs use.
    pub fn quotas(&self, namespace: Option<&str>) -> Result<Vec<ResourceQuota>, SupervisorError> {
        let records = self.store().quotas(namespace)?;
        Ok(records
            .into_iter()
            .map(|record| with_status(record.quota, &self.queue.usage(&record.namespace)))
            .collect())
    }

    /// The quota `namespace/name`, with what the namespace's admitted jobs use.
    pub fn quota(&self, namespace: &str, name: &str) -> Result<ResourceQuota, SupervisorError> {
        let record = self.store().quota(namespace, name)?.ok_or_else(|| {
            SupervisorError::NotFound(format!("resourcequota {namespace}/{name}"))
        })?;
        Ok(with_status(record.quota, &self.queue.usage(namespace)))
    }

    /// Deletes the quota `namespace/name`: the jobs it held may start at once.
    pub fn delete_quota(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<ResourceQuota, SupervisorError> {
        let quota = self.quota(namespace, name)?;
        self.store().delete_quota(namespace, name)?;
        self.refresh_quotas(namespace)?;
        tracing::info!(
            quota = format!("{namespace}/{name}").as_str(),
            "quota deleted"
        );
        Ok(quota)
    }

    /// Gives the queue the recorded quotas of `namespace`.
    fn refresh_quotas(&self, namespace: &str) -> Result<(), SupervisorError> {
        let records = self.store().quotas(Some(namespace))?;
        let quotas = records
            .iter()
            .filter_map(|record| Quota::of(&record.quota).ok())
            .collect();
        self.queue.set_quotas(namespace, quotas);
        Ok(())
    }
}
