//! One grant set per cluster (docs/admission.md "One grant set per cluster").
//!
//! Every replica answers admission, but only the leader reconciles. Each
//! replica loaded its own grants file at start, so during a rolling restart
//! (or with a mis-mounted Secret) replicas can hold different files, and a
//! standby could admit a Runtime the leader then blocks. So the leader
//! publishes the sha256 of the file it loaded as an annotation on the
//! leader-election Lease, in the very write that takes or renews the lease
//! (a new leader publishes atomically with leading). Every replica already
//! reads that Lease (standbys every renew interval to see whether it is
//! free, the leader to renew it), so it learns the leader's digest from
//! those reads: no new watch, no new permission.
//!
//! A replica that cannot confirm that its own digest is the leader's (it
//! differs, no leader holds the Lease, the holder published none, or the
//! Lease was not read yet) never admits what depends on the grants: an
//! admission that a binding grants is refused with "grants are being
//! reloaded, retry". Everything that does not depend on the grants (no
//! profile, clearing it, `suspend: true`, a metadata-only update, the
//! finalizer removal of a deleting Runtime) is judged as always: an
//! operator can still retire workloads while the replicas disagree. With no
//! grants file at all, nothing can be granted, so nothing changes.
//!
//! A replica's reads of the Lease come every renew interval, so right after
//! a leader takes it (a fresh install, a failover) a Ready standby can
//! still hold "no agent leads". An admission that finds this replica
//! unconfirmed therefore reads the Lease once more before it refuses
//! ([`GrantSet::confirmed`]; at most one read per [`REREAD_EVERY`], so a
//! flood of admissions is not a flood of reads): a refusal then means the
//! Lease says so now, not that this replica has not looked lately.
//!
//! The digest is compared, never trusted for more: a value someone else
//! plants on the Lease is overwritten by the leader's next renewal, and a
//! value that is not a sha256 (or `none`) counts as "published none".

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use berth_shared::api::reasons;
use berth_shared::grants::LoadedGrants;
use berth_shared::sanitize;
use k8s_openapi::api::coordination::v1::Lease;
use prometheus_client::metrics::gauge::Gauge;

use super::verdict::Verdict;

/// The Lease annotation carrying the leader's grants digest.
pub const DIGEST_ANNOTATION: &str = "berth.dev/grants-sha256";
/// The digest of "no grants file configured" (nothing granted).
pub const NO_FILE: &str = "none";
/// The reason of a refusal while the grant sets differ.
pub const RELOADING: &str = "GrantsReloading";
/// What the client is told, first thing in the message.
pub const RETRY: &str = "grants are being reloaded, retry";

/// This replica's digest: the loaded file's sha256, or [`NO_FILE`].
pub fn own_digest(loaded: Option<&LoadedGrants>) -> String {
    loaded.map_or_else(|| NO_FILE.to_string(), |l| l.sha256.clone())
}

/// Whether `s` can be a published digest (64 lowercase hex, or `none`).
pub fn is_digest(s: &str) -> bool {
    s == NO_FILE || (s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// What a read Lease says about its holder's grants.
pub fn leader_of(lease: &Lease) -> Leader {
    leader_from_lease(
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref()),
        lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DIGEST_ANNOTATION))
            .map(String::as_str),
    )
}

/// What this replica knows about the leader's grant set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leader {
    /// The Lease was not read yet (start-up).
    Unseen,
    /// No one holds the Lease (never held, or released).
    Nobody,
    /// The holder published no valid digest (an older agent).
    Unpublished {
        /// `holderIdentity`.
        holder: String,
    },
    /// The holder's digest.
    Published {
        /// `holderIdentity`.
        holder: String,
        /// Its grants digest.
        digest: String,
    },
}

