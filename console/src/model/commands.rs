//! Every command of the `:` line. The command line (`keys::command`)
//! runs them, help and the README (`keymap::markdown`) list them; kept
//! apart from both so that neither imports the other.

/// Every command of the `:` line, with aliases (the first is shown).
pub const COMMANDS: &[(&str, &[&str], &str)] = &[
    ("runtimes", &["rt", "runtime"], "Runtimes view"),
    ("grants", &["rtg", "grant", "runtimegrants"], "Grants view"),
    (
        "handlers",
        &["rc", "handler", "runtimeclasses"],
        "Handlers view",
    ),
    ("retained", &["ret"], "Retained workloads view"),
    (
        "matrix",
        &["hm"],
        "handler matrix: RuntimeClasses × node groups",
    ),
    (
        "rollout",
        &["ro"],
        "a Runtime's rollout: :ro [NS/]NAME[@CLUSTER]",
    ),
    (
        "ns",
        &["namespace"],
        ":ns picks from a list, :ns NAME, :ns all",
    ),
    (
        "ctx",
        &["context"],
        "context: :ctx NAME, or a fleet :ctx A,B",
    ),
    (
        "plan",
        &["pending"],
        "pending grants file plan (:plan CLUSTER)",
    ),
    ("findings", &["check"], "what needs attention, worst first"),
    (
        "explain",
        &["why"],
        "why: :explain [KIND/]NS/NAME[@CLUSTER]",
    ),
    ("help", &[], "show the keys"),
    ("q", &["quit", "q!"], "quit"),
];

/// The command a typed word names (its name or an alias).
pub fn canonical(word: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .find(|(name, aliases, _)| *name == word || aliases.contains(&word))
        .map(|(name, _, _)| *name)
}
