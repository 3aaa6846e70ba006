//! The adversary's books: which paths of which kind were attacked, what
//! became of each attack, and the report (`contract_schema.rs` plays the
//! attacks on the real control plane). Pure.

use std::collections::BTreeMap;
use std::fmt::Write;

use berth_shared::contract::coverage::{Coverage, classify, tolerance};
use berth_shared::contract::{Allowed, Kind};

use super::KindFields;

/// Where a field path of a kind stands for the adversary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Inside a governed part: attacked.
    Attack,
    /// Inside a governed part, at a field the allowlist tolerates with any
    /// value (the autoscaler's replica count, an allocated address): not
    /// attacked; the row's path.
    Allowlisted(&'static str),
    /// Outside the governed parts, named by an UNGOVERNED row (or an
    /// object whose fields all are): counted, not attacked.
    Ungoverned,
    /// Neither governed nor named: a gap in the table.
    Uncovered,
}

/// Every field path of `kind` with its standing.
pub fn standings(kind: Kind, kf: &KindFields) -> Vec<(String, Standing)> {
    let paths: Vec<&str> = kf.fields.iter().map(|f| f.path.as_str()).collect();
    classify(kind, &paths)
        .into_iter()
        .zip(&paths)
        .map(|(c, path)| {
            let standing = match c {
                Coverage::Governed(_) => match tolerance(kind, path) {
                    Some(row) if row.allowed == Allowed::Any => Standing::Allowlisted(row.path),
                    _ => Standing::Attack,
                },
                Coverage::Ungoverned(_) | Coverage::Parent => Standing::Ungoverned,
                Coverage::Uncovered => Standing::Uncovered,
            };
            (path.to_string(), standing)
        })
        .collect()
}

/// What became of one attacked path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It landed, and the agent removed it (as stored).
    Removed,
    /// The apiserver took the patch and did not keep the value (it dropped
    /// or normalized it away): nothing to remove.
    NotStored,
    /// The apiserver refused every value tried; the last reason.
    Refused(String),
    /// No value other than the one already there (a one-member enum).
    NoOtherValue,
    /// It stayed, and the allowlist tolerates that value there.
    Tolerated,
    /// It stayed: a finding. The concrete pointer and the value.
    Leftover { pointer: String, value: String },
}

/// One kind's counts.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub paths: usize,
    pub governed: usize,
    pub allowlisted: usize,
    pub ungoverned: usize,
    pub uncovered: Vec<String>,
    /// Paths attacked in this run (all governed ones, or the sample's).
    pub attacked: usize,
    pub outcomes: BTreeMap<String, Outcome>,
}

/// The whole run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub kinds: BTreeMap<Kind, Tally>,
    /// Every refusal by the apiserver (a value, not a path: a path tried
    /// with several values counts each), by reason.
    pub refusals: BTreeMap<String, usize>,
}

impl Report {
    /// Counts `kind`'s paths by standing; `attacked` of them are played.
    pub fn count(&mut self, kind: Kind, standings: &[(String, Standing)], attacked: usize) {
        let t = self.kinds.entry(kind).or_default();
        t.paths = standings.len();
        for (path, s) in standings {
            match s {
                Standing::Attack => t.governed += 1,
                Standing::Allowlisted(_) => {
                    t.governed += 1;
                    t.allowlisted += 1;
                }
                Standing::Ungoverned => t.ungoverned += 1,
                Standing::Uncovered => t.uncovered.push(path.clone()),
            }
        }
        t.attacked = attacked;
    }

    /// What became of `path`.
    pub fn record(&mut self, kind: Kind, path: &str, outcome: Outcome) {
        self.kinds
            .entry(kind)
            .or_default()
            .outcomes
            .insert(path.to_string(), outcome);
    }

    /// One refusal by the apiserver.
    pub fn refused(&mut self, reason: &str) {
        *self.refusals.entry(reason.to_string()).or_default() += 1;
    }

