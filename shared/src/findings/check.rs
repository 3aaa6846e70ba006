//! The checks: one function per finding kind, over one [`Inputs`].

use std::collections::BTreeMap;

use kube::ResourceExt as _;

use crate::analysis::{Placement, RetainReason, coverage, placement_coverage, retained};
use crate::api::{PendingVerdict, ProfileState, Runtime, condition_types as ct, reasons};
use crate::decide;

use super::inputs::{CertExpiry, Inputs, Leader};
use super::{Finding, FindingKind, Severity, named};

/// Every finding, worst first (then by kind, then by objects).
pub fn findings(i: &Inputs<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    retained_findings(i, &mut out);
    out.extend(exposed(i));
    out.extend(handler_missing(i));
    out.extend(super::attested::attested(i));
    out.extend(no_leader(i));
    out.extend(grants_file(i));
    out.extend(cert(i));
    out.extend(stuck(i));
    out.extend(unrunnable(i));
    out.extend(unreadable(i));
    out.extend(unheld(i));
    out.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.kind.cmp(&b.kind))
            .then(a.objects.cmp(&b.objects))
    });
    out
}

fn rt_ref(rt: &Runtime) -> String {
    format!(
        "Runtime/{}/{}",
        rt.namespace().unwrap_or_default(),
        rt.name_any()
    )
}

/// Retained workloads: of removed grants (error) and granted classes run
/// outside berth (warning), from the same `analysis::retained` the agent
/// and the Retained view call. Only the top of an ownership chain is
/// named, so a Deployment and its ReplicaSets and Pods are one finding.
fn retained_findings(i: &Inputs<'_>, out: &mut Vec<Finding>) {
    let present: std::collections::HashSet<(String, String, String)> = i
        .workloads
        .iter()
        .map(|w| {
            (
                w.namespace.clone(),
                w.kind.as_str().to_string(),
                w.name.clone(),
            )
        })
        .collect();
    let mut gone: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in retained(i.workloads, i.bindings, None) {
        let w = &r.workload;
        let owned = w.owner.as_ref().is_some_and(|o| {
            present.contains(&(w.namespace.clone(), o.kind.clone(), o.name.clone()))
        });
        if owned && !w.is_rollback_revision {
            continue;
        }
        match r.reason {
            RetainReason::GrantGone { alias } => {
                gone.entry(alias).or_default().push(w.key());
            }
            RetainReason::Orphaned { granted_as } => {
                out.push(Finding::new(
                    FindingKind::OrphanOnGrantedClass,
                    vec![w.key(), format!("RuntimeClass/{}", r.class)],
                    format!(
                        "{} carries berth's labels{}, has no controller and runs RuntimeClass {} (granted as {}): nothing enforces the contract on it",
                        w.key(),
                        w.runtime_label()
                            .map(|rt| format!(" for Runtime {}/{rt}", w.namespace))
                            .unwrap_or_default(),
                        r.class,
                        granted_as.join(", ")
                    ),
                ));
            }
            RetainReason::OutsideBerth { granted_as } if !granted_as.is_empty() => {
                out.push(Finding::new(
                    FindingKind::GrantedClassOutsideBerth,
                    vec![w.key(), format!("RuntimeClass/{}", r.class)],
                    format!(
                        "{} runs RuntimeClass {} outside berth; grant(s) {} reserve it",
                        w.key(),
                        r.class,
                        granted_as.join(", ")
                    ),
                ));
            }
            _ => {}
        }
    }
    for (alias, objects) in gone {
        out.push(Finding::new(
            FindingKind::RetainedAfterRevocation,
            objects.clone(),
            format!(
                "grant {alias} is gone, yet {} workload(s) still run its class: {}",
                objects.len(),
                named(&objects)
            ),
        ));
    }
}

