//! The connection as the model knows it: the kubeconfig context, the
//! namespace scope, the generation that tells current watch events from
//! late ones, and a `:ctx` switch in flight. Switching (context or scope)
//! starts the data over; the connection itself lives on the I/O side and
//! passes through here only as a [`Handover`].

use crate::store::ObjKey;

use super::App;
use super::data::Data;
use super::derived::Derived;
use super::msg::{Effect, Handover};
use super::screen::{ListView, Scope};
use super::viewport::Viewport;

/// Namespace and name of the agent's Lease unless configured otherwise.
pub const DEFAULT_AGENT_LEASE: (&str, &str) = ("berth-system", "berth-agent");

/// The connection's part of the app state.
#[derive(Debug)]
pub struct Session {
    pub context: String,
    /// Contexts of the kubeconfig (for `:ctx` completion).
    pub contexts: Vec<String>,
    pub scope: Scope,
    pub read_only: bool,
    /// `(namespace, name)` of the agent's leader-election Lease.
    pub agent_lease: ObjKey,
    /// A `:ctx` switch in flight (the context asked for).
    pub switching: Option<String>,
    /// Bumped on every context/namespace switch: watch events of older
    /// connections still in flight are dropped.
    pub generation: u64,
}

impl Session {
    /// Connected to `context`, watching `scope`.
    pub fn new(context: String, scope: Scope) -> Self {
        Session {
            context,
            contexts: Vec::new(),
            scope,
            read_only: false,
            agent_lease: (
                DEFAULT_AGENT_LEASE.0.to_string(),
                DEFAULT_AGENT_LEASE.1.to_string(),
            ),
            switching: None,
            generation: 0,
        }
    }
}

/// Switching.
impl App {
    /// `:ctx`: nothing changes until the new context answers, so a context
    /// that fails leaves the console on the old one, usable.
    pub(super) fn switch_context(&mut self, context: &str) -> Vec<Effect> {
        self.session.switching = Some(context.to_string());
        vec![Effect::Connect {
            context: context.to_string(),
        }]
    }

    /// The context asked for answered: adopt its connection, unless a
    /// later `:ctx` superseded it (then the connection is dropped).
    pub(super) fn connected(
        &mut self,
        context: String,
        contexts: Vec<String>,
        conn: Handover,
    ) -> Vec<Effect> {
        if self.session.switching.as_deref() != Some(context.as_str()) {
            return Vec::new();
        }
        self.session.switching = None;
        self.session.context = context;
        self.session.contexts = contexts;
        // The namespace scope is kept, as before the switch.
        self.reset_data();
        self.ui.flash = Some(format!(
            "switched to {}",
            berth_shared::sanitize::short(&self.session.context)
        ));
        vec![
            Effect::Adopt {
                conn,
                scope: self.session.scope.clone(),
                generation: self.session.generation,
            },
            self.watch_effect(),
        ]
    }

    /// The context asked for could not be used: say so, stay.
    pub(super) fn switch_failed(&mut self, context: &str, error: &str) -> Vec<Effect> {
        if self.session.switching.as_deref() == Some(context) {
            self.session.switching = None;
        }
        self.ui.dirty = true;
        self.ui.flash = Some(format!(
            "cannot switch to {}: {}; still on {}",
            berth_shared::sanitize::short(context),
            berth_shared::sanitize::short(error),
            berth_shared::sanitize::short(&self.session.context)
        ));
        Vec::new()
    }

    /// Watches another namespace (or all) with the same connection.
    pub(super) fn switch_scope(&mut self, scope: Scope) -> Vec<Effect> {
        self.session.scope = scope.clone();
        self.reset_data();
        if self.current_list() == Some(ListView::Namespaces) && self.ui.screens.len() > 1 {
            self.ui.screens.pop();
        }
        vec![
            Effect::Rescope {
                scope,
                generation: self.session.generation,
            },
            self.watch_effect(),
        ]
    }

    /// Forgets every object and watch (after a context or scope switch).
    pub fn reset_data(&mut self) {
        self.session.generation += 1;
        self.data = Data::default();
        self.derived = Derived::default();
        self.ui.details = None;
        for l in &mut self.ui.lists {
            l.selected = 0;
        }
        self.ui.viewport.offsets = Viewport::default().offsets;
        self.ui.dirty = true;
    }

    /// Every namespace of the Namespace list and seen in the store (for
    /// `:ns` completion).
    pub fn namespaces(&self) -> Vec<String> {
        let store = &self.data.store;
        let mut set: std::collections::BTreeSet<String> = Default::default();
        set.extend(store.namespaces.keys().map(|k| k.1.clone()));
        set.extend(store.runtimes.keys().map(|k| k.0.clone()));
        set.extend(store.pods.keys().map(|k| k.0.clone()));
        set.extend(store.deployments.keys().map(|k| k.0.clone()));
        if let Scope::Namespace(n) = &self.session.scope {
            set.insert(n.clone());
        }
        set.remove("");
        set.into_iter().collect()
    }
}
