//! Untrusted text from the cluster made safe to show in a terminal
//! (docs/architecture.md §7): every name, label, annotation, condition and event message may hold
//! escape sequences that would move the cursor, retitle the window, write
//! the clipboard (OSC 52) or reorder text (bidi overrides).
//!
//! The rules, applied in one pass over the characters:
//! - ESC-introduced sequences are removed whole: CSI (`ESC [` … final byte),
//!   OSC (`ESC ]` … BEL or ST), DCS/SOS/PM/APC (`ESC P`/`X`/`^`/`_` … ST),
//!   `ESC` + intermediates + final (charset designations, `ESC 7`, `ESC c`);
//!   an unterminated string sequence swallows the rest of the input;
//! - their 8-bit C1 forms (U+009B CSI, U+009D OSC, U+0090 DCS, U+0098 SOS,
//!   U+009E PM, U+009F APC) likewise, and every other C1 control is dropped;
//! - other C0 controls (BEL, backspace, NUL, CR, …) and DEL are dropped;
//!   newline and tab become a space in single-line text;
//! - invisible format characters — zero-width space/joiners and bidi marks
//!   (U+200B–U+200F), bidi embeddings and overrides (U+202A–U+202E), the
//!   word joiner, invisible operators and bidi isolates (U+2060–U+2069), the
//!   Arabic letter mark (U+061C) and the BOM (U+FEFF) — are shown escaped as
//!   `<U+XXXX>`: removing them silently would let `admin\u{200b}` pass for
//!   `admin`, and keeping them would let text be reordered or hidden;
//! - the line/paragraph separators (U+2028, U+2029) become a space;
//! - the result is bounded to a number of characters, marked with `…` when
//!   cut.
//!
//! Nothing here does I/O; the console calls it where data enters its model
//! and again on everything `berth get` prints.

mod serialized;
pub use serialized::is_clean_serialized;

/// Default bound for one string value taken from the cluster (characters).
pub const MAX_VALUE_CHARS: usize = 1024;
/// Bound for names and map keys (the longest Kubernetes name is 253).
pub const MAX_NAME_CHARS: usize = 253;
/// The marker appended when a string is cut.
pub const ELLIPSIS: char = '…';

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
const ST_C1: char = '\u{9c}';

/// Whether a character is one this module never lets through.
pub fn is_unsafe_char(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || u == 0x7f
        || (0x80..=0x9f).contains(&u)
        || is_bidi_or_invisible(c)
        || c == '\u{2028}'
        || c == '\u{2029}'
}

/// Invisible format characters that [`line`] and [`text`] show escaped.
pub fn is_bidi_or_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{061c}' | '\u{feff}'
    )
}

/// The visible form of an invisible character: `<U+200B>`.
fn escaped(c: char) -> String {
    format!("<U+{:04X}>", c as u32)
}

/// Whether `s` contains nothing [`is_unsafe_char`] rejects.
pub fn is_clean(s: &str) -> bool {
    !s.chars().any(is_unsafe_char)
}

/// Whether `s` is clean apart from newlines (multi-line text).
pub fn is_clean_text(s: &str) -> bool {
    !s.chars().any(|c| c != '\n' && is_unsafe_char(c))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Single line: newline and tab become a space.
    Line,
    /// Multi-line: newline kept, tab becomes a space.
    Text,
}

/// One line of untrusted text, at most `max_chars` characters (plus the
/// `…` marker when cut). Newlines and tabs become spaces.
pub fn line(input: &str, max_chars: usize) -> String {
    filter(input, max_chars, Mode::Line)
}

/// [`line`] with [`MAX_VALUE_CHARS`].
pub fn value(input: &str) -> String {
    line(input, MAX_VALUE_CHARS)
}

/// Bound for one short line shown in the console: typed input, a cell, a
/// name in a review (characters).
pub const MAX_SHORT_CHARS: usize = 256;

/// [`line`] with [`MAX_SHORT_CHARS`]: the one cleaning every console layer
/// uses for short text it shows.
pub fn short(input: &str) -> String {
    line(input, MAX_SHORT_CHARS)
}

/// [`line`] with [`MAX_NAME_CHARS`].
pub fn name(input: &str) -> String {
    line(input, MAX_NAME_CHARS)
}

/// Multi-line untrusted text (newlines kept, tabs become a space), bounded
/// to `max_chars` characters.
pub fn text(input: &str, max_chars: usize) -> String {
    filter(input, max_chars, Mode::Text)
}

/// Sanitizes an optional value in place ([`value`]).
pub fn opt(input: &Option<String>) -> Option<String> {
    input.as_deref().map(value)
}