/// Runtimes whose `Exposed` condition is True: the foreign objects the
/// agent found (`status.exposure`). Orphans are left to
/// [`FindingKind::OrphanOnGrantedClass`], which the caller's own view of
/// the workloads finds (Pods included, which the agent may not read).
fn exposed(i: &Inputs<'_>) -> Vec<Finding> {
    i.runtimes
        .iter()
        .filter_map(|rt| {
            let status = rt.status.as_ref()?;
            let c = status
                .conditions
                .iter()
                .find(|c| c.type_ == ct::EXPOSED && c.status == "True")?;
            let refs: Vec<String> = status
                .exposure
                .iter()
                .filter(|r| r.reason != reasons::ORPHANED)
                .map(|r| format!("{}/{}/{}", r.kind, r.namespace, r.name))
                .collect();
            if refs.is_empty() && c.reason == reasons::ORPHANED {
                return None;
            }
            let mut objects = vec![rt_ref(rt)];
            objects.extend(refs.iter().cloned());
            Some(Finding::new(
                FindingKind::RuntimeExposed,
                objects,
                format!("{} is Exposed ({}): {}", rt_ref(rt), c.reason, c.message),
            ))
        })
        .collect()
}

fn handler_missing(i: &Inputs<'_>) -> Vec<Finding> {
    i.runtimes
        .iter()
        .filter_map(|rt| {
            let p = rt.status.as_ref()?.profile.as_ref()?;
            if p.state != ProfileState::Granted {
                return None;
            }
            let handler = p.handler.as_deref()?;
            let sched = rt.spec.scheduling.as_ref();
            let placement = Placement {
                node_selector: sched.map(|s| &s.node_selector),
                affinity: sched.and_then(|s| s.affinity.as_ref()),
                tolerations: sched.map_or(&[], |s| s.tolerations.as_slice()),
            };
            let cov = placement_coverage(i.nodes, &placement, handler);
            if cov.missing.is_empty() {
                return None;
            }
            let mut missing = cov.missing.clone();
            missing.sort();
            let mut objects = vec![rt_ref(rt)];
            objects.extend(missing.iter().map(|n| format!("Node/{n}")));
            Some(Finding::new(
                FindingKind::HandlerMissingInPlacement,
                objects,
                format!(
                    "{} of {} node(s) {} may land on lack handler {handler}: {}",
                    missing.len(),
                    cov.eligible,
                    rt_ref(rt),
                    named(&missing)
                ),
            ))
        })
        .collect()
}

fn no_leader(i: &Inputs<'_>) -> Option<Finding> {
    match i.leader {
        Leader::Missing(detail) => Some(Finding::new(
            FindingKind::NoAgentLeader,
            Vec::new(),
            format!("no agent leads: {detail}"),
        )),
        Leader::Live(_) | Leader::Unknown => None,
    }
}

fn grants_file(i: &Inputs<'_>) -> Option<Finding> {
    let p = i.pending?;
    let object = vec!["PendingGrantsFile".to_string()];
    match p.verdict {
        PendingVerdict::Invalid | PendingVerdict::Unreadable => {
            let first = p
                .problems
                .first()
                .map(|pr| format!(": {}", pr.message))
                .unwrap_or_default();
            Some(Finding::new(
                FindingKind::GrantsFileInvalid,
                object,
                format!(
                    "the grants file on disk is {:?} ({} problem(s)){first}",
                    p.verdict,
                    p.problems.len()
                ),
            ))
        }
        PendingVerdict::Valid => {
            let since = p.observed_at.as_ref()?.0;
            let age = i.now.as_second() - since.as_second();
            (age > i.thresholds.pending_seconds).then(|| {
                Finding::new(
                    FindingKind::GrantsFilePending,
                    object,
                    format!(
                        "a changed grants file has waited {} minute(s) for an agent restart",
                        age / 60
                    ),
                )
            })
        }
    }
}

