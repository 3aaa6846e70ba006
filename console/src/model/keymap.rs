//! The one key table of the normal mode. Key dispatch ([`lookup`]) and the
//! `?` help ([`help_lines`]) both read [`KEYS`], and the README's console
//! section is checked against it, so the three cannot disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::screen::{ListView, Screen};

/// A key as the table names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A character (shifted letters are their own characters).
    Char(char),
    /// Ctrl + a letter.
    Ctrl(char),
    /// A named key.
    Code(KeyCode),
}

impl Key {
    /// How the key is written in help and in the README.
    pub fn label(self) -> String {
        match self {
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("Ctrl-{c}"),
            Key::Code(code) => match code {
                KeyCode::Up => "↑".into(),
                KeyCode::Down => "↓".into(),
                KeyCode::Left => "←".into(),
                KeyCode::Right => "→".into(),
                KeyCode::Home => "Home".into(),
                KeyCode::End => "End".into(),
                KeyCode::PageUp => "PgUp".into(),
                KeyCode::PageDown => "PgDn".into(),
                KeyCode::Tab => "Tab".into(),
                KeyCode::BackTab => "Shift-Tab".into(),
                KeyCode::Enter => "Enter".into(),
                KeyCode::Esc => "Esc".into(),
                other => format!("{other:?}"),
            },
        }
    }

    fn matches(self, ev: &KeyEvent) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        match self {
            Key::Char(c) => !ctrl && ev.code == KeyCode::Char(c),
            Key::Ctrl(c) => ctrl && ev.code == KeyCode::Char(c),
            Key::Code(code) => ev.code == code,
        }
    }
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Down,
    Up,
    First,
    Last,
    HalfPageDown,
    HalfPageUp,
    PageDown,
    PageUp,
    PrevColumn,
    NextColumn,
    Sort,
    Filter,
    Open,
    Details,
    Explain,
    RetireToDefault,
    Suspend,
    Delete,
    Prune,
    /// The handler matrix.
    Matrix,
    /// Related objects of the selected grant or pod (or a relations line).
    Related,
    NextView,
    PrevView,
    /// The view of the digit pressed (`1` = the first tab).
    JumpView,
    Command,
    Help,
    Back,
    Quit,
}

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// Every screen.
    Everywhere,
    /// List views (tabs and the namespace picker).
    Lists,
    /// List views, the rollout screen and a relations screen.
    ListsAndRollout,
    /// Where something can be opened: those, and the handler matrix (a
    /// cell).
    Openable,
    /// Where columns are chosen: list views, and the handler matrix (its
    /// node groups).
    Columns,
    /// The Runtimes and Retained views (retirement actions).
    Retirable,
    /// Where a grant or a pod is selected or shown: the Grants and
    /// Retained views, a relations screen, a grant's or pod's details.
    Related,
}

impl On {
    /// Whether the binding applies on `screen`.
    pub fn applies(self, screen: &Screen) -> bool {
        match self {
            On::Everywhere => true,
            On::Lists => matches!(screen, Screen::List(_)),
            On::ListsAndRollout => matches!(
                screen,
                Screen::List(_) | Screen::Rollout(..) | Screen::Relations(..)
            ),
            On::Openable => On::ListsAndRollout.applies(screen) || matches!(screen, Screen::Matrix),
            On::Columns => matches!(screen, Screen::List(_) | Screen::Matrix),
            On::Retirable => matches!(
                screen,
                Screen::List(ListView::Runtimes | ListView::Retained)
            ),
            On::Related => matches!(
                screen,
                Screen::List(ListView::Grants | ListView::Retained)
                    | Screen::Relations(..)
                    | Screen::Details(
                        _,
                        crate::store::Kind::Pod | crate::store::Kind::RuntimeGrant,
                        _
                    )
            ),
        }
    }
}

/// One row of the key table.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    pub on: On,
    pub help: &'static str,
}

impl Binding {
    /// `j / ↓`: every key of the binding.
    pub fn label(&self) -> String {
        let keys: Vec<String> = self.keys.iter().map(|k| k.label()).collect();
        keys.join(" / ")
    }
}

use Key::{Char as C, Code, Ctrl};