    /// The findings: every path that stayed and is not tolerated, and
    /// every path the table does not cover.
    pub fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (kind, t) in &self.kinds {
            for (path, o) in &t.outcomes {
                if let Outcome::Leftover { pointer, value } = o {
                    out.push(format!(
                        "{} {path}: {value} at {pointer} stayed",
                        kind.as_str()
                    ));
                }
            }
            for path in &t.uncovered {
                out.push(format!(
                    "{} {path}: neither governed nor named by an UNGOVERNED row",
                    kind.as_str()
                ));
            }
        }
        out
    }

    /// The report: a table of counts per kind, the paths refused for every
    /// value, the refusals by reason, the findings.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>8} {:>11} {:>10} {:>8} {:>7} {:>10} {:>7} {:>9} {:>8}",
            "kind",
            "paths",
            "governed",
            "allowlisted",
            "ungoverned",
            "attacked",
            "removed",
            "not-stored",
            "refused",
            "tolerated",
            "leftover"
        );
        let mut total = [0usize; 10];
        for (kind, t) in &self.kinds {
            let n = |f: fn(&Outcome) -> bool| t.outcomes.values().filter(|o| f(o)).count();
            let row = [
                t.paths,
                t.governed,
                t.allowlisted,
                t.ungoverned,
                t.attacked,
                n(|o| *o == Outcome::Removed),
                n(|o| *o == Outcome::NotStored),
                n(|o| matches!(o, Outcome::Refused(_) | Outcome::NoOtherValue)),
                n(|o| *o == Outcome::Tolerated),
                n(|o| matches!(o, Outcome::Leftover { .. })),
            ];
            for (sum, v) in total.iter_mut().zip(row) {
                *sum += v;
            }
            let _ = writeln!(
                out,
                "{:<24} {:>6} {:>8} {:>11} {:>10} {:>8} {:>7} {:>10} {:>7} {:>9} {:>8}",
                kind.as_str(),
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                row[7],
                row[8],
                row[9]
            );
        }
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>8} {:>11} {:>10} {:>8} {:>7} {:>10} {:>7} {:>9} {:>8}",
            "total",
            total[0],
            total[1],
            total[2],
            total[3],
            total[4],
            total[5],
            total[6],
            total[7],
            total[8],
            total[9]
        );
        let refused: Vec<String> = self
            .kinds
            .iter()
            .flat_map(|(kind, t)| {
                t.outcomes.iter().filter_map(move |(path, o)| match o {
                    Outcome::Refused(reason) => {
                        Some(format!("  {} {path}: {reason}", kind.as_str()))
                    }
                    Outcome::NoOtherValue => Some(format!(
                        "  {} {path}: no value other than the one there",
                        kind.as_str()
                    )),
                    _ => None,
                })
            })
            .collect();
        let _ = writeln!(
            out,
            "\npaths the apiserver refused for every value tried ({}):",
            refused.len()
        );
        for line in refused {
            let _ = writeln!(out, "{line}");
        }
        let mut reasons: Vec<(&String, &usize)> = self.refusals.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let _ = writeln!(
            out,
            "\nvalues the apiserver refused, by reason ({} refusals):",
            self.refusals.values().sum::<usize>()
        );
        for (reason, n) in reasons {
            let _ = writeln!(out, "  {n:>5}  {reason}");
        }
        let findings = self.findings();
        let _ = writeln!(out, "\nfindings ({}):", findings.len());
        for f in findings {
            let _ = writeln!(out, "  {f}");
        }
        out
    }
}

/// The reason an apiserver refusal gives, without what varies from one
/// value or object to the next (the object's name, the field's position,
/// the value): `Deployment.apps "web" is invalid:
/// spec.template.spec.containers[0].ports[1].containerPort: Invalid value:
/// 70000: must be between 1 and 65535, inclusive` becomes `Invalid value:
/// …: must be between 1 and 65535, inclusive`.
pub fn reason(message: &str) -> String {
    let cause = match message.split_once("is invalid: ") {
        Some((_, causes)) => {
            let first = causes
                .trim_start_matches('[')
                .split(", spec.")
                .next()
                .unwrap_or_default()
                .trim_end_matches(']');
            // `field.path[0]: Reason: detail` → `Reason: detail`.
            match first.split_once(": ") {
                Some((field, rest)) if !field.contains(' ') => rest,
                _ => first,
            }
        }
        None => message,
    };
    let cause = match cause.strip_prefix("Invalid value: ") {
        Some(rest) => {
            let detail = rest
                .char_indices()
                .find(|&(i, _)| rest[i..].starts_with(": ") && balanced(&rest[..i]))
                .map_or("", |(i, _)| &rest[i + 2..]);
            format!("Invalid value: …: {detail}")
        }
        None => cause.to_string(),
    };
    let mut short: String = cause.chars().take(120).collect();
    if cause.chars().count() > 120 {
        short.push('…');
    }
    short
}

/// Whether `s` closes every quote it opens (a value may contain `: `).
fn balanced(s: &str) -> bool {
    s.chars().filter(|c| *c == '"').count() % 2 == 0
}

/// `n` of `items`, chosen by `seed` (the same seed, the same sample), in
/// their original order; all of them when `n` is `None` or at least as
/// many.
pub fn sample<T: Clone>(items: &[T], n: Option<usize>, seed: u64) -> Vec<T> {
    let Some(n) = n.filter(|n| *n < items.len()) else {
        return items.to_vec();
    };
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut picked: Vec<usize> = (0..items.len()).collect();
    rng.shuffle(&mut picked);
    picked.truncate(n);
    picked.sort_unstable();
    picked.into_iter().map(|i| items[i].clone()).collect()
}