fn cert(i: &Inputs<'_>) -> Option<Finding> {
    match i.cert {
        CertExpiry::NotRead(why) => Some(
            Finding::new(
                FindingKind::WebhookCertExpiry,
                Vec::new(),
                format!("not checked: {why}"),
            )
            .at(Severity::Info),
        ),
        CertExpiry::NotAfter(t) => {
            let left = t.as_second() - i.now.as_second();
            if left <= 0 {
                Some(
                    Finding::new(
                        FindingKind::WebhookCertExpiry,
                        Vec::new(),
                        format!("the webhook certificate expired at {t}"),
                    )
                    .at(Severity::Error),
                )
            } else if left < i.thresholds.cert_seconds {
                Some(Finding::new(
                    FindingKind::WebhookCertExpiry,
                    Vec::new(),
                    format!(
                        "the webhook certificate expires at {t} (in {} hour(s))",
                        left / 3600
                    ),
                ))
            } else {
                None
            }
        }
    }
}

fn stuck(i: &Inputs<'_>) -> Vec<Finding> {
    i.runtimes
        .iter()
        .filter_map(|rt| {
            let conds = &rt.status.as_ref()?.conditions;
            let c = [ct::BLOCKED, ct::DEGRADED]
                .iter()
                .find_map(|t| conds.iter().find(|c| c.type_ == *t && c.status == "True"))?;
            let age = i.now.as_second() - c.last_transition_time.0.as_second();
            (age > i.thresholds.stuck_seconds).then(|| {
                Finding::new(
                    FindingKind::RuntimeStuck,
                    vec![rt_ref(rt)],
                    format!(
                        "{} has been {} ({}) for {} minute(s): {}",
                        rt_ref(rt),
                        c.type_,
                        c.reason,
                        age / 60,
                        c.message
                    ),
                )
            })
        })
        .collect()
}

fn unrunnable(i: &Inputs<'_>) -> Vec<Finding> {
    i.classes
        .iter()
        .filter_map(|c| {
            let cov = coverage(i.nodes, &c.handler);
            // Unknown is not absent: a node without a handler list may
            // have it.
            if cov.total == 0 || cov.with_handler > 0 || cov.unknown > 0 {
                return None;
            }
            let granted: Vec<&str> = i
                .bindings
                .iter()
                .filter(|b| b.runtime_class == c.name)
                .map(|b| b.name.as_str())
                .collect();
            let f = Finding::new(
                FindingKind::ClassUnrunnable,
                vec![format!("RuntimeClass/{}", c.name)],
                format!(
                    "none of {} Ready node(s) reports handler {} of RuntimeClass {}{}",
                    cov.total,
                    c.handler,
                    c.name,
                    if granted.is_empty() {
                        String::new()
                    } else {
                        format!(" (granted as {})", granted.join(", "))
                    }
                ),
            );
            Some(if granted.is_empty() {
                f.at(Severity::Info)
            } else {
                f
            })
        })
        .collect()
}

fn unreadable(i: &Inputs<'_>) -> Vec<Finding> {
    i.unreadable
        .iter()
        .map(|(kind, error)| {
            Finding::new(
                FindingKind::Unreadable,
                vec![kind.clone()],
                format!("cannot list {kind}: {error}"),
            )
        })
        .collect()
}

fn unheld(i: &Inputs<'_>) -> Vec<Finding> {
    let empty = BTreeMap::new();
    i.bindings
        .iter()
        .filter(|b| {
            !i.runtimes.iter().any(|rt| {
                let ns = rt.namespace().unwrap_or_default();
                let labels = i.namespace_labels.get(&ns).unwrap_or(&empty);
                rt.spec.runtime_profile.as_deref() == Some(b.name.as_str())
                    && decide::namespace_scope(&ns, labels).is_ok_and(|(p, e)| {
                        b.matches(&decide::Identity {
                            project: p,
                            environment: e,
                            application: rt.spec.application.clone(),
                            service: rt.spec.service.clone(),
                        })
                    })
            })
        })
        .map(|b| {
            Finding::new(
                FindingKind::GrantUnheld,
                vec![format!("RuntimeGrant/{}", b.name)],
                format!(
                    "grant {} (project={} environment={} application={} service={}) is selected by no Runtime",
                    b.name, b.identity.project, b.identity.environment, b.identity.application, b.identity.service
                ),
            )
        })
        .collect()
}