/// What a Lease with this holder and annotation value says.
pub fn leader_from_lease(holder: Option<&str>, annotation: Option<&str>) -> Leader {
    match holder.filter(|h| !h.is_empty()) {
        None => Leader::Nobody,
        Some(holder) => match annotation.filter(|d| is_digest(d)) {
            Some(digest) => Leader::Published {
                holder: holder.to_string(),
                digest: digest.to_string(),
            },
            None => Leader::Unpublished {
                holder: holder.to_string(),
            },
        },
    }
}

/// Whether this replica may judge with its own grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Same digest as the leader's.
    Same,
    /// No leader election to follow (the standalone `webhook` command
    /// without `--lease-name`): its own file is the only one.
    Alone,
    /// Not confirmed: the sentence says why.
    Unconfirmed(String),
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// Compares this replica's digest with what the Lease said.
pub fn agreement(own: &str, leader: &Leader) -> Agreement {
    match leader {
        Leader::Published { digest, .. } if digest == own => Agreement::Same,
        Leader::Published { holder, digest } => Agreement::Unconfirmed(format!(
            "this replica loaded grants {} but the leader {} runs with {}; restart the replicas with the same grants file",
            short(own),
            sanitize::name(holder),
            short(digest)
        )),
        Leader::Unpublished { holder } => Agreement::Unconfirmed(format!(
            "the leader {} has not published its grants digest",
            sanitize::name(holder)
        )),
        Leader::Nobody => Agreement::Unconfirmed("no agent leads at the moment".into()),
        Leader::Unseen => {
            Agreement::Unconfirmed("this replica has not read the leader's Lease yet".into())
        }
    }
}

/// Whether a verdict rests on the grant set: an admission a binding grants,
/// or a refusal about a binding (which another grant set could answer
/// differently).
fn rests_on_grants(verdict: &Verdict) -> bool {
    match verdict {
        Verdict::Allowed { reason, .. } => *reason == reasons::GRANTED,
        Verdict::Denied { reason, .. } => [
            reasons::NOT_GRANTED,
            reasons::REVOKED,
            reasons::CLASS_MISSING,
            reasons::HANDLER_MISMATCH,
            reasons::CLASS_UNSUPPORTED,
            reasons::CLASS_DELETING,
        ]
        .contains(reason),
    }
}

/// The verdict this replica may give (pure): unchanged when its grant set
/// is the leader's (or it has no leader to follow) or when the verdict does
/// not rest on the grants; otherwise an admission becomes a refusal with
/// [`RETRY`], and a refusal keeps its reason and says it may be transient.
/// `admitted_anyway`: the change is one every grant set admits
/// (`suspend: true`, or an update leaving `spec` unchanged), even when
/// its profile happens to be granted here.
pub fn gate(verdict: Verdict, agreement: &Agreement, admitted_anyway: bool) -> Verdict {
    let why = match agreement {
        Agreement::Same | Agreement::Alone => return verdict,
        Agreement::Unconfirmed(why) => why,
    };
    if (admitted_anyway && verdict.is_allowed()) || !rests_on_grants(&verdict) {
        return verdict;
    }
    match verdict {
        Verdict::Allowed { .. } => Verdict::Denied {
            reason: RELOADING,
            message: format!("{RETRY}: {why}"),
        },
        Verdict::Denied { reason, message } => Verdict::Denied {
            reason,
            message: format!("{message} ({RETRY}: {why})"),
        },
    }
}

/// How often an unconfirmed replica may read the Lease on an admission's
/// behalf: admissions in between are judged on that read.
pub const REREAD_EVERY: Duration = Duration::from_millis(500);

/// Reads the leader's Lease now: what it says, or `None` when the read
/// failed (the source logs why). Implemented by `super::lease_reader`, so
/// that this module holds the rule and not the client.
pub trait LeaseSource: Send + Sync {
    /// One read of the Lease.
    fn read(&self) -> Pin<Box<dyn Future<Output = Option<Leader>> + Send + '_>>;
}

struct Inner {
    own: String,
    follows: bool,
    leader: Mutex<Leader>,
    mismatch: Gauge,
    /// Where [`GrantSet::confirmed`] reads the Lease (set once the client
    /// exists), and when it last did.
    source: OnceLock<Box<dyn LeaseSource>>,
    last_read: tokio::sync::Mutex<Option<Instant>>,
}

