//! What the canaries saw, as the leader's canary scheduler
//! (`crate::canary::scheduler`) last published it: read by the Runtime
//! reconcile (`HandlerReady`) and the grants publisher
//! (`status.attestation`), and the Runtimes to reconcile when a class's
//! failing nodes change.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};

use berth_shared::api::{AttestationState, HandlerAttestation, Runtime};
use berth_shared::attest::{Cadence, ClassVerdicts, Policy};
use berth_shared::decide::Decision;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use kube::runtime::reflector::ObjectRef;

/// What the canaries showed, as last published.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Published {
    /// The policy in force (`None` until the first pass).
    pub policy: Option<Policy>,
    /// The cadence it keeps (the effective period).
    pub cadence: Cadence,
    /// Every granted class that can be attested, by name.
    pub classes: BTreeMap<String, ClassVerdicts>,
}

impl Published {
    /// The verdicts of the class a decision grants.
    pub fn for_decision(&self, decision: &Decision) -> Option<&ClassVerdicts> {
        match decision {
            Decision::Granted { runtime_class, .. } => self.classes.get(runtime_class),
            _ => None,
        }
    }

    /// A grant's `status.attestation` for `class` (`None`: the class is
    /// not attested: missing, another handler, unsupported, or before the
    /// first pass).
    pub fn status_of(&self, class: &str) -> Option<HandlerAttestation> {
        let policy = self.policy.as_ref()?;
        self.classes
            .get(class)
            .map(|v| v.status(policy, &self.cadence))
    }

    /// The (class, node) pairs whose canary fails.
    fn failing(&self) -> BTreeSet<(String, String)> {
        self.classes
            .values()
            .flat_map(|v| {
                v.nodes
                    .iter()
                    .filter(|(_, n)| n.state == AttestationState::Failing)
                    .map(|(node, n)| (v.class.clone(), format!("{node}\0{}", n.message)))
            })
            .collect()
    }
}

/// The verdicts, shared by the canary scheduler (which writes them), the
/// reconcile and the grants publisher (which read them).
pub struct Attestations {
    published: RwLock<Arc<Published>>,
    /// Wakes the Runtimes whose class's failing nodes changed.
    wake: UnboundedSender<ObjectRef<Runtime>>,
    /// The other end, until the controller takes it.
    woken: Mutex<Option<UnboundedReceiver<ObjectRef<Runtime>>>>,
}

impl Attestations {
    /// The shared verdicts.
    pub fn new() -> Arc<Self> {
        let (wake, woken) = unbounded();
        Arc::new(Attestations {
            published: RwLock::new(Arc::new(Published::default())),
            wake,
            woken: Mutex::new(Some(woken)),
        })
    }

    /// The stream of Runtimes to reconcile when their class's failing
    /// nodes change (for the controller's `reconcile_on`); once.
    pub fn woken(&self) -> Option<UnboundedReceiver<ObjectRef<Runtime>>> {
        berth_shared::sync::lock(&self.woken).take()
    }

    /// The verdicts as last published.
    pub fn snapshot(&self) -> Arc<Published> {
        berth_shared::sync::read(&self.published).clone()
    }

    /// Publishes `next`; returns whether anything changed, and the classes
    /// whose failing nodes (or what they fail with) changed.
    pub fn publish(&self, next: Published) -> (bool, BTreeSet<String>) {
        let mut slot = berth_shared::sync::write(&self.published);
        if **slot == next {
            return (false, BTreeSet::new());
        }
        let (before, after) = (slot.failing(), next.failing());
        let classes = before
            .symmetric_difference(&after)
            .map(|(class, _)| class.clone())
            .collect();
        *slot = Arc::new(next);
        (true, classes)
    }

    /// Reconciles `runtime` (its HandlerReady reads the verdicts).
    pub fn wake(&self, runtime: ObjectRef<Runtime>) {
        let _ = self.wake.unbounded_send(runtime);
    }
}
