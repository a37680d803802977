//! The quota side of the queue: which jobs their namespace's `ResourceQuota` holds, and what the
//! namespaces' admitted jobs count against their quotas.
//!
//! The rule (`docs/server.md`, "Teams and quotas"): the jobs of a namespace with quotas are
//! taken in queue order (priority, then submission). Walking the queue, each job of the
//! namespace is counted against what the namespace's admitted jobs and the jobs of the
//! namespace ahead of it (not held) leave of every quota; the first that does not fit is held
//! by its quota, and so is every job of its namespace behind it (head of line, per namespace).
//! A held job is out of the machine's queue: it reserves nothing, and jobs of other namespaces
//! pass it. When a job of the namespace ends or a quota changes, the holds are worked out again
//! and the jobs released try at once.

use std::collections::HashMap;

use trainctl_api::quota::{Quota, QuotaCheck, Usage};

use super::{Charged, Entry, Queue, State};

/// A quota's refusal with the jobs whose use it counted: `exceeded quota: ..., used: ...,
/// limited: ...; used by tfjob/team-a/first, tfjob/team-a/second (queued ahead)`.
fn naming(why: &str, jobs: &[String]) -> String {
    if jobs.is_empty() {
        why.to_owned()
    } else {
        format!("{why}; used by {}", jobs.join(", "))
    }
}

impl Queue {
    /// Replaces the quotas of `namespace` (none: no limit); takes effect at once: jobs it no
    /// longer holds try, jobs it now holds wait (running jobs are never stopped).
    pub fn set_quotas(&self, namespace: &str, quotas: Vec<Quota>) {
        let mut state = self.lock();
        if quotas.is_empty() {
            state.quotas.remove(namespace);
        } else {
            state.quotas.insert(namespace.to_owned(), quotas);
        }
        state.refresh_quota_holds();
        state.wake_head();
    }

    /// Counts the admitted job `uid`, named `label` (taken over from the server before, not
    /// admitted through the queue), against the quotas of `namespace`, until it ends.
    pub fn charge_running(&self, uid: &str, label: &str, namespace: &str, charge: Usage) {
        let mut state = self.lock();
        let charged = Charged {
            label: label.to_owned(),
            namespace: namespace.to_owned(),
            usage: charge,
        };
        state.charged.insert(uid.to_owned(), charged);
        state.refresh_quota_holds();
    }

    /// What the admitted jobs of `namespace` count against its quotas together.
    pub fn usage(&self, namespace: &str) -> Usage {
        self.lock().used(namespace)
    }

    /// Why the quota of its namespace holds the job `uid`; `None` when it does not (or the job
    /// is not queued).
    pub fn quota_hold(&self, uid: &str) -> Option<String> {
        self.lock()
            .entries
            .iter()
            .find(|entry| entry.uid == uid)
            .and_then(|entry| entry.quota_hold.clone())
    }
}

impl State {
    /// The indexes of the entries in the machine's queue (not held by their quota), in order.
    pub(super) fn machine(&self) -> Vec<usize> {
        (0..self.entries.len())
            .filter(|&index| self.entries[index].quota_hold.is_none())
            .collect()
    }

    /// The place of the entry at `at` in the machine's queue; `None` when its quota holds it.
    pub(super) fn machine_place(&self, at: usize) -> Option<usize> {
        self.entries[at].quota_hold.as_ref().map_or_else(
            || {
                Some(
                    self.entries[..at]
                        .iter()
                        .filter(|entry| entry.quota_hold.is_none())
                        .count(),
                )
            },
            |_| None,
        )
    }

    /// What the admitted jobs of `namespace` count together.
    pub(super) fn used(&self, namespace: &str) -> Usage {
        let mut used = Usage::default();
        for charged in self.charged.values() {
            if charged.namespace == namespace {
                used.add(&charged.usage);
            }
        }
        used
    }

    /// The admitted jobs of `namespace` that count against its quotas, named, in order.
    fn counted(&self, namespace: &str) -> Vec<String> {
        let mut labels: Vec<String> = self
            .charged
            .values()
            .filter(|charged| charged.namespace == namespace && !charged.usage.is_empty())
            .map(|charged| charged.label.clone())
            .collect();
        labels.sort();
        labels
    }

    /// Why the entry at `at` can never fit one of its namespace's quotas, if it cannot.
    pub(super) fn never_fits_quota(&self, at: usize) -> Option<String> {
        let entry = &self.entries[at];
        self.quotas.get(&entry.namespace)?.iter().find_map(|quota| {
            match quota.check(&Usage::default(), &entry.charge) {
                QuotaCheck::NeverFits(why) => Some(why),
                QuotaCheck::Fits | QuotaCheck::Exceeded(_) => None,
            }
        })
    }

    /// Counts an admitted entry against its namespace's quotas.
    pub(super) fn charge(&mut self, entry: &Entry) {
        let charged = Charged {
            label: entry.label.clone(),
            namespace: entry.namespace.clone(),
            usage: entry.charge.clone(),
        };
        self.charged.insert(entry.uid.clone(), charged);
    }

    /// Works out which entries their quota holds (the module's rule); an entry released, or
    /// that can never fit (it is to fail), tries at once.
    pub(super) fn refresh_quota_holds(&mut self) {
        let mut counted: HashMap<String, Usage> = HashMap::new();
        // The jobs `counted` holds, by namespace: admitted ones, then those queued ahead.
        let mut counted_jobs: HashMap<String, Vec<String>> = HashMap::new();
        let mut held_behind: HashMap<String, String> = HashMap::new();
        for index in 0..self.entries.len() {
            let namespace = self.entries[index].namespace.clone();
            let hold = match self.quotas.get(&namespace) {
                None => None,
                Some(quotas) => {
                    let so_far = counted
                        .entry(namespace.clone())
                        .or_insert_with(|| self.used(&namespace));
                    let jobs = counted_jobs
                        .entry(namespace.clone())
                        .or_insert_with(|| self.counted(&namespace));
                    let entry = &self.entries[index];
                    if let Some(label) = held_behind.get(&namespace) {
                        Some(format!(
                            "queued behind {label}, which the quota of namespace {namespace} holds"
                        ))
                    } else {
                        let checks: Vec<QuotaCheck> = quotas
                            .iter()
                            .map(|quota| quota.check(so_far, &entry.charge))
                            .collect();
                        let exceeded = checks.iter().find_map(|check| match check {
                            QuotaCheck::Exceeded(why) => Some(why.clone()),
                            QuotaCheck::Fits | QuotaCheck::NeverFits(_) => None,
                        });
                        let never = checks
                            .iter()
                            .any(|check| matches!(check, QuotaCheck::NeverFits(_)));
                        if never {
                            // It fails at its try; it neither holds others nor counts.
                            None
                        } else if let Some(why) = exceeded {
                            held_behind.insert(namespace.clone(), entry.label.clone());
                            Some(naming(&why, jobs))
                        } else {
                            so_far.add(&entry.charge);
                            if !entry.charge.is_empty() {
                                jobs.push(format!("{} (queued ahead)", entry.label));
                            }
                            None
                        }
                    }
                }
            };
            let entry = &mut self.entries[index];
            // Released, it tries again; newly held (or held for another reason), it tries once
            // to hear why, so that its status says it (`get -o wide`, `describe`).
            let changed = entry.quota_hold != hold;
            entry.quota_hold = hold;
            if changed {
                entry.may_try = true;
                entry.turn.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests;