/// This replica's digest and the leader's, shared by the elector (which
/// reads the Lease) and the webhook (which asks [`GrantSet::agreement`]).
#[derive(Clone)]
pub struct GrantSet(Arc<Inner>);

impl std::fmt::Debug for GrantSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantSet")
            .field("own", &self.0.own)
            .field("follows", &self.0.follows)
            .finish_non_exhaustive()
    }
}

impl GrantSet {
    /// A replica that follows the leader's published digest; `mismatch`
    /// (the `grants_digest_mismatch` gauge) is 1 while it is not confirmed.
    pub fn following(own: String, mismatch: Gauge) -> Self {
        mismatch.set(1);
        Self(Arc::new(Inner {
            own,
            follows: true,
            leader: Mutex::new(Leader::Unseen),
            mismatch,
            source: OnceLock::new(),
            last_read: tokio::sync::Mutex::new(None),
        }))
    }

    /// A webhook without leader election: judges with its own file.
    pub fn alone(own: String) -> Self {
        Self(Arc::new(Inner {
            own,
            follows: false,
            leader: Mutex::new(Leader::Unseen),
            mismatch: Gauge::default(),
            source: OnceLock::new(),
            last_read: tokio::sync::Mutex::new(None),
        }))
    }

    /// This replica's digest (what it publishes when it leads).
    pub fn own(&self) -> &str {
        &self.0.own
    }

    /// Records what the Lease said; logs and sets the gauge when the
    /// agreement changes.
    pub fn observe(&self, leader: Leader) {
        if !self.0.follows {
            return;
        }
        let mut current = berth_shared::sync::lock(&self.0.leader);
        if *current == leader {
            return;
        }
        let before = agreement(&self.0.own, &current);
        let after = agreement(&self.0.own, &leader);
        *current = leader;
        drop(current);
        self.0.mismatch.set(i64::from(after != Agreement::Same));
        if before == after {
            return;
        }
        match &after {
            Agreement::Same => {
                tracing::info!(sha256 = %self.0.own, "grants digest is the leader's: admission judges with the loaded grants");
            }
            Agreement::Unconfirmed(why) => {
                tracing::warn!(sha256 = %self.0.own, reason = %why, "grants digest not confirmed as the leader's: admissions that depend on the grants are refused (retry)");
            }
            Agreement::Alone => {}
        }
    }

    /// Whether this replica may judge with its own grants now.
    pub fn agreement(&self) -> Agreement {
        if !self.0.follows {
            return Agreement::Alone;
        }
        let leader = berth_shared::sync::lock(&self.0.leader);
        agreement(&self.0.own, &leader)
    }

    /// Where [`Self::confirmed`] reads the Lease; the first one set stays.
    pub fn read_lease_from(&self, source: Box<dyn LeaseSource>) {
        let _ = self.0.source.set(source);
    }

    /// [`Self::agreement`], after reading the Lease once more when it is
    /// not confirmed (and the last such read is older than
    /// [`REREAD_EVERY`]). A read that another observation overtook is
    /// dropped: the elector's newer word stands.
    pub async fn confirmed(&self) -> Agreement {
        let first = self.agreement();
        let (Agreement::Unconfirmed(_), Some(source)) = (&first, self.0.source.get()) else {
            return first;
        };
        let mut last = self.0.last_read.lock().await;
        if last.is_some_and(|t| t.elapsed() < REREAD_EVERY) {
            drop(last);
            return self.agreement();
        }
        let before = berth_shared::sync::lock(&self.0.leader).clone();
        let read = source.read().await;
        *last = Some(Instant::now());
        drop(last);
        if let Some(leader) = read
            && *berth_shared::sync::lock(&self.0.leader) == before
        {
            self.observe(leader);
        }
        self.agreement()
    }
}

#[cfg(test)]
mod tests;
