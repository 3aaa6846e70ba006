//! Lease-based leader election (coordination.k8s.io/v1 Lease).
//!
//! Every change to the Lease is a `replace` carrying the resourceVersion that
//! was read, so two agents can never both believe they took it: the loser of
//! a race gets 409 Conflict and reads again. The holder renews every
//! `renew` interval; a standby takes the Lease over only once the record it
//! reads has stayed unchanged for `leaseDurationSeconds` on its own clock
//! (never by comparing `renewTime` with its clock: replicas' clocks differ).
//! The holder's write gate is open only until a margin before its lease
//! could expire, counted from when it sent its last successful renewal; a
//! renewal that does not answer by then is abandoned. A holder that cannot
//! renew in time, or finds another holder, has lost: the gate is closed
//! already, and the caller exits non-zero. See `lease_timing`.
//!
//! Why not `kube-lease-manager` (0.13): it judges expiry by comparing the
//! holder-written `renewTime + duration` with the local wall clock (skew
//! tolerated only up to its `grace`), its API calls carry no deadline (a
//! hung renewal blocks its state lock), and it offers no fence that stops
//! the holder's writes at a local deadline; its durations are whole
//! seconds. Those are exactly the failure modes this module exists for.
//!
//! The Lease also carries the leader's grants digest (annotation
//! [`DIGEST_ANNOTATION`]), written by the same replace that takes or renews
//! it; every read of the Lease tells this replica's [`GrantSet`] what the
//! leader runs with (see `admission::grant_set`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

use crate::admission::grant_set::{DIGEST_ANNOTATION, GrantSet, Leader, leader_of};
use crate::kube_client::WriteGate;
use crate::lease_timing::{Observed, Record, may_take_over, observe, writes_allowed_until};

/// Election settings.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This process's identity (holderIdentity).
    pub identity: String,
    /// How long a lease is valid without renewal.
    pub duration: Duration,
    /// How often the holder renews (and a standby looks): client-go's
    /// retry period.
    pub renew: Duration,
    /// How long after its last successful renewal the holder stops writing
    /// and gives up (capped by `lease_timing::margin`).
    pub renew_deadline: Duration,
}

/// Why leadership ended.
#[derive(Debug, thiserror::Error)]
pub enum LeaseLost {
    /// Another holder took the Lease.
    #[error("lease {0} is now held by {1}")]
    TakenOver(String, String),
    /// Renewal did not succeed within the lease duration.
    #[error("could not renew lease {name} within {seconds}s: {last_error}")]
    RenewTimeout {
        /// Lease name.
        name: String,
        /// The lease duration.
        seconds: u64,
        /// The last error seen.
        last_error: String,
    },
}

/// What one renewal found.
enum Renewal {
    /// The Lease is still this replica's, for another lease duration.
    Renewed,
    /// Someone else holds it (`<deleted>`: nobody, the Lease is gone).
    HeldBy(String),
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn duration_secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

fn record_of(spec: &LeaseSpec) -> Record {
    Record {
        holder: spec.holder_identity.clone().unwrap_or_default(),
        // Compared as stored, never read as a clock (see `lease_timing`).
        renew_time: spec
            .renew_time
            .as_ref()
            .or(spec.acquire_time.as_ref())
            .map(|t| t.0.to_string()),
        duration_seconds: spec.lease_duration_seconds,
    }
}

/// The elector.
#[derive(Clone, Debug)]
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    gate: WriteGate,
    /// What this standby last read, and since when (its own clock).
    observed: Arc<Mutex<Option<Observed>>>,
    /// Publishes this replica's grants digest and learns the leader's.
    grant_set: Option<GrantSet>,
}

