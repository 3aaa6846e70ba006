//! Reading a peer's screen: when its view is complete.

/// The row count in a k9s table's title, `RESOURCE(all)[N]` (k9s writes
/// thousands with commas: `pods(all)[20,000]`), when the screen shows the
/// all-namespaces view of `resource`. k9s counts the rows its table holds,
/// so the count equals the cluster's only once every object is on it.
pub fn k9s_count(screen: &str, resource: &str) -> Option<usize> {
    count_after(screen, &format!(" {resource}(all)["))
}

/// The row count in a kdash table's title, `Title (ns: all) [N]`, when
/// the screen shows that table for every namespace. kdash counts the rows
/// its table holds, and replaces them only once a LIST has returned, so
/// the count equals the cluster's once every object is on it.
pub fn kdash_count(screen: &str, title: &str) -> Option<usize> {
    count_after(screen, &format!(" {title} (ns: all) ["))
}

/// The count that follows `heading` up to `]` on the first line holding
/// it.
fn count_after(screen: &str, heading: &str) -> Option<usize> {
    screen.lines().find_map(|line| {
        let (_, rest) = line.split_once(heading)?;
        let (count, _) = rest.split_once(']')?;
        parse_count(count)
    })
}

/// A count as a peer writes it: digits, perhaps with thousands' commas.
fn parse_count(count: &str) -> Option<usize> {
    let digits: String = count.chars().filter(|c| *c != ',').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A k9s v0.50.16 screen (160×50, tmux capture-pane) on the
    /// all-namespaces pods view of a local cluster holding 8 pods, started
    /// as `berth-bench --peers` starts it, once it showed every pod.
    const FIXTURE_PODS: usize = 8;
    const COMPLETE: &str = include_str!("fixtures/k9s-pods-complete.txt");

    #[test]
    fn reads_the_count_of_a_captured_complete_pods_view() {
        assert_eq!(k9s_count(COMPLETE, "pods"), Some(FIXTURE_PODS));
        // The same screen is no deployments view.
        assert_eq!(k9s_count(COMPLETE, "deployments"), None);
    }

    #[test]
    fn reads_thousands_and_refuses_what_is_no_count() {
        let title = |t: &str| format!("┌──────── {t} ────────┐\n│ NAMESPACE↑ NAME │");
        assert_eq!(k9s_count(&title("pods(all)[20,000]"), "pods"), Some(20_000));
        assert_eq!(k9s_count(&title("pods(all)[0]"), "pods"), Some(0));
        // One namespace's view is not the all-namespaces view.
        assert_eq!(k9s_count(&title("pods(default)[3]"), "pods"), None);
        assert_eq!(k9s_count(&title("pods(all)[]"), "pods"), None);
        assert_eq!(k9s_count(&title("pods(all)[1x]"), "pods"), None);
        assert_eq!(k9s_count(&title("mypods(all)[3]"), "pods"), None);
        // A view of another resource.
        assert_eq!(k9s_count(&title("deployments(all)[7]"), "pods"), None);
        assert_eq!(
            k9s_count(&title("deployments(all)[7]"), "deployments"),
            Some(7)
        );
        assert_eq!(k9s_count("", "pods"), None);
    }

    /// A kdash v2.1.1 screen (160×50, tmux capture-pane) on its overview
    /// of a bench cluster holding 7,000 pods (500 Runtimes of 10 replicas
    /// and 2,000 churn pods), started as `berth-bench --peers` starts it,
    /// once it showed every pod.
    const KDASH_FIXTURE_PODS: usize = 7000;
    const KDASH_COMPLETE: &str = include_str!("fixtures/kdash-pods-complete.txt");

    #[test]
    fn reads_kdash_counts_of_every_namespace_only() {
        assert_eq!(
            kdash_count(KDASH_COMPLETE, "Pods"),
            Some(KDASH_FIXTURE_PODS)
        );
        // The tab header (`7:Deployments [501]`) is not the table.
        assert_eq!(kdash_count(KDASH_COMPLETE, "Deployments"), None);
        let title = |t: &str| format!("│ {t} ⏎:pods · d:describe ───│");
        assert_eq!(
            kdash_count(&title("Deployments (ns: all) [501]"), "Deployments"),
            Some(501)
        );
        assert_eq!(
            kdash_count(&title("Pods (ns: all) [20,000]"), "Pods"),
            Some(20_000)
        );
        // One namespace's table is not every namespace's.
        assert_eq!(kdash_count(&title("Pods (ns: bench-0) [10]"), "Pods"), None);
        assert_eq!(kdash_count(&title("Pods (ns: all) []"), "Pods"), None);
    }
}
