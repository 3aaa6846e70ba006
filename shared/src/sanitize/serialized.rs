//! A cheap test of whether [`super::json`] would change anything in an
//! object: the console sanitizes every object it takes in, and turning
//! each into a `serde_json::Value` and back was most of that cost, for
//! objects that nearly always hold nothing to clean (issue 32: the first
//! frames of Handlers and Retained parse 20,000 Pods at scale S).

use std::cell::RefCell;

use serde::Serialize;

use super::{MAX_NAME_CHARS, is_unsafe_char};

thread_local! {
    /// The JSON text of the object last checked on this thread: reused,
    /// so that a check allocates nothing once warm.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether every string in `value`'s JSON form — map keys and values —
/// is clean ([`is_unsafe_char`] finds nothing) and at most
/// [`MAX_NAME_CHARS`] characters: then [`super::json`] with any bound of
/// at least that leaves it unchanged. `false` when in doubt (a string
/// longer than a name, a character JSON escapes, a value that does not
/// serialize): the caller then takes the slow path, which is always right.
pub fn is_clean_serialized(value: &impl Serialize) -> bool {
    BUFFER.with(|buffer| {
        let Ok(mut buf) = buffer.try_borrow_mut() else {
            return false;
        };
        buf.clear();
        let clean = serde_json::to_writer(&mut *buf, value).is_ok()
            && std::str::from_utf8(&buf).is_ok_and(clean_json_text);
        // A huge object does not keep its buffer for the thread's life.
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        clean
    })
}

/// JSON text whose strings need no cleaning. serde_json escapes a quote,
/// a backslash and every C0 control, so any backslash means such a
/// character (or one it would keep escaped) and sends the object down the
/// slow path; without backslashes every `"` opens or closes a string.
/// Characters outside strings are JSON's own punctuation, numbers and
/// literals, all clean, so every character can be checked alike.
fn clean_json_text(text: &str) -> bool {
    let mut in_string = false;
    let mut chars_in_string = 0usize;
    for c in text.chars() {
        match c {
            '\\' => return false,
            '"' => {
                in_string = !in_string;
                chars_in_string = 0;
            }
            c if is_unsafe_char(c) => return false,
            _ if in_string => {
                chars_in_string += 1;
                if chars_in_string > MAX_NAME_CHARS {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::super::{MAX_VALUE_CHARS, json};
    use super::*;

    fn object(key: &str, value: &str) -> BTreeMap<String, Vec<String>> {
        BTreeMap::from([
            ("name".to_string(), vec!["web-7d9f".to_string()]),
            (key.to_string(), vec![value.to_string(), "x".to_string()]),
        ])
    }

    #[test]
    fn plain_objects_are_clean() {
        assert!(is_clean_serialized(&object("app", "web ünïcödé 日本語")));
        assert!(is_clean_serialized(&object(
            "k",
            &"v".repeat(MAX_NAME_CHARS)
        )));
        assert!(is_clean_serialized(
            &serde_json::json!({"n": 1.5, "b": true, "z": null})
        ));
    }

    #[test]
    fn anything_sanitizing_would_touch_is_not_clean() {
        let dirty = [
            "\u{1b}[2J",     // CSI (ESC, escaped by JSON)
            "a\u{9b}31mb",   // C1 CSI (raw in JSON text)
            "bell\u{7}",     // C0
            "del\u{7f}",     // DEL (raw in JSON text)
            "admin\u{200b}", // zero-width space
            "\u{202e}txt",   // bidi override
            "line\u{2028}",  // line separator
            "bom\u{feff}",   // BOM
            "new\nline",     // newline (escaped by JSON)
        ];
        for s in dirty {
            assert!(!is_clean_serialized(&object("k", s)), "value {s:?}");
            assert!(!is_clean_serialized(&object(s, "v")), "key {s:?}");
        }
        // Too long for a key; a value that long is checked the slow way.
        let long = "v".repeat(MAX_NAME_CHARS + 1);
        assert!(!is_clean_serialized(&object(&long, "v")));
        assert!(!is_clean_serialized(&object("k", &long)));
        // A quote and a backslash are clean, but JSON escapes them: slow path.
        assert!(!is_clean_serialized(&object("k", "say \"hi\"")));
    }

    /// Strings drawn from clean text and from every class of character
    /// the sanitizer removes or escapes.
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                4 => "[a-z0-9./-]{0,8}",
                1 => prop::sample::select(vec![
                    "\u{1b}", "\u{1b}]0;x\u{7}", "\u{9b}", "\u{9c}", "\u{7f}", "\u{0}",
                    "\t", "\n", "\u{200b}", "\u{202e}", "\u{2066}", "\u{61c}",
                    "\u{feff}", "\u{2029}", "\"", "\\", "日本", "é",
                ])
                .prop_map(str::to_string),
            ],
            0..6,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        /// Whatever the check calls clean, sanitizing leaves unchanged.
        #[test]
        fn clean_means_sanitizing_changes_nothing(
            map in prop::collection::btree_map(text(), prop::collection::vec(text(), 0..3), 0..4),
        ) {
            let mut v = serde_json::to_value(&map).expect("serializes");
            let before = v.clone();
            json(&mut v, MAX_VALUE_CHARS);
            if is_clean_serialized(&map) {
                prop_assert_eq!(v, before);
            }
        }

        /// And it is not a check that always says no: clean text passes.
        #[test]
        fn clean_text_is_clean(
            map in prop::collection::btree_map(
                "[a-z0-9./-]{0,20}",
                prop::collection::vec("[a-zA-Z0-9 ._:/=-]{0,40}", 0..3),
                0..4,
            ),
        ) {
            prop_assert!(is_clean_serialized(&map));
        }
    }
}
