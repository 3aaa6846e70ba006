//! Regular expressions and limits shared by the CRD schema, the CEL rules and
//! the pure functions that check the same values outside the apiserver.
//!
//! They live in one place so that the schema the apiserver enforces and the
//! checks the agent and console do can never drift apart.

/// Project, environment, application and service names (docs/grants-file.md): short
/// enough to be embedded in object names and label values together.
pub const SCOPE_NAME: &str = "^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$";

/// A DNS-1123 label (1–63 characters).
pub const DNS_LABEL: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A DNS-1123 subdomain (up to 253 characters).
pub const DNS_SUBDOMAIN: &str =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// An image repository, optionally with a registry host and port. No tag or
/// digest here: those are separate fields so exactly one can be required.
pub const IMAGE_REPOSITORY: &str =
    "^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$";

/// An image tag as the OCI distribution spec defines it.
pub const IMAGE_TAG: &str = "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$";

/// A sha256 image digest; other algorithms are not accepted on purpose, so a
/// pinned image is always pinned the same way.
pub const IMAGE_DIGEST: &str = "^sha256:[a-f0-9]{64}$";

/// An environment variable name (what the ConfigMap keys become via envFrom).
pub const ENV_NAME: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// A cron schedule: five fields or one of the predefined macros. The
/// CronJob controller does the full parse; this only catches obvious typos
/// at admission.
pub const CRON_SCHEDULE: &str =
    "^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[^\\s]+(\\s+[^\\s]+){4})$";

/// An IANA time zone name such as `Europe/Berlin` or `Etc/UTC`.
pub const TIME_ZONE: &str = "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$";

/// A label key (optional DNS-subdomain prefix, then a name part).
pub const LABEL_KEY: &str = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";

/// A label value (may be empty).
pub const LABEL_VALUE: &str = "^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$";

/// Most labels or annotations a map in the spec may hold. Bounded so the
/// apiserver's CEL cost estimate for the key rules stays inside its budget.
pub const MAX_MAP_ENTRIES: u32 = 64;

/// Most environment entries in `spec.config.env`.
pub const MAX_ENV_ENTRIES: u32 = 128;

/// Longest single environment value (the whole ConfigMap stays well below
/// the 1 MiB object limit).
pub const MAX_ENV_VALUE_LEN: u32 = 4096;

/// Longest annotation value accepted in `podMetadata`.
pub const MAX_ANNOTATION_VALUE_LEN: u32 = 4096;

/// Most `jobs[]` and most `schedules[]` entries.
pub const MAX_JOBS: u32 = 16;

/// Most arguments in a command or args list, and the longest argument.
pub const MAX_ARGS: u32 = 64;
/// Longest single command or args entry.
pub const MAX_ARG_LEN: u32 = 1024;

/// Most ingress peers of the NetworkPolicy.
pub const MAX_INGRESS_PEERS: u32 = 16;

#[cfg(test)]
mod tests {
    //! The schema's patterns (what the apiserver enforces) and the pure
    //! functions (what the grants loader, decide and the console check)
    //! must accept exactly the same values: compared on every string up to
    //! five characters over an alphabet that hits every rule, and on the
    //! length limits.
    use super::{DNS_LABEL, DNS_SUBDOMAIN, SCOPE_NAME};
    use crate::decide::is_scope_name;
    use crate::grants::validate;

    /// Every string of up to `max` characters over `alphabet`.
    fn all_strings(alphabet: &[char], max: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..max {
            let next: Vec<String> = last
                .iter()
                .flat_map(|s| {
                    alphabet.iter().map(move |c| {
                        let mut t = s.clone();
                        t.push(*c);
                        t
                    })
                })
                .collect();
            out.extend(next.iter().cloned());
            last = next;
        }
        out
    }

    /// Long values around each limit, valid and not.
    fn edges() -> Vec<String> {
        let mut out = Vec::new();
        for n in [38, 39, 40, 41, 62, 63, 64, 252, 253, 254] {
            out.push("a".repeat(n));
            out.push(format!("{}-", "a".repeat(n - 1)));
            out.push(format!("{}9", "a".repeat(n - 1)));
            out.push(format!("{}.b", "a".repeat(n - 2)));
        }
        // Subdomains made of many labels.
        out.push(vec!["abc"; 63].join("."));
        out.push(vec!["abc"; 64].join("."));
        out
    }

    fn cross_check(name: &str, pattern: &str, max_len: usize, function: impl Fn(&str) -> bool) {
        let re = regex::Regex::new(pattern).expect("pattern compiles");
        // `.` and `_` and an uppercase letter and a non-ASCII one hit the
        // character rules; `-` and digits the start/end rules.
        let alphabet = ['a', 'z', '0', '9', '-', '.', 'A', '_', 'ä'];
        let mut values = all_strings(&alphabet, 5);
        values.extend(edges());
        let mut disagree = Vec::new();
        for v in &values {
            // The schema pairs the pattern with maxLength.
            let schema = re.is_match(v) && v.chars().count() <= max_len;
            if schema != function(v) {
                disagree.push(format!("{v:?}: schema {schema}, function {}", !schema));
            }
        }
        assert!(
            disagree.is_empty(),
            "{name}: {} of {} values disagree, e.g. {:?}",
            disagree.len(),
            values.len(),
            &disagree[..disagree.len().min(5)]
        );
    }

    #[test]
    fn scope_name_pattern_and_function_agree() {
        cross_check("scope name (identity)", SCOPE_NAME, 40, |v| {
            validate::identity(v).is_ok()
        });
        cross_check("scope name (decide)", SCOPE_NAME, 40, is_scope_name);
    }

    #[test]
    fn dns_label_pattern_and_function_agree() {
        cross_check("DNS label", DNS_LABEL, 63, |v| {
            validate::dns_label(v).is_ok()
        });
    }

    #[test]
    fn dns_subdomain_pattern_and_function_agree() {
        cross_check("DNS subdomain", DNS_SUBDOMAIN, 253, |v| {
            validate::dns_subdomain(v).is_ok()
        });
    }
}
