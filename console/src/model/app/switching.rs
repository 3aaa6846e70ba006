//! Switching contexts or scope: nothing changes until a new context
//! answers; then the data starts over (the session itself is
//! [`crate::model::Session`]).

use super::App;
use crate::model::derived::Derived;
use crate::model::fleet::Cluster;
use crate::model::msg::{Effect, Handover};
use crate::model::screen::{ListView, Scope, Screen};
use crate::model::viewport::Viewport;
use crate::store::ClusterId;

/// Switching.
impl App {
    /// `:ctx a[,b…]`: nothing changes until a new context answers, so a
    /// switch where none does leaves the console on the old ones, usable.
    pub(in crate::model) fn switch_contexts(&mut self, contexts: Vec<String>) -> Vec<Effect> {
        self.session.switching = Some(contexts.clone());
        vec![Effect::Connect { contexts }]
    }

    /// The contexts asked for answered: adopt their connections, one
    /// cluster each, unless a later `:ctx` superseded the switch (then the
    /// connections are dropped).
    pub(in crate::model) fn connected(
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
    pub(in crate::model) fn switch_failed(&mut self, asked: &[String], error: &str) -> Vec<Effect> {
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
    pub(in crate::model) fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
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
            self.ui.screens.push(Screen::List(ListView::Runtimes));
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
