//! Navigation: the screen shown, the stack, each list's selection and
//! what opening a row fetches (the UI state itself is
//! [`crate::model::Ui`]).

use super::App;
use crate::model::msg::{Effect, Origin};
use crate::model::screen::{ListView, Screen};
use crate::model::ui::ListState;

/// Navigation.
impl App {
    /// The screen shown.
    pub fn screen(&self) -> &Screen {
        // `screens` is never empty; fall back to the first view anyway.
        self.ui
            .screens
            .last()
            .unwrap_or(&Screen::List(ListView::Runtimes))
    }

    /// The list state of a view.
    pub fn list(&self, v: ListView) -> &ListState {
        &self.ui.lists[v.index()]
    }

    pub(in crate::model) fn list_mut(&mut self, v: ListView) -> &mut ListState {
        &mut self.ui.lists[v.index()]
    }

    /// The list view shown, if the screen is one.
    pub fn current_list(&self) -> Option<ListView> {
        match self.screen() {
            Screen::List(v) => Some(*v),
            _ => None,
        }
    }

    /// Pushes a screen (or replaces the top for list views) and asks for
    /// its watches.
    pub fn open(&mut self, s: Screen) -> Vec<Effect> {
        self.ui.scroll = 0;
        match s {
            // The namespace picker opens on top: Esc goes back to the view.
            Screen::List(ListView::Namespaces) => {
                if self.screen() != &s {
                    self.ui.screens.push(s);
                }
            }
            Screen::List(_) => {
                self.ui.screens.clear();
                self.ui.screens.push(s);
            }
            other => {
                if self.screen() != &other {
                    self.ui.screens.push(other);
                }
            }
        }
        self.ui.dirty = true;
        let mut effects = self.watch_effects();
        effects.extend(self.fetch_details());
        effects
    }

    /// Asks for the whole object of the Details screen shown, if its kind
    /// is kept reduced in the store.
    pub(in crate::model) fn fetch_details(&mut self) -> Option<Effect> {
        match self.screen() {
            Screen::Details(cluster, kind, key) if crate::store::compact::compacted(*kind) => {
                let (cluster, kind, key) = (cluster.clone(), *kind, key.clone());
                if self
                    .ui
                    .details
                    .as_ref()
                    .is_none_or(|d| (&d.0, d.1, &d.2) != (&cluster, kind, &key))
                {
                    self.ui.details = None;
                }
                let origin = Origin {
                    cluster,
                    generation: self.session.generation,
                };
                Some(Effect::Fetch(origin, kind, key))
            }
            _ => None,
        }
    }
}
