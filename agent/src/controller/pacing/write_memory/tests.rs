//! The write memory: a write is not sent twice while the cache lags, and
//! is forgotten once it is old.

use std::time::{Duration, Instant};

use super::{REMEMBER_WRITES_FOR, WriteMemory};

#[test]
fn a_write_is_not_sent_twice_from_the_same_cached_version() {
    let m = WriteMemory::default();
    assert!(!m.already_sent("Deployment/web/ns", Some("7"), "h1"));
    m.sent("Deployment/web/ns", Some("7"), None, "h1");
    assert!(m.already_sent("Deployment/web/ns", Some("7"), "h1"));
    // The cache caught up (new version), or the content changed: send.
    assert!(!m.already_sent("Deployment/web/ns", Some("8"), "h1"));
    assert!(!m.already_sent("Deployment/web/ns", Some("7"), "h2"));
    // Created objects (no cached version) are never skipped, but the
    // memory says they were created: a cache still lacking one is read
    // before anything is sent again.
    assert!(!m.created("ConfigMap/c/ns"));
    m.sent("ConfigMap/c/ns", None, Some("3"), "h");
    assert!(!m.already_sent("ConfigMap/c/ns", None, "h"));
    assert!(m.created("ConfigMap/c/ns"));
    assert!(!m.created("Deployment/web/ns"), "updated, not created");
    // Once the cache shows the created object, it is compared as usual.
    assert!(!m.already_sent("ConfigMap/c/ns", Some("3"), "h"));
}

#[test]
fn a_version_between_the_write_and_its_result_is_the_cache_lagging() {
    // Sent from 7, the write produced 10; another controller's status
    // update made 8 in between. A reconcile on 8 must not send again.
    let m = WriteMemory::default();
    m.sent("PodDisruptionBudget/web/ns", Some("7"), Some("10"), "h");
    assert!(m.already_sent("PodDisruptionBudget/web/ns", Some("8"), "h"));
    assert!(m.already_sent("PodDisruptionBudget/web/ns", Some("9"), "h"));
    // The cache shows the write (or anything after it): decide afresh.
    assert!(!m.already_sent("PodDisruptionBudget/web/ns", Some("10"), "h"));
    assert!(!m.already_sent("PodDisruptionBudget/web/ns", Some("11"), "h"));
    // Versions that are not integers fall back to the exact check.
    m.sent("Service/web/ns", Some("a"), Some("c"), "h");
    assert!(m.already_sent("Service/web/ns", Some("a"), "h"));
    assert!(!m.already_sent("Service/web/ns", Some("b"), "h"));
}

#[test]
fn old_writes_are_forgotten_and_recent_ones_kept() {
    let m = WriteMemory::default();
    m.sent("Deployment/web/ns", Some("7"), Some("9"), "h");
    m.sent("ConfigMap/c/ns", None, Some("3"), "h");
    // Younger than REMEMBER_WRITES_FOR: kept, still deduplicated.
    let sent = Instant::now();
    m.forget_old(sent);
    assert_eq!(m.len(), 2);
    assert!(m.already_sent("Deployment/web/ns", Some("7"), "h"));
    assert!(m.created("ConfigMap/c/ns"));
    // As old as that: both forgotten; the same write would be sent
    // again (an identical apply), a create too.
    m.forget_old(sent + REMEMBER_WRITES_FOR + Duration::from_millis(1));
    assert_eq!(m.len(), 0);
    assert!(!m.already_sent("Deployment/web/ns", Some("7"), "h"));
    assert!(!m.created("ConfigMap/c/ns"));
}