fn filter(input: &str, max_chars: usize, mode: Mode) -> String {
    let mut out = String::with_capacity(input.len().min(max_chars.saturating_mul(4)));
    let mut kept = 0usize;
    let mut cut = false;
    let mut chars = input.chars().peekable();
    // Appends a piece whole (one character, or one escape) if it fits.
    let mut push = |out: &mut String, piece: &str| -> bool {
        let n = piece.chars().count();
        if kept + n > max_chars {
            cut = true;
            return false;
        }
        out.push_str(piece);
        kept += n;
        true
    };
    let mut buf = [0u8; 4];
    while let Some(c) = chars.next() {
        let piece: String;
        let piece: &str = match c {
            ESC => {
                match chars.next() {
                    Some('[') => skip_csi(&mut chars),
                    Some(']') => skip_string(&mut chars, true),
                    Some('P' | 'X' | '^' | '_') => skip_string(&mut chars, false),
                    Some(c2) if ('\u{20}'..='\u{2f}').contains(&c2) => {
                        // ESC + intermediates + one final byte.
                        while let Some(&n) = chars.peek() {
                            chars.next();
                            if !('\u{20}'..='\u{2f}').contains(&n) {
                                break;
                            }
                        }
                    }
                    // ESC + any single character (ESC 7, ESC c, ESC \ …).
                    Some(_) | None => {}
                }
                continue;
            }
            '\u{9b}' => {
                skip_csi(&mut chars);
                continue;
            }
            '\u{9d}' => {
                skip_string(&mut chars, true);
                continue;
            }
            '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                skip_string(&mut chars, false);
                continue;
            }
            '\n' if mode == Mode::Text => "\n",
            '\n' | '\t' | '\u{2028}' | '\u{2029}' => " ",
            // All or nothing: a cut escape would be misleading.
            c if is_bidi_or_invisible(c) => {
                piece = escaped(c);
                &piece
            }
            c if is_unsafe_char(c) => continue,
            c => c.encode_utf8(&mut buf),
        };
        if !push(&mut out, piece) {
            break;
        }
    }
    if cut {
        out.push(ELLIPSIS);
    }
    out
}

/// Skips the rest of a CSI: parameter and intermediate bytes up to and
/// including the final byte (0x40–0x7E). Anything else ends it too, so a
/// stray control inside cannot hide text.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = chars.peek() {
        chars.next();
        match c {
            '\u{30}'..='\u{3f}' | '\u{20}'..='\u{2f}' => continue,
            _ => break,
        }
    }
}

/// Skips a string sequence (OSC, DCS, SOS, PM, APC) up to its terminator:
/// ST (`ESC \` or U+009C), or BEL for OSC. Unterminated: the rest.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, bel_ends: bool) {
    while let Some(c) = chars.next() {
        match c {
            ST_C1 => return,
            BEL if bel_ends => return,
            ESC if chars.peek() == Some(&'\\') => {
                chars.next();
                return;
            }
            _ => {}
        }
    }
}

