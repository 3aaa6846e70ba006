//! The layout of the last frame. Drawing measures it and returns it; the
//! loop hands it to the model as [`super::Msg::Drawn`], so drawing never
//! writes into the model and the keys that page or scroll read it like any
//! other state.

/// What the last frame measured: drawing computes it, the model keeps it
/// for keys that page or scroll (`run` feeds it back as
/// [`super::Msg::Drawn`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Viewport {
    /// Rows of the table or text area (for paging).
    pub page: usize,
    /// Largest useful scroll of the details, rollout, plan or review
    /// screen (content lines minus visible lines).
    pub scroll_max: usize,
    /// Largest useful help scroll.
    pub help_scroll_max: usize,
    /// First visible row of each list view ([`super::ListView::index`]): drawing
    /// moves it only as far as keeps the selection in view.
    pub offsets: [usize; 5],
}

impl Default for Viewport {
    /// Before the first frame: a typical page, scrolling unbounded.
    fn default() -> Self {
        Viewport {
            page: 20,
            scroll_max: usize::MAX,
            help_scroll_max: 0,
            offsets: [0; 5],
        }
    }
}
