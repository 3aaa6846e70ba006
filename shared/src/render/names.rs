//! Deterministic object names and label values that stay valid however long
//! the Runtime's name is.
//!
//! A Runtime name is a DNS subdomain (up to 253 characters, dots allowed);
//! Services need a DNS-1035 label (63, starts with a letter, no dots), Jobs
//! 63 (their name becomes a pod label), CronJobs 52 (the controller appends
//! 11 characters for each Job). When the plain name would be invalid it is
//! shortened and given a hash suffix of the *full* input, so two long names
//! that share a prefix never collide and the same input always gives the
//! same name.

use sha2::{Digest, Sha256};

/// Longest name for most managed objects (DNS-1035 label length).
pub const MAX_NAME_LEN: usize = 63;
/// Longest CronJob name.
pub const MAX_CRONJOB_NAME_LEN: usize = 52;
/// Longest label value.
pub const MAX_LABEL_VALUE_LEN: usize = 63;
/// Hex characters of the hash suffix.
const HASH_LEN: usize = 8;

/// First `HASH_LEN` hex characters of sha256(`input`).
pub fn short_hash(input: &str) -> String {
    let digest = Sha256::digest(input.as_bytes());
    let mut out = String::with_capacity(HASH_LEN);
    for byte in digest.iter().take(HASH_LEN / 2) {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `base` + `suffix` as a DNS-1035 label of at most `max` characters.
///
/// Returned unchanged when it already is one; otherwise invalid characters
/// become `-`, a leading non-letter gets an `r` in front, and the base is cut
/// so that `-<hash>` + `suffix` fits, the hash taken over the unmodified
/// input. `suffix` must itself be valid label characters (callers pass
/// constants like `-config` or already-validated names).
pub fn object_name(base: &str, suffix: &str, max: usize) -> String {
    let plain = format!("{base}{suffix}");
    if plain.len() <= max && is_dns1035_label(&plain) {
        return plain;
    }
    let hash = short_hash(&format!("{base}\u{0}{suffix}"));
    let mut cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !cleaned.starts_with(|c: char| c.is_ascii_lowercase()) {
        cleaned.insert(0, 'r');
    }
    let budget = max.saturating_sub(suffix.len() + 1 + HASH_LEN);
    cleaned.truncate(budget);
    let cleaned = cleaned.trim_end_matches('-');
    let name = if cleaned.is_empty() {
        format!("r{hash}{suffix}")
    } else {
        format!("{cleaned}-{hash}{suffix}")
    };
    // A suffix ending in '-' or containing odd characters is a caller bug;
    // trim rather than emit an invalid name.
    name.trim_end_matches('-').chars().take(max).collect()
}

/// `value` as a valid label value: unchanged when valid, else shortened with
/// a hash suffix of the full value.
pub fn label_value(value: &str) -> String {
    if is_label_value(value) {
        return value.to_string();
    }
    let hash = short_hash(value);
    let cleaned: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut cleaned = cleaned
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    cleaned.truncate(MAX_LABEL_VALUE_LEN - 1 - HASH_LEN);
    let cleaned = cleaned.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    if cleaned.is_empty() {
        hash
    } else {
        format!("{cleaned}-{hash}")
    }
}

/// Whether `s` is a DNS-1035 label: `[a-z]([-a-z0-9]*[a-z0-9])?`, ≤ 63.
pub fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    b.len() <= MAX_NAME_LEN
        && first.is_ascii_lowercase()
        && (last.is_ascii_lowercase() || last.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// Whether `s` is a valid label value (empty allowed).
pub fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return true;
    };
    b.len() <= MAX_LABEL_VALUE_LEN
        && first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Names of every object rendered for one Runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// Deployment, Service, ServiceAccount, PDB, NetworkPolicy and HPA.
    pub workload: String,
    /// The ConfigMap.
    pub config_map: String,
}

impl Names {
    /// Names for the Runtime called `runtime`.
    pub fn for_runtime(runtime: &str) -> Self {
        Self {
            workload: object_name(runtime, "", MAX_NAME_LEN),
            config_map: object_name(runtime, "-config", MAX_NAME_LEN),
        }
    }
}

/// The Job for `jobs[]` entry `job`.
pub fn job_name(runtime: &str, job: &str) -> String {
    object_name(&format!("{runtime}-job-{job}"), "", MAX_NAME_LEN)
}

/// The CronJob for `schedules[]` entry `schedule`.
pub fn cronjob_name(runtime: &str, schedule: &str) -> String {
    object_name(
        &format!("{runtime}-cron-{schedule}"),
        "",
        MAX_CRONJOB_NAME_LEN,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_kept() {
        assert_eq!(object_name("worker", "", 63), "worker");
        assert_eq!(object_name("worker", "-config", 63), "worker-config");
        assert_eq!(job_name("worker", "migrate"), "worker-job-migrate");
        assert_eq!(cronjob_name("worker", "nightly"), "worker-cron-nightly");
        assert_eq!(label_value("worker"), "worker");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "a".repeat(200);
        let name = object_name(&long, "-config", 63);
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("-config"));
        assert!(is_dns1035_label(&name), "{name}");
        assert_eq!(name, object_name(&long, "-config", 63), "deterministic");
        // Same 63-char prefix, different tails: different names.
        let other = format!("{}b", "a".repeat(199));
        assert_ne!(object_name(&other, "-config", 63), name);
        let cron = cronjob_name(&long, "nightly");
        assert!(cron.len() <= 52 && is_dns1035_label(&cron), "{cron}");
    }

    #[test]
    fn invalid_characters_and_leading_digits() {
        let dotted = object_name("my.app", "", 63);
        assert!(
            is_dns1035_label(&dotted) && dotted.starts_with("my-app-"),
            "{dotted}"
        );
        assert_ne!(
            dotted,
            object_name("my-app", "", 63),
            "no collision with the plain name"
        );
        let digit = object_name("1app", "", 63);
        assert!(
            is_dns1035_label(&digit) && digit.starts_with("r1app-"),
            "{digit}"
        );
        let v = label_value(&format!("{}.x", "a".repeat(100)));
        assert!(is_label_value(&v) && v.len() <= 63, "{v}");
        assert!(is_label_value(&label_value("-.-")));
        assert!(is_label_value(&label_value("a.b.c")));
    }
}