/// Sanitizes every string in a JSON value in place: object keys with
/// [`MAX_NAME_CHARS`], string values with `max_value_chars`. Used on whole
/// Kubernetes objects as they arrive, so nothing downstream sees raw text.
pub fn json(v: &mut serde_json::Value, max_value_chars: usize) {
    match v {
        serde_json::Value::String(s) if !is_clean(s) || s.chars().count() > max_value_chars => {
            *s = line(s, max_value_chars);
        }
        serde_json::Value::Array(items) => {
            for item in items {
                json(item, max_value_chars);
            }
        }
        serde_json::Value::Object(map) => {
            let dirty = map
                .keys()
                .any(|k| !is_clean(k) || k.chars().count() > MAX_NAME_CHARS);
            if dirty {
                let old = std::mem::take(map);
                for (k, mut val) in old {
                    json(&mut val, max_value_chars);
                    map.insert(name(&k), val);
                }
            } else {
                for val in map.values_mut() {
                    json(val, max_value_chars);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(value("web-7d9f-abc"), "web-7d9f-abc");
        assert_eq!(value("ünïcödé 日本語"), "ünïcödé 日本語");
    }

    #[test]
    fn csi_sequences_are_removed() {
        assert_eq!(value("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(value("x\u{1b}[2J\u{1b}[1;1Hy"), "xy");
        assert_eq!(value("x\u{1b}[?1049hy"), "xy");
    }

    #[test]
    fn c1_csi_is_removed() {
        assert_eq!(value("a\u{9b}31mb"), "ab");
        assert_eq!(value("a\u{85}b\u{9c}c"), "abc");
    }

    #[test]
    fn osc_52_clipboard_write_is_removed() {
        assert_eq!(value("a\u{1b}]52;c;ZXZpbA==\u{07}b"), "ab");
        assert_eq!(value("a\u{1b}]0;title\u{1b}\\b"), "ab");
        assert_eq!(value("a\u{9d}0;title\u{9c}b"), "ab");
    }

    #[test]
    fn dcs_apc_pm_sos_are_removed() {
        assert_eq!(value("a\u{1b}P1$r0m\u{1b}\\b"), "ab");
        assert_eq!(value("a\u{1b}_apc\u{1b}\\b"), "ab");
        assert_eq!(value("a\u{1b}^pm\u{1b}\\b"), "ab");
        assert_eq!(value("a\u{1b}Xsos\u{9c}b"), "ab");
        assert_eq!(value("a\u{90}dcs\u{9c}b"), "ab");
    }

    #[test]
    fn unterminated_strings_swallow_the_rest() {
        assert_eq!(value("a\u{1b}]52;c;AAAA"), "a");
        assert_eq!(value("a\u{1b}"), "a");
        assert_eq!(value("a\u{1b}["), "a");
    }

    #[test]
    fn short_escapes_are_removed() {
        assert_eq!(value("a\u{1b}7b\u{1b}8c"), "abc");
        assert_eq!(value("a\u{1b}(Bb"), "ab");
        assert_eq!(value("a\u{1b}cb"), "ab");
    }

    #[test]
    fn c0_controls_and_del_are_removed() {
        assert_eq!(value("a\u{07}b\u{08}c\u{0}d\re\u{7f}f"), "abcdef");
        assert_eq!(value("a\nb\tc"), "a b c");
        assert_eq!(text("a\nb\tc\r", 100), "a\nb c");
    }

    #[test]
    fn bidi_and_zero_width_characters_are_escaped_visibly() {
        assert_eq!(value("abc\u{202e}fed\u{202c}"), "abc<U+202E>fed<U+202C>");
        assert_eq!(
            value("\u{2066}x\u{2069}\u{2067}y\u{2068}z"),
            "<U+2066>x<U+2069><U+2067>y<U+2068>z"
        );
        assert_eq!(
            value("a\u{200e}\u{200f}\u{061c}\u{feff}b"),
            "a<U+200E><U+200F><U+061C><U+FEFF>b"
        );
        assert_eq!(value("a\u{2028}b"), "a b");
        // A zero-width space cannot make a name look like another one.
        assert_eq!(value("admin\u{200b}"), "admin<U+200B>");
        assert_ne!(value("admin\u{200b}"), value("admin"));
        for c in ('\u{200b}'..='\u{200f}')
            .chain('\u{202a}'..='\u{202e}')
            .chain('\u{2060}'..='\u{2069}')
        {
            let out = value(&format!("a{c}b"));
            assert_eq!(out, format!("a<U+{:04X}>b", c as u32));
            assert!(is_clean(&out) && !is_clean(&format!("a{c}b")));
        }
        assert_eq!(text("x\u{200d}\ny", 100), "x<U+200D>\ny");
        // An escape that does not fit is cut whole.
        assert_eq!(line("ab\u{200b}", 5), "ab…");
    }

    #[test]
    fn lengths_are_bounded() {
        let long = "x".repeat(5000);
        let out = line(&long, 10);
        assert_eq!(out.chars().count(), 11);
        assert!(out.ends_with(ELLIPSIS));
        assert_eq!(line("abc", 3), "abc");
        assert_eq!(line("abcd", 3), "abc…");
    }

    #[test]
    fn json_values_and_keys_are_sanitized() {
        let mut v = serde_json::json!({
            "metadata": {"name": "a\u{1b}[31mb", "annotations": {"k\u{202e}": "v\u{9b}1m"}},
            "list": ["\u{07}x", 3, true],
        });
        json(&mut v, 100);
        assert_eq!(
            v,
            serde_json::json!({
                "metadata": {"name": "ab", "annotations": {"k<U+202E>": "v"}},
                "list": ["x", 3, true],
            })
        );
    }

    proptest! {
        #[test]
        fn output_is_always_clean(s in "\\PC*|[\\x00-\\x7f\\u{80}-\\u{9f}\\u{200b}-\\u{200f}\\u{202a}-\\u{202e}\\u{2060}-\\u{2069}a-z]*") {
            let out = line(&s, 64);
            prop_assert!(is_clean(&out));
            prop_assert!(out.chars().count() <= 65);
            let t = text(&s, 64);
            prop_assert!(is_clean_text(&t));
        }

        #[test]
        fn clean_input_is_unchanged(s in "[a-zA-Z0-9 ./:_-]{0,50}") {
            prop_assert_eq!(value(&s), s);
        }
    }
}
