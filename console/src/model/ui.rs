//! The UI state: the navigation stack, per-list selection, sort and
//! filter, the input mode, overlays (help, a retirement review), the flash
//! line and the layout the last frame measured ([`Viewport`]).

use crate::retire::Review;
use crate::store::{ClusterId, Kind, ObjKey, Object};

use super::App;
use super::msg::{Effect, Origin};
use super::screen::{ListView, Screen};
use super::viewport::Viewport;

/// The whole object read for a Details screen: its cluster, kind and key,
/// and the object (`None`: it does not exist) or why it could not be read.
pub type Fetched = (ClusterId, Kind, ObjKey, Result<Option<Object>, String>);

/// A retirement review open in the TUI.
#[derive(Clone, Debug)]
pub enum ReviewState {
    /// Permission check, reads and dry-run in flight.
    Loading {
        /// Which request ([`Effect::Review`]): only its answer is shown.
        id: u64,
        /// The cluster asked.
        cluster: ClusterId,
        /// The action's title.
        title: String,
        /// `NAMESPACE/NAME`.
        target: String,
    },
    /// Shown; the user types the confirmation.
    Ready {
        review: Box<Review>,
        /// Typed so far.
        typed: String,
    },
    /// Confirmed; being sent.
    Running { review: Box<Review>, typed: String },
    /// The review could not be made (RBAC, not found, …).
    Failed {
        cluster: ClusterId,
        title: String,
        target: String,
        error: String,
    },
}

/// Selection, sort and filter of one list view (its scroll offset is
/// layout: [`Viewport::offsets`]).
#[derive(Clone, Debug, Default)]
pub struct ListState {
    /// Selected position in `visible`.
    pub selected: usize,
    /// Selected column (for sorting).
    pub column: usize,
    /// `(column, descending)`.
    pub sort: Option<(usize, bool)>,
    /// Filter text.
    pub filter: String,
}

/// Input mode.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Keys navigate.
    #[default]
    Normal,
    /// `:` command line.
    Command {
        /// Typed text (without the colon).
        input: String,
        /// Candidates of the last Tab and which one is shown.
        completion: Option<(Vec<String>, usize)>,
    },
    /// `/` filter line (edits the current list's filter live).
    Filter,
}

/// The UI state.
#[derive(Debug)]
pub struct Ui {
    /// Navigation stack; never empty, the last is shown.
    pub screens: Vec<Screen>,
    /// Per list view state, indexed by [`ListView`].
    pub lists: [ListState; 5],
    pub mode: Mode,
    pub show_help: bool,
    /// First line of help shown (help scrolls when it does not fit).
    pub help_scroll: usize,
    /// Scroll of the details / rollout screen.
    pub scroll: usize,
    /// The selected cell of the handler matrix: (class row, node group).
    pub matrix_cell: (usize, usize),
    /// A one-line message (errors of commands).
    pub flash: Option<String>,
    /// The retirement review shown, if any.
    pub review: Option<ReviewState>,
    /// The number of the last review asked for.
    pub reviews: u64,
    /// The whole object the Details screen shows, once fetched (kinds the
    /// store keeps reduced), or why it could not be read.
    pub details: Option<Fetched>,
    /// Draw without colours (`--no-color`, `NO_COLOR`): emphasis stays.
    pub no_color: bool,
    pub quit: bool,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// What the last frame measured.
    pub viewport: Viewport,
}

impl Default for Ui {
    fn default() -> Self {
        Ui {
            screens: vec![Screen::List(ListView::Runtimes)],
            lists: Default::default(),
            mode: Mode::Normal,
            show_help: false,
            help_scroll: 0,
            scroll: 0,
            matrix_cell: (0, 0),
            flash: None,
            review: None,
            reviews: 0,
            details: None,
            no_color: false,
            quit: false,
            dirty: true,
            viewport: Viewport::default(),
        }
    }
}

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

    pub(super) fn list_mut(&mut self, v: ListView) -> &mut ListState {
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
    pub(super) fn fetch_details(&mut self) -> Option<Effect> {
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
