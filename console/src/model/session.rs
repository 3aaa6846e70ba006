//! The connections as the model knows them: the kubeconfig contexts shown
//! (one cluster each, see [`super::fleet`]), the namespace scope, the
//! generation that tells current watch events from late ones, and a `:ctx`
//! switch in flight. Switching (contexts or scope) starts the data over;
//! the connections themselves live on the I/O side and pass through here
//! only as [`Handover`]s.

use crate::store::{ClusterId, ObjKey};

use super::App;
use super::derived::Derived;
use super::fleet::Cluster;
use super::msg::{Effect, Handover};
use super::screen::{ListView, Scope};
use super::viewport::Viewport;

/// Namespace and name of the agent's Lease unless configured otherwise.
pub const DEFAULT_AGENT_LEASE: (&str, &str) = ("berth-system", "berth-agent");

/// The connections' part of the app state.
#[derive(Debug)]
pub struct Session {
    /// Contexts of the kubeconfig (for `:ctx` completion).
    pub contexts: Vec<String>,
    pub scope: Scope,
    pub read_only: bool,
    /// `(namespace, name)` of the agent's leader-election Lease (the same
    /// in every cluster).
    pub agent_lease: ObjKey,
    /// A `:ctx` switch in flight (the contexts asked for).
    pub switching: Option<Vec<String>>,
    /// Bumped on every context/namespace switch: watch events of older
    /// connections still in flight are dropped.
    pub generation: u64,
    /// Groups of clusters the operator declared to run the same grants
    /// file (`--fleet-grants-same`, or a label on `--context`): a digest
    /// that differs within one is a finding.
    pub same_grants: Vec<Vec<ClusterId>>,
}

impl Session {
    /// Watching `scope`.
    pub fn new(scope: Scope) -> Self {
        Session {
            contexts: Vec::new(),
            scope,
            read_only: false,
            agent_lease: (
                DEFAULT_AGENT_LEASE.0.to_string(),
                DEFAULT_AGENT_LEASE.1.to_string(),
            ),
            switching: None,
            generation: 0,
            same_grants: Vec::new(),
        }
    }
}

/// `a,b,c` as contexts: trimmed, empty parts dropped.
pub fn context_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// Switching.
impl App {
    /// `:ctx a[,b…]`: nothing changes until a new context answers, so a
    /// switch where none does leaves the console on the old ones, usable.
    pub(super) fn switch_contexts(&mut self, contexts: Vec<String>) -> Vec<Effect> {
        self.session.switching = Some(contexts.clone());
        vec![Effect::Connect { contexts }]
    }

    /// The contexts asked for answered: adopt their connections, one
    /// cluster each, unless a later `:ctx` superseded the switch (then the
    /// connections are dropped).
    pub(super) fn connected(
        &mut self,
        asked: Vec<String>,
        contexts: Vec<String>,
        conns: Vec<(ClusterId, Handover)>,
        problems: Vec<(String, String)>,
    ) -> Vec<Effect> {
        if self.session.switching.as_ref() != Some(&asked) || conns.is_empty() {
            return Vec::new();
        }
        self.session.switching = None;
        self.session.contexts = contexts;
        let was_fleet = self.fleet();
        let ids: Vec<ClusterId> = conns.iter().map(|(id, _)| id.clone()).collect();
        self.clusters = ids.iter().cloned().map(Cluster::new).collect();
        self.session
            .same_grants
            .retain(|group| group.iter().all(|c| ids.contains(c)));
        // The namespace scope is kept, as before the switch.
        self.reset_data();
        self.shift_columns(was_fleet);
        // A review of the old connections cannot be carried out any more.
        self.ui.review = None;
        let mut flash = format!("switched to {}", self.contexts_label());
        for (context, error) in &problems {
            flash.push_str(&format!(
                "; {}: {}",
                berth_shared::sanitize::short(context),
                berth_shared::sanitize::short(error)
            ));
        }
        self.ui.flash = Some(flash);
        let mut effects = vec![Effect::Adopt {
            conns,
            scope: self.session.scope.clone(),
            generation: self.session.generation,
        }];
        effects.extend(self.watch_effects());
        effects
    }

    /// No context asked for could be used: say so, stay.
    pub(super) fn switch_failed(&mut self, asked: &[String], error: &str) -> Vec<Effect> {
        if self.session.switching.as_deref() == Some(asked) {
            self.session.switching = None;
        }
        self.ui.dirty = true;
        self.ui.flash = Some(format!(
            "cannot switch to {}: {}; still on {}",
            berth_shared::sanitize::short(&asked.join(",")),
            berth_shared::sanitize::short(error),
            self.contexts_label()
        ));
        Vec::new()
    }

    /// Watches another namespace (or all) with the same connections.
    pub(super) fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
        self.session.scope = scope.clone();
        self.reset_data();
        if self.current_list() == Some(ListView::Namespaces) && self.ui.screens.len() > 1 {
            self.ui.screens.pop();
        }
        let mut effects = vec![Effect::Rescope {
            scope,
            generation: self.session.generation,
        }];
        effects.extend(self.watch_effects());
        effects
    }

    /// Forgets every object and watch of every cluster (after a context or
    /// scope switch). Screens that belong to a cluster no longer shown
    /// are closed.
    pub fn reset_data(&mut self) {
        self.session.generation += 1;
        let ids = self.cluster_ids();
        for c in &mut self.clusters {
            *c = Cluster::new(c.id.clone());
        }
        self.derived = Derived::for_clusters(&ids);
        self.ui
            .screens
            .retain(|s| s.cluster().is_none_or(|c| ids.contains(c)));
        if self.ui.screens.is_empty() {
            self.ui
                .screens
                .push(super::Screen::List(ListView::Runtimes));
        }
        self.ui.details = None;
        for l in &mut self.ui.lists {
            l.selected = 0;
        }
        self.ui.viewport.offsets = Viewport::default().offsets;
        self.ui.dirty = true;
    }

    /// The `CLUSTER` column came or went: the selected and sorted columns
    /// stay on the same column (a sort by cluster ends with the column).
    fn shift_columns(&mut self, was_fleet: bool) {
        let fleet = self.fleet();
        if fleet == was_fleet {
            return;
        }
        for l in &mut self.ui.lists {
            if fleet {
                l.column += 1;
                l.sort = l.sort.map(|(c, d)| (c + 1, d));
            } else {
                l.column = l.column.saturating_sub(1);
                l.sort = l.sort.and_then(|(c, d)| c.checked_sub(1).map(|c| (c, d)));
            }
        }
    }

    /// Every namespace of the Namespace lists and seen in the stores (for
    /// `:ns` completion).
    pub fn namespaces(&self) -> Vec<String> {
        let mut set: std::collections::BTreeSet<String> = Default::default();
        for c in &self.clusters {
            let store = &c.data.store;
            set.extend(store.namespaces.keys().map(|k| k.1.clone()));
            set.extend(store.runtimes.keys().map(|k| k.0.clone()));
            set.extend(store.pods.keys().map(|k| k.0.clone()));
            set.extend(store.deployments.keys().map(|k| k.0.clone()));
        }
        if let Scope::Namespace(n) = &self.session.scope {
            set.insert(n.clone());
        }
        set.remove("");
        set.into_iter().collect()
    }
}
