//! Retirement (docs/architecture.md §7): explicit, reviewed changes that end a Runtime's
//! dependency on a RuntimeClass — retire to the default runtime, suspend,
//! delete the Runtime, prune rollback ReplicaSets.
//!
//! [`plan`] is pure (the change, the spec diff, the pod-template effect
//! from berth-shared's `render`); [`review`] does the reads, the
//! permission check and the server-side dry-run; [`execute`] sends the
//! confirmed change and records the Event; [`cli`] is `berth retire` and
//! `berth prune-revisions`. The TUI shows the same [`lines`] in
//! `views::review`.

pub mod cli;
pub mod execute;
pub mod jobs;
pub mod plan;
pub mod review;

#[cfg(test)]
mod tests;

pub use plan::{Action, Plan};
pub use review::{RetireError, Review, Verdict};

/// How a review line is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Heading,
    Plain,
    Added,
    Removed,
    Good,
    Bad,
    Dim,
}

/// The review as lines: what, who, the spec diff, the effect, the pods,
/// the dry-run verdict. The CLI prints them, the TUI styles them.
pub fn lines(review: &Review) -> Vec<(Tone, String)> {
    let p = &review.plan;
    let mut out = vec![
        (
            Tone::Heading,
            format!(
                "cluster {} — {} — {} {}",
                review.cluster,
                p.action.title(),
                p.kind,
                p.target()
            ),
        ),
        (
            Tone::Plain,
            format!("as user: {}", berth_shared::sanitize::name(&review.user)),
        ),
        (Tone::Plain, String::new()),
        (Tone::Heading, "Change".to_string()),
    ];
    if p.diff.is_empty() {
        out.push((Tone::Dim, "  (no change)".to_string()));
    }
    for d in &p.diff {
        let tone = match d {
            plan::DiffLine::Added(_) => Tone::Added,
            plan::DiffLine::Removed(_) => Tone::Removed,
            plan::DiffLine::Same(_) => Tone::Plain,
            plan::DiffLine::Skipped(_) => Tone::Dim,
        };
        out.push((tone, format!("  {}", d.text())));
    }
    out.push((Tone::Plain, String::new()));
    out.push((Tone::Heading, "Effect (rendered pod templates)".to_string()));
    for e in &p.effects {
        out.push((Tone::Plain, format!("  {e}")));
    }
    if let Some(why) = &p.nothing {
        out.push((Tone::Dim, format!("  nothing to do: {why}")));
    }
    if !p.pods.is_empty() {
        const MAX: usize = 12;
        let mut names: Vec<String> = p.pods.iter().take(MAX).cloned().collect();
        if p.pods.len() > MAX {
            names.push(format!("… {} more", p.pods.len() - MAX));
        }
        out.push((Tone::Plain, format!("  pods: {}", names.join(", "))));
    }
    out.push((Tone::Plain, String::new()));
    let tone = match &review.verdict {
        Verdict::Accepted => Tone::Good,
        Verdict::Refused(_) => Tone::Bad,
        Verdict::NotRun(_) => Tone::Dim,
    };
    out.push((tone, format!("Dry-run: {}", review.verdict.text())));
    out
}

/// What must be typed to confirm a review: the name for a destructive
/// action, `yes` otherwise (`None`); with `ask_cluster` (the console shows
/// several clusters) the cluster first, `CLUSTER/NAME`, or the cluster's
/// name in place of `yes`, so that a confirmation typed for one cluster
/// never confirms a change in another.
pub fn confirmation(review: &Review, ask_cluster: bool) -> Option<String> {
    let p = &review.plan;
    match (ask_cluster, p.action.destructive()) {
        (false, false) => None,
        (false, true) => Some(p.confirm_word.clone()),
        (true, false) => Some(review.cluster.shown()),
        (true, true) => Some(format!("{}/{}", review.cluster, p.confirm_word)),
    }
}

/// Whether `typed` confirms `review` (see [`confirmation`]).
pub fn confirms(review: &Review, ask_cluster: bool, typed: &str) -> bool {
    match confirmation(review, ask_cluster) {
        None => plan::confirms(&review.plan, typed),
        Some(word) => {
            let typed = typed.trim();
            !typed.is_empty() && typed == word
        }
    }
}

/// The confirmation prompt for a review.
pub fn prompt(review: &Review, ask_cluster: bool) -> String {
    match confirmation(review, ask_cluster) {
        None => "Type yes to confirm (anything else aborts): ".to_string(),
        Some(word) if ask_cluster => format!(
            "Type {word} to confirm in cluster {} (anything else aborts): ",
            review.cluster
        ),
        Some(word) => format!("Type the name {word} to confirm (anything else aborts): "),
    }
}
