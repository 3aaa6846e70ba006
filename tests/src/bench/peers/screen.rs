//! Reading a peer's screen: when its view is complete.

/// The row count in a k9s table's title, `RESOURCE(all)[N]` (k9s writes
/// thousands with commas: `pods(all)[20,000]`), when the screen shows the
/// all-namespaces view of `resource`. k9s counts the rows its table holds,
/// so the count equals the cluster's only once every object is on it.
pub fn k9s_count(screen: &str, resource: &str) -> Option<usize> {
    let heading = format!(" {resource}(all)[");
    screen.lines().find_map(|line| {
        let (_, rest) = line.split_once(heading.as_str())?;
        let (count, _) = rest.split_once(']')?;
        let digits: String = count.chars().filter(|c| *c != ',').collect();
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    })
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
}