impl Elector {
    /// An elector for `config` that opens `gate` while it holds the Lease.
    pub fn new(client: Client, config: LeaseConfig, gate: WriteGate) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            gate,
            observed: Arc::default(),
            grant_set: None,
        }
    }

    /// Publishes `set`'s digest with every take or renewal, and tells it
    /// what each read of the Lease says.
    pub fn with_grant_set(mut self, set: GrantSet) -> Self {
        self.grant_set = Some(set);
        self
    }

    fn observe(&self, leader: Leader) {
        if let Some(set) = &self.grant_set {
            set.observe(leader);
        }
    }

    /// This replica publishes itself as the leader with its digest: called
    /// only after the write carrying the annotation succeeded.
    fn observe_self(&self) {
        if let Some(set) = &self.grant_set {
            set.observe(Leader::Published {
                holder: self.config.identity.clone(),
                digest: set.own().to_string(),
            });
        }
    }

    /// Sets (or, without a grant set, leaves) the digest annotation.
    fn annotate(&self, meta: &mut ObjectMeta) {
        if let Some(set) = &self.grant_set {
            meta.annotations
                .get_or_insert_with(Default::default)
                .insert(DIGEST_ANNOTATION.to_string(), set.own().to_string());
        }
    }

    /// Opens the gate until the lease taken or renewed by the write sent
    /// at `sent` could expire (minus the margin).
    fn held_since(&self, sent: Instant) -> Instant {
        let until = writes_allowed_until(sent, self.config.duration, self.config.renew_deadline);
        self.gate.allow_until(until);
        until
    }

    fn spec_for_me(&self, previous: Option<&LeaseSpec>) -> LeaseSpec {
        let mine = previous
            .and_then(|p| p.holder_identity.as_deref())
            .is_some_and(|h| h == self.config.identity);
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(duration_secs(self.config.duration)),
            acquire_time: if mine {
                previous.and_then(|p| p.acquire_time.clone())
            } else {
                Some(now())
            },
            renew_time: Some(now()),
            lease_transitions: Some(if mine || previous.is_none() {
                transitions
            } else {
                transitions + 1
            }),
            ..Default::default()
        }
    }

    /// One attempt to take or keep the Lease: `Some(until)` when held, the
    /// gate then open until `until`.
    pub async fn try_acquire(&self) -> Result<Option<Instant>, kube::Error> {
        let sent = Instant::now();
        match self.api.get_opt(&self.config.name).await? {
            None => {
                self.observe(Leader::Nobody);
                let mut lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(self.spec_for_me(None)),
                };
                self.annotate(&mut lease.metadata);
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => {
                        self.observe_self();
                        Ok(Some(self.held_since(sent)))
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Some(mut lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                let mine = spec.holder_identity.as_deref() == Some(self.config.identity.as_str());
                let free = {
                    let mut observed = berth_shared::sync::lock(&self.observed);
                    let now = Instant::now();
                    let seen = observe(observed.as_ref(), record_of(&spec), now);
                    let free = may_take_over(&seen, now);
                    *observed = Some(seen);
                    free
                };
                if !mine {
                    // Also when free: a released Lease names no leader.
                    self.observe(leader_of(&lease));
                }
                if !(mine || free) {
                    return Ok(None);
                }
                // Taking the Lease publishes this replica's digest in the
                // same write: no moment where it leads with another's.
                lease.spec = Some(self.spec_for_me(Some(&spec)));
                self.annotate(&mut lease.metadata);
                match self
                    .api
                    .replace(&self.config.name, &PostParams::default(), &lease)
                    .await
                {
                    Ok(_) => {
                        self.observe_self();
                        Ok(Some(self.held_since(sent)))
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits until this process holds the Lease; returns until when its
    /// writes are allowed (the gate is open).
    pub async fn acquire(&self) -> Instant {
        loop {
            // Bounded: a hung attempt must not keep a standby from looking again.
            let attempt = tokio::time::timeout(self.config.duration, self.try_acquire()).await;
            match attempt {
                Ok(Ok(Some(until))) => {
                    tracing::info!(lease = %self.config.name, identity = %self.config.identity, "acquired leadership");
                    return until;
                }
                Ok(Ok(None)) => {
                    tracing::debug!(lease = %self.config.name, "standing by: lease held by another agent");
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "lease acquisition failed"),
                Err(_) => tracing::warn!("lease acquisition did not answer in time"),
            }
            tokio::time::sleep(self.config.renew).await;
        }
    }

    /// Renews until leadership is lost; returns why. Each renewal must
    /// answer before the gate's deadline; when the deadline passes the gate
    /// has closed by itself and this returns.
    pub async fn hold(&self) -> LeaseLost {
        let mut last_error = String::from("no renewal attempted");
        loop {
            let Some(until) = self.gate.until() else {
                return self.timed_out(last_error);
            };
            let wake = (Instant::now() + self.config.renew).min(until);
            tokio::time::sleep_until(wake).await;
            if Instant::now() >= until {
                return self.timed_out(last_error);
            }
            let sent = Instant::now();
            match tokio::time::timeout_at(until, self.renew_once()).await {
                Ok(Ok(Renewal::Renewed)) => {
                    self.held_since(sent);
                }
                Ok(Ok(Renewal::HeldBy(holder))) => {
                    self.gate.close();
                    return LeaseLost::TakenOver(self.config.name.clone(), holder);
                }
                Ok(Err(e)) => {
                    last_error = e.to_string();
                    tracing::warn!(error = %last_error, "lease renewal failed");
                }
                Err(_) => {
                    return self.timed_out(format!(
                        "renewal sent {:?} ago has not answered",
                        sent.elapsed()
                    ));
                }
            }
        }
    }

    fn timed_out(&self, last_error: String) -> LeaseLost {
        self.gate.close();
        LeaseLost::RenewTimeout {
            name: self.config.name.clone(),
            seconds: self.config.duration.as_secs(),
            last_error,
        }
    }

    /// One renewal: renewed, or someone else holds the Lease.
    async fn renew_once(&self) -> Result<Renewal, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(Renewal::HeldBy("<deleted>".to_string()));
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if holder != self.config.identity {
            self.observe(leader_of(&lease));
            return Ok(Renewal::HeldBy(holder));
        }
        lease.spec = Some(self.spec_for_me(Some(&spec)));
        // Re-asserted with every renewal: a value planted by someone else
        // lasts one renew interval at most.
        self.annotate(&mut lease.metadata);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observe_self();
                Ok(Renewal::Renewed)
            }
            // Someone wrote in between: read again next round.
            Err(kube::Error::Api(s)) if s.code == 409 => Err(kube::Error::Api(s)),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up on graceful shutdown so a standby takes over at once.
    pub async fn release(&self) {
        self.gate.close();
        // Bounded: shutdown must not hang on an unreachable apiserver (the
        // lease then simply expires).
        if tokio::time::timeout(self.config.duration, self.release_once())
            .await
            .is_err()
        {
            tracing::warn!("releasing the lease did not answer in time");
        }
    }

    async fn release_once(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.renew_time = None;
        spec.acquire_time = None;
        lease.spec = Some(spec);
        // No leader, no published grant set until the next one takes it.
        if let Some(a) = lease.metadata.annotations.as_mut() {
            a.remove(DIGEST_ANNOTATION);
        }
        self.observe(Leader::Nobody);
        if let Err(e) = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %e, "releasing the lease failed");
        }
    }
}
