//! A failed test's message, repeated after its backtrace.
//!
//! CI keeps the head and the tail of a long test run's output; a failing
//! test's panic message comes before its backtrace, and a message that
//! carries the agent's log is longer still, so the tail showed only
//! backtrace frames (CI of 0747b61: `agent_held` failed at rest, and the
//! record does not say what the agent wrote). The hook prints what the
//! default hook prints, then the message's first lines once more.

use std::panic::PanicHookInfo;
use std::sync::Once;

/// Lines of the message repeated at most; the rest is above.
const LINES: usize = 12;
/// Characters of the message repeated at most.
const CHARS: usize = 2_000;

static INSTALL: Once = Once::new();

/// Installs the hook for this test process (once; later calls do nothing).
pub fn install() {
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            eprintln!("{}", summary(info));
        }));
    });
}

fn summary(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic without a text message)");
    let at = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()))
        .unwrap_or_default();
    format!("panic summary (at {at}): {}", head(message))
}

/// The message's first [`LINES`] lines, at most [`CHARS`] characters.
fn head(message: &str) -> String {
    let mut out: String = message
        .lines()
        .take(LINES)
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
        .take(CHARS)
        .collect();
    if out.len() < message.trim_end().len() {
        out.push_str("\n[… the rest of the message is above the backtrace]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_and_says_so() {
        let message = (1..=40)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let h = head(&message);
        assert!(h.starts_with("line 1\nline 2\n"), "{h}");
        assert!(h.contains("line 12\n[…"), "{h}");
        assert!(!h.contains("line 13"), "{h}");
    }

    #[test]
    fn a_short_message_is_whole() {
        assert_eq!(head("refused: no grant\n"), "refused: no grant");
    }

    #[test]
    fn a_single_long_line_is_cut_by_characters() {
        let h = head(&"x".repeat(5_000));
        assert_eq!(h.matches('x').count(), CHARS, "{h}");
        assert!(h.ends_with("above the backtrace]"), "{h}");
    }
}
