//! The checked [`model::Policy`], built from what pass 1 collected once no
//! check failed.

use super::{Checker, Collected, Reported, valid};
use crate::ast;
use crate::model::{self, LandlockRunner, LimitRunner, PrivateTmp, SeccompPolicy};

impl Checker {
    pub(super) fn build(
        &mut self,
        policy: &ast::PolicyDecl,
        c: Collected,
    ) -> Option<model::Policy> {
        // In one-hop mode the `limits` and `landlock` blocks name no runner
        // of their own: they carry the settings the combined runner applies.
        let runners = match valid(&c.combined) {
            Some(one) => model::Runners::Combined {
                path: one.path.clone(),
                limits: c.limits.as_ref().map(|l| l.limits),
                allow_exec: c
                    .landlock
                    .as_ref()
                    .map(|l| l.allow.iter().map(|p| p.path.clone()).collect()),
            },
            None => {
                let limit = c.limits.as_ref().and_then(|l| {
                    Some(LimitRunner {
                        path: valid(&l.runner)?.path.clone(),
                        limits: l.limits,
                    })
                });
                let landlock = c.landlock.as_ref().and_then(|l| {
                    Some(LandlockRunner {
                        path: valid(&l.runner)?.path.clone(),
                        allow_exec: l.allow.iter().map(|p| p.path.clone()).collect(),
                    })
                });
                match (limit, landlock) {
                    (None, None) => model::Runners::None,
                    (limit, landlock) => model::Runners::Separate { limit, landlock },
                }
            }
        };
        let cgroup = match &c.cgroup {
            Some((Ok(p), _)) => Some(p.clone()),
            Some((Err(Reported), _)) => return None,
            None => None,
        };
        let raw = model::RawPolicy {
            name: policy.name.node.clone(),
            bubblewrap: c.bubblewrap?,
            worker: c.worker?.path,
            worker_args: c.worker_args,
            runtime_mounts: c.runtime.into_iter().map(|(m, _)| m).collect(),
            file_roots: c.roots.into_iter().map(|r| r.root).collect(),
            tmp: c.tmp.map_or(PrivateTmp::Off, |(t, _)| t),
            bounded_writes: c.writes_bounded.is_some(),
            no_further_user_namespaces: c.userns_none.is_some(),
            pin_mounts: c.pin_mounts.is_some(),
            pin_executables: c.pin_executables.is_some(),
            allow_unbounded_host_writes: c.host_writes.is_some(),
            aggregate_quota: match c.aggregate_quota {
                Some((q, _)) => Some(q.ok()?),
                None => None,
            },
            aggregate_ephemeral_max_bytes: match c.tmpfs_aggregate {
                Some((v, _)) => Some(v.ok()?),
                None => None,
            },
            max_active_file_roots: c
                .active_roots
                .map_or(model::DEFAULT_MAX_ACTIVE_FILE_ROOTS, |(v, _)| v),
            seccomp: c.seccomp.map_or(SeccompPolicy::Off, |(s, _)| s),
            require_limit_runner: c.limits.as_ref().is_some_and(|l| l.required.is_some()),
            runners,
            require_cgroup_v2: c.cgroup.as_ref().is_some_and(|(_, r)| *r),
            cgroup,
            watchdog: c.watchdog,
            network_broker: c.broker.map(|(b, _, _)| b),
            worker_identity: match c.identity {
                Some((i, _)) => Some(i.ok()?),
                None => None,
            },
        };
        // The same two checks an artifact's policy goes through
        // (`artifact::load`): the invariants, then the language rules.
        let checked = model::Policy::try_from(raw)
            .map_err(|e| e.to_string())
            .and_then(|p| {
                model::check_rules(&p)
                    .map(|()| p)
                    .map_err(|e| e.to_string())
            });
        match checked {
            Ok(checked) => Some(checked),
            Err(e) => {
                self.broken = Some((policy.header, e));
                None
            }
        }
    }
}
