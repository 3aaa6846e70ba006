//! The allocator's own account of the agent's memory (issue 32).
//!
//! Resident memory alone cannot tell live data from what the allocator
//! keeps: pages freed but not yet handed back (decaying), slabs held by a
//! few live objects (fragmentation), its own metadata. jemalloc counts
//! each, and `/metrics` exports them so that an operator (and
//! `berth-bench`) can say which one grew. Read at every scrape, after
//! advancing jemalloc's statistics epoch; a build with glibc's malloc
//! (`--features system-allocator`, for heap profiles) exports none.

/// One figure of the allocator's, in bytes, and its `state` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figure {
    /// The `state` label: `allocated`, `active`, `resident`, `metadata`,
    /// `mapped` or `retained`.
    pub state: &'static str,
    /// Bytes.
    pub bytes: u64,
}

/// jemalloc's figures now, or none when it is not the allocator (or it
/// refused to answer, which leaves the last scrape's values).
#[cfg(not(feature = "system-allocator"))]
pub fn figures() -> Vec<Figure> {
    use tikv_jemalloc_ctl::{epoch, stats};
    // The statistics are cached until the epoch advances.
    if epoch::advance().is_err() {
        return Vec::new();
    }
    let read = [
        ("allocated", stats::allocated::read()),
        ("active", stats::active::read()),
        ("resident", stats::resident::read()),
        ("metadata", stats::metadata::read()),
        ("mapped", stats::mapped::read()),
        ("retained", stats::retained::read()),
    ];
    read.into_iter()
        .filter_map(|(state, bytes)| {
            Some(Figure {
                state,
                bytes: u64::try_from(bytes.ok()?).unwrap_or(u64::MAX),
            })
        })
        .collect()
}

/// glibc's malloc keeps no such account.
#[cfg(feature = "system-allocator")]
pub fn figures() -> Vec<Figure> {
    Vec::new()
}

#[cfg(all(test, not(feature = "system-allocator")))]
mod tests {
    use super::*;

    fn bytes(figures: &[Figure], state: &str) -> u64 {
        figures
            .iter()
            .find(|f| f.state == state)
            .unwrap_or_else(|| panic!("no {state} figure in {figures:?}"))
            .bytes
    }

    /// The test binary links jemalloc too (the global allocator is set in
    /// main.rs, which `cargo test` compiles): a block held across a new
    /// epoch is counted, what is live lies in active pages, and those are
    /// resident. (Other tests run and free beside this one, so the check
    /// is on the total, not on a difference.)
    #[test]
    fn jemalloc_accounts_for_what_is_held() {
        let held = vec![7u8; 64 << 20];
        let now = figures();
        assert_eq!(now.len(), 6, "{now:?}");
        assert!(bytes(&now, "allocated") >= 64 << 20, "{now:?}");
        assert!(bytes(&now, "allocated") <= bytes(&now, "active"), "{now:?}");
        assert!(bytes(&now, "active") <= bytes(&now, "resident"), "{now:?}");
        assert!(bytes(&now, "metadata") > 0, "{now:?}");
        assert_eq!(
            held.iter().map(|&b| u64::from(b)).sum::<u64>(),
            7 * (64 << 20)
        );
    }
}