/// Every key of the normal mode, in the order help shows them.
pub const KEYS: &[Binding] = &[
    Binding {
        keys: &[C('j'), Code(KeyCode::Down)],
        action: Action::Down,
        on: On::Everywhere,
        help: "down (scrolls details)",
    },
    Binding {
        keys: &[C('k'), Code(KeyCode::Up)],
        action: Action::Up,
        on: On::Everywhere,
        help: "up",
    },
    Binding {
        keys: &[C('g'), Code(KeyCode::Home)],
        action: Action::First,
        on: On::Everywhere,
        help: "first row",
    },
    Binding {
        keys: &[C('G'), Code(KeyCode::End)],
        action: Action::Last,
        on: On::Everywhere,
        help: "last row",
    },
    Binding {
        keys: &[Ctrl('d')],
        action: Action::HalfPageDown,
        on: On::Everywhere,
        help: "half a page down",
    },
    Binding {
        keys: &[Ctrl('u')],
        action: Action::HalfPageUp,
        on: On::Everywhere,
        help: "half a page up",
    },
    Binding {
        keys: &[Ctrl('f'), Code(KeyCode::PageDown)],
        action: Action::PageDown,
        on: On::Everywhere,
        help: "page down",
    },
    Binding {
        keys: &[Ctrl('b'), Code(KeyCode::PageUp)],
        action: Action::PageUp,
        on: On::Everywhere,
        help: "page up",
    },
    Binding {
        keys: &[C('h'), Code(KeyCode::Left)],
        action: Action::PrevColumn,
        on: On::Columns,
        help: "previous column (the matrix: node group)",
    },
    Binding {
        keys: &[C('l'), Code(KeyCode::Right)],
        action: Action::NextColumn,
        on: On::Columns,
        help: "next column (the matrix: node group)",
    },
    Binding {
        keys: &[C('s')],
        action: Action::Sort,
        on: On::Lists,
        help: "sort by the selected column (again: reverse)",
    },
    Binding {
        keys: &[C('/')],
        action: Action::Filter,
        on: On::Lists,
        help: "filter rows (paste works)",
    },
    Binding {
        keys: &[Code(KeyCode::Enter)],
        action: Action::Open,
        on: On::Openable,
        help: "open: a rollout, details, a namespace, a matrix cell",
    },
    Binding {
        keys: &[C('d'), C('y')],
        action: Action::Details,
        on: On::ListsAndRollout,
        help: "details: YAML and events",
    },
    Binding {
        keys: &[C('x')],
        action: Action::Explain,
        on: On::ListsAndRollout,
        help: "explain: why a Runtime, workload or pod is (not) granted",
    },
    Binding {
        keys: &[C('R')],
        action: Action::RetireToDefault,
        on: On::Retirable,
        help: "retire to the default runtime (review first)",
    },
    Binding {
        keys: &[C('S')],
        action: Action::Suspend,
        on: On::Retirable,
        help: "suspend the Runtime (review first)",
    },
    Binding {
        keys: &[C('D')],
        action: Action::Delete,
        on: On::Retirable,
        help: "delete the Runtime (review, type the name)",
    },
    Binding {
        keys: &[C('P')],
        action: Action::Prune,
        on: On::Retirable,
        help: "prune rollback ReplicaSets using the class (review)",
    },
    Binding {
        keys: &[C('r')],
        action: Action::Related,
        on: On::Related,
        help: "related: a grant's class, Runtimes, workloads, pods, nodes; a pod's grant",
    },
    Binding {
        keys: &[C('m')],
        action: Action::Matrix,
        on: On::Everywhere,
        help: "handler matrix: RuntimeClasses × node groups",
    },
    Binding {
        keys: &[Code(KeyCode::Tab)],
        action: Action::NextView,
        on: On::Everywhere,
        help: "next view",
    },
    Binding {
        keys: &[Code(KeyCode::BackTab)],
        action: Action::PrevView,
        on: On::Everywhere,
        help: "previous view",
    },
    Binding {
        keys: &[C('1'), C('2'), C('3'), C('4')],
        action: Action::JumpView,
        on: On::Everywhere,
        help: "Runtimes, Grants, Handlers, Retained",
    },
    Binding {
        keys: &[C(':')],
        action: Action::Command,
        on: On::Everywhere,
        help: "command mode (Tab completes, paste works)",
    },
    Binding {
        keys: &[C('?')],
        action: Action::Help,
        on: On::Everywhere,
        help: "this help (j/k scroll it)",
    },
    Binding {
        keys: &[Code(KeyCode::Esc)],
        action: Action::Back,
        on: On::Everywhere,
        help: "back (clears the filter first)",
    },
    Binding {
        keys: &[C('q'), Ctrl('c')],
        action: Action::Quit,
        on: On::Everywhere,
        help: "quit",
    },
];

/// The binding of a key on a screen, and which of its keys was pressed.
pub fn lookup(ev: &KeyEvent, screen: &Screen) -> Option<(&'static Binding, usize)> {
    KEYS.iter()
        .filter(|b| b.on.applies(screen))
        .find_map(|b| b.keys.iter().position(|k| k.matches(ev)).map(|i| (b, i)))
}

