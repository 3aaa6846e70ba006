//! Lease-based leader election (coordination.k8s.io/v1 Lease).
//!
//! Every change to the Lease is a `replace` carrying the resourceVersion that
//! was read, so two agents can never both believe they took it: the loser of
//! a race gets 409 Conflict and reads again. The holder renews every
//! `renew` interval; a standby takes the Lease over only when
//! `renewTime + leaseDurationSeconds` has passed. A holder that cannot renew
//! within the lease duration, or finds another holder, has lost: the caller
//! closes the write gate and exits non-zero.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

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
    /// How often the holder renews.
    pub renew: Duration,
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

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn duration_secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

fn expired(spec: &LeaseSpec) -> bool {
    let Some(renewed) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let secs = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    renewed.0 + SignedDuration::from_secs(secs) < Timestamp::now()
}

/// The elector.
#[derive(Clone, Debug)]
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
}

impl Elector {
    /// An elector for `config`.
    pub fn new(client: Client, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
        }
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

    /// One attempt to take or keep the Lease. `Ok(true)` when held.
    pub async fn try_acquire(&self) -> Result<bool, kube::Error> {
        match self.api.get_opt(&self.config.name).await? {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(self.spec_for_me(None)),
                };
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
            Some(mut lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                let holder = spec.holder_identity.as_deref().unwrap_or_default();
                let mine = holder == self.config.identity;
                if !(mine || holder.is_empty() || expired(&spec)) {
                    return Ok(false);
                }
                lease.spec = Some(self.spec_for_me(Some(&spec)));
                match self
                    .api
                    .replace(&self.config.name, &PostParams::default(), &lease)
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits until this process holds the Lease.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire().await {
                Ok(true) => {
                    tracing::info!(lease = %self.config.name, identity = %self.config.identity, "acquired leadership");
                    return;
                }
                Ok(false) => {
                    tracing::debug!(lease = %self.config.name, "standing by: lease held by another agent");
                }
                Err(e) => tracing::warn!(error = %e, "lease acquisition failed"),
            }
            tokio::time::sleep(self.config.renew).await;
        }
    }

    /// Renews until leadership is lost; returns why.
    pub async fn hold(&self) -> LeaseLost {
        let mut last_success = Instant::now();
        loop {
            tokio::time::sleep(self.config.renew).await;
            let last_error = match self.renew_once().await {
                Ok(Ok(())) => {
                    last_success = Instant::now();
                    continue;
                }
                Ok(Err(holder)) => return LeaseLost::TakenOver(self.config.name.clone(), holder),
                Err(e) => e.to_string(),
            };
            tracing::warn!(error = %last_error, "lease renewal failed");
            // Give up a little before the lease runs out, so a standby
            // never takes over while we still think we lead.
            if last_success.elapsed() + self.config.renew >= self.config.duration {
                return LeaseLost::RenewTimeout {
                    name: self.config.name.clone(),
                    seconds: self.config.duration.as_secs(),
                    last_error,
                };
            }
        }
    }

    /// `Ok(Ok(()))` renewed; `Ok(Err(holder))` someone else holds it.
    async fn renew_once(&self) -> Result<Result<(), String>, kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(Err("<deleted>".to_string()));
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if holder != self.config.identity {
            return Ok(Err(holder));
        }
        lease.spec = Some(self.spec_for_me(Some(&spec)));
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Ok(())),
            // Someone wrote in between: read again next round.
            Err(kube::Error::Api(s)) if s.code == 409 => Err(kube::Error::Api(s)),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up on graceful shutdown so a standby takes over at once.
    pub async fn release(&self) {
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
        if let Err(e) = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %e, "releasing the lease failed");
        }
    }
}
