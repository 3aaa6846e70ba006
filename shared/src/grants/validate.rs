//! Formats of the binding fields (exact values, no wildcards).
//!
//! - `name`, `handler`: DNS-1123 label, `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, 1-63.
//! - `project`, `environment`, `application`, `service`:
//!   `[a-z]([-a-z0-9]{0,38}[a-z0-9])?`, 1-40.
//! - `runtime_class`: DNS-1123 subdomain (as Kubernetes validates a
//!   RuntimeClass name): dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`,
//!   at most 253 characters in all.

use super::error::FormatIssue;
use super::excerpt::describe_char;

/// Maximum length of a DNS-1123 label.
pub const LABEL_MAX: usize = 63;
/// Maximum length of an identity value (project, environment, application, service).
pub const IDENTITY_MAX: usize = 40;
/// Maximum length of a DNS-1123 subdomain.
pub const SUBDOMAIN_MAX: usize = 253;

/// Human description of the label syntax, used in messages.
pub const LABEL_SYNTAX: &str = "DNS-1123 label (1-63 characters: a-z, 0-9 and '-', starting and ending with a letter or digit)";
/// Human description of the identity syntax, used in messages.
pub const IDENTITY_SYNTAX: &str = "identity value (1-40 characters: a-z, 0-9 and '-', starting with a letter and ending with a letter or digit)";
/// Human description of the subdomain syntax, used in messages.
pub const SUBDOMAIN_SYNTAX: &str = "DNS-1123 subdomain (at most 253 characters: a-z, 0-9, '-' and '.', each dot-separated part starting and ending with a letter or digit)";

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Checks shared by every format: empty, wildcard, length, case, alphabet.
fn common(value: &str, max: usize, allow_dot: bool) -> Result<(), FormatIssue> {
    if value.is_empty() {
        return Err(FormatIssue::Empty);
    }
    if value.contains(['*', '?']) {
        return Err(FormatIssue::Wildcard);
    }
    let len = value.chars().count();
    if len > max {
        return Err(FormatIssue::TooLong { len, max });
    }
    if value.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(FormatIssue::Uppercase);
    }
    if let Some(bad) = value
        .chars()
        .find(|c| !(is_lower_alnum(*c) || *c == '-' || (allow_dot && *c == '.')))
    {
        return Err(FormatIssue::InvalidChar {
            ch: describe_char(bad),
        });
    }
    Ok(())
}

/// A DNS-1123 label: `name` and `handler`.
pub fn dns_label(value: &str) -> Result<(), FormatIssue> {
    common(value, LABEL_MAX, false)?;
    if !value.starts_with(is_lower_alnum) {
        return Err(FormatIssue::BadStart {
            must: "a letter or digit",
        });
    }
    if !value.ends_with(is_lower_alnum) {
        return Err(FormatIssue::BadEnd);
    }
    Ok(())
}

/// An identity value: `project`, `environment`, `application`, `service`.
pub fn identity(value: &str) -> Result<(), FormatIssue> {
    common(value, IDENTITY_MAX, false)?;
    if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(FormatIssue::BadStart { must: "a letter" });
    }
    if !value.ends_with(is_lower_alnum) {
        return Err(FormatIssue::BadEnd);
    }
    Ok(())
}

/// A DNS-1123 subdomain: `runtime_class`.
pub fn dns_subdomain(value: &str) -> Result<(), FormatIssue> {
    common(value, SUBDOMAIN_MAX, true)?;
    for label in value.split('.') {
        if label.is_empty()
            || !label.starts_with(is_lower_alnum)
            || !label.ends_with(is_lower_alnum)
        {
            return Err(FormatIssue::BadLabel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        for ok in ["a", "0", "a-b", "bounded-worker", "a1", &"a".repeat(63)] {
            assert_eq!(dns_label(ok), Ok(()), "{ok}");
        }
        let cases: [(&str, FormatIssue); 9] = [
            ("", FormatIssue::Empty),
            ("*", FormatIssue::Wildcard),
            ("a?", FormatIssue::Wildcard),
            ("Abc", FormatIssue::Uppercase),
            ("a/b", FormatIssue::InvalidChar { ch: "'/'".into() }),
            ("a.b", FormatIssue::InvalidChar { ch: "'.'".into() }),
            (
                "-a",
                FormatIssue::BadStart {
                    must: "a letter or digit",
                },
            ),
            ("a-", FormatIssue::BadEnd),
            (
                "a\u{1b}",
                FormatIssue::InvalidChar {
                    ch: "U+001B".into(),
                },
            ),
        ];
        for (bad, want) in cases {
            assert_eq!(dns_label(bad), Err(want), "{bad:?}");
        }
        assert_eq!(
            dns_label(&"a".repeat(64)),
            Err(FormatIssue::TooLong { len: 64, max: 63 })
        );
    }

    #[test]
    fn identities() {
        for ok in ["a", "demo", "a-1", "production", &"a".repeat(40)] {
            assert_eq!(identity(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            identity("1a"),
            Err(FormatIssue::BadStart { must: "a letter" })
        );
        assert_eq!(identity("a-"), Err(FormatIssue::BadEnd));
        assert_eq!(
            identity(&"a".repeat(41)),
            Err(FormatIssue::TooLong { len: 41, max: 40 })
        );
        assert_eq!(
            identity("a_b"),
            Err(FormatIssue::InvalidChar { ch: "'_'".into() })
        );
    }

    #[test]
    fn subdomains() {
        for ok in ["gvisor", "kata.example.com", "a.b-c.d", "0.1"] {
            assert_eq!(dns_subdomain(ok), Ok(()), "{ok}");
        }
        for bad in ["a..b", ".a", "a.", "a.-b", "a-.b"] {
            assert_eq!(dns_subdomain(bad), Err(FormatIssue::BadLabel), "{bad}");
        }
        assert!(dns_subdomain(&"a".repeat(254)).is_err());
        assert_eq!(dns_subdomain(&"a".repeat(253)), Ok(()));
    }
}