impl On {
    /// Where, in words (README).
    pub fn words(self) -> &'static str {
        match self {
            On::Everywhere => "everywhere",
            On::Lists => "lists",
            On::ListsAndRollout => "lists, rollout, relations",
            On::Openable => "lists, rollout, relations, matrix",
            On::Columns => "lists, matrix",
            On::Retirable => "Runtimes, Retained",
            On::Related => "Grants, Retained, relations, a grant's or pod's details",
        }
    }
}

/// The README's key reference: every binding and every `:` command, as
/// Markdown tables, generated from [`KEYS`] and [`super::commands::COMMANDS`].
pub fn markdown() -> String {
    let mut out = String::from("| keys | where | what |\n|---|---|---|\n");
    for b in KEYS {
        let keys: Vec<String> = b.keys.iter().map(|k| format!("`{}`", k.label())).collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            keys.join(" "),
            b.on.words(),
            b.help.replace('|', "\\|")
        ));
    }
    out.push_str("\n| command | aliases | what |\n|---|---|---|\n");
    for (name, aliases, help) in super::commands::COMMANDS {
        let aliases: Vec<String> = aliases.iter().map(|a| format!("`:{a}`")).collect();
        out.push_str(&format!(
            "| `:{name}` | {} | {} |\n",
            if aliases.is_empty() {
                "-".to_string()
            } else {
                aliases.join(" ")
            },
            help.replace('|', "\\|")
        ));
    }
    out
}

/// `(keys, what they do)` for every binding that applies on `screen`.
pub fn help_lines(screen: &Screen) -> Vec<(String, &'static str)> {
    KEYS.iter()
        .filter(|b| b.on.applies(screen))
        .map(|b| (b.label(), b.help))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    fn c() -> crate::store::ClusterId {
        crate::store::ClusterId::new("kwok-test")
    }

    #[test]
    fn no_key_is_bound_twice_on_one_screen() {
        let screens = [
            Screen::List(ListView::Runtimes),
            Screen::List(ListView::Grants),
            Screen::List(ListView::Namespaces),
            Screen::List(ListView::Retained),
            Screen::Rollout(c(), Default::default()),
            Screen::Details(c(), crate::store::Kind::Runtime, Default::default()),
            Screen::Details(c(), crate::store::Kind::Pod, Default::default()),
            Screen::Matrix,
            Screen::Relations(c(), crate::rows::relations::Anchor::Pod(Default::default())),
        ];
        for s in &screens {
            let mut seen = Vec::new();
            for b in KEYS.iter().filter(|b| b.on.applies(s)) {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice on {s:?}");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn lookup_finds_what_help_shows() {
        let list = Screen::List(ListView::Runtimes);
        let (b, i) = lookup(&ev(KeyCode::Char('3'), KeyModifiers::NONE), &list).expect("3");
        assert_eq!((b.action, i), (Action::JumpView, 2));
        let (b, _) = lookup(&ev(KeyCode::Char('d'), KeyModifiers::CONTROL), &list).expect("^d");
        assert_eq!(b.action, Action::HalfPageDown);
        let (b, _) = lookup(&ev(KeyCode::Char('d'), KeyModifiers::NONE), &list).expect("d");
        assert_eq!(b.action, Action::Details);
        // Retirement keys only where they apply, and help agrees.
        let grants = Screen::List(ListView::Grants);
        assert!(lookup(&ev(KeyCode::Char('R'), KeyModifiers::SHIFT), &grants).is_none());
        assert!(!help_lines(&grants).iter().any(|(k, _)| k == "R"));
        assert!(help_lines(&list).iter().any(|(k, _)| k == "R"));
        assert!(help_lines(&list).contains(&("q / Ctrl-c".to_string(), "quit")));
        for b in KEYS {
            for k in b.keys {
                let code = match *k {
                    Key::Char(c) => ev(KeyCode::Char(c), KeyModifiers::NONE),
                    Key::Ctrl(c) => ev(KeyCode::Char(c), KeyModifiers::CONTROL),
                    Key::Code(c) => ev(c, KeyModifiers::NONE),
                };
                let retained = Screen::List(ListView::Retained);
                let screen = match b.on {
                    On::Retirable
                    | On::Lists
                    | On::ListsAndRollout
                    | On::Openable
                    | On::Columns
                    | On::Everywhere => &list,
                    On::Related => &retained,
                };
                let found = lookup(&code, screen).map(|(f, _)| f.action);
                assert_eq!(found, Some(b.action), "{k:?}");
            }
        }
    }
}
