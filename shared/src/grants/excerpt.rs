//! Bounded, sanitized excerpts of untrusted text for error messages.
//!
//! Everything an error message quotes from the grants file (a key, a value, a
//! symlink target, the path itself) goes through these helpers: control
//! characters (C0, DEL, C1, which carry terminal escape sequences), bidi
//! overrides and other invisible format characters are replaced with U+FFFD,
//! and the result is cut to a small number of characters.

/// Longest excerpt of a value or key quoted in a message, in characters.
pub(crate) const MAX_EXCERPT_CHARS: usize = 32;
/// Longest path quoted in a message, in characters.
pub(crate) const MAX_PATH_CHARS: usize = 200;

/// True for characters that must never reach a terminal or a log line as-is.
pub(crate) fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'                  // arabic letter mark
            | '\u{200B}'..='\u{200F}'   // zero-width, LRM, RLM
            | '\u{2028}' | '\u{2029}'   // line/paragraph separators
            | '\u{202A}'..='\u{202E}'   // bidi embeddings and overrides
            | '\u{2060}'..='\u{206F}'   // word joiner, bidi isolates, deprecated format chars
            | '\u{FEFF}'                // byte order mark / zero-width no-break space
            | '\u{FFF9}'..='\u{FFFB}'   // interlinear annotations
        )
}

/// Replace unsafe characters and bound the length; appends `…` when cut.
pub(crate) fn sanitize(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == max_chars {
            out.push('…');
            return out;
        }
        out.push(if is_unsafe_char(c) { '\u{FFFD}' } else { c });
    }
    out
}

/// A short, sanitized, quoted excerpt of an untrusted value or key.
pub(crate) fn quote(text: &str) -> String {
    // Debug-format the sanitized text: quotes and backslashes are escaped, and
    // nothing unsafe is left for `{:?}` to pass through.
    format!("{:?}", sanitize(text, MAX_EXCERPT_CHARS))
}

/// A sanitized, bounded rendering of a path for messages.
pub(crate) fn path(p: &std::path::Path) -> String {
    let lossy = p.to_string_lossy();
    let total = lossy.chars().count();
    if total <= MAX_PATH_CHARS {
        return sanitize(&lossy, MAX_PATH_CHARS);
    }
    // Keep the head and the tail: the file name is usually what matters.
    let half = MAX_PATH_CHARS / 2;
    let head: String = lossy.chars().take(half).collect();
    let tail: String = lossy.chars().skip(total - half).collect();
    format!("{}…{}", sanitize(&head, half), sanitize(&tail, half))
}

/// How a single character is shown in a message: printable ASCII quoted,
/// everything else as its code point.
pub(crate) fn describe_char(c: char) -> String {
    if c.is_ascii_graphic() || c == ' ' {
        format!("'{c}'")
    } else {
        format!("U+{:04X}", u32::from(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_bidi() {
        let s = sanitize("a\u{1b}[31mb\u{202E}c\u{9b}d", 32);
        assert!(!s.contains('\u{1b}'));
        assert!(!s.contains('\u{202E}'));
        assert!(!s.contains('\u{9b}'));
        assert_eq!(s, "a\u{FFFD}[31mb\u{FFFD}c\u{FFFD}d");
    }

    #[test]
    fn bounds_length() {
        let long = "x".repeat(1000);
        let q = quote(&long);
        assert!(q.chars().count() <= MAX_EXCERPT_CHARS + 3);
        assert!(q.ends_with("…\""));
        let p = path(std::path::Path::new(&format!("/{}", "d".repeat(5000))));
        assert!(p.chars().count() <= MAX_PATH_CHARS + 1);
    }

    #[test]
    fn describes_chars() {
        assert_eq!(describe_char('/'), "'/'");
        assert_eq!(describe_char('\0'), "U+0000");
        assert_eq!(describe_char('é'), "U+00E9");
    }
}
