//! The UI state: the navigation stack, per-list selection, sort and
//! filter, the input mode, overlays (help, a retirement review), the flash
//! line and the layout the last frame measured ([`Viewport`]).

use crate::retire::Review;
use crate::store::{ClusterId, Kind, ObjKey, Object};

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
