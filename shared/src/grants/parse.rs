//! Bytes → bindings: encoding checks, TOML parsing, strict schema walk.
//!
//! The document is parsed into toml's spanned tree ([`DeTable`]) rather than
//! deserialized with serde, so that every problem in every binding is found
//! (serde stops at the first) and each one carries its line and column.

use std::collections::HashMap;

use toml::de::{DeTable, DeValue};

use super::error::{FormatIssue, Position, Problem, TableRef};
use super::excerpt;
use super::limits::{MAX_BINDINGS, SCHEMA_VERSION};
use super::validate;
use crate::binding::Binding;
use crate::binding::Identity;

/// The keys of a binding, in the order of [`Binding`]'s fields.
pub(crate) use crate::binding::FILE_KEYS as BINDING_KEYS;

/// Longest TOML parser message kept, in characters.
const MAX_SYNTAX_MESSAGE_CHARS: usize = 160;

/// Most problems listed for one file; the rest are counted. More than the
/// 64 x 7 value errors a file within the binding limit can have, so such a
/// file always gets every error; a hostile file cannot make the report (or the
/// time to build it) unbounded.
pub const MAX_REPORTED_PROBLEMS: usize = 500;

type Validator = fn(&str) -> Result<(), FormatIssue>;

/// Byte offset → line and column, with an index of line starts so that each
/// lookup costs a binary search plus the length of one line.
struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    fn new(text: &'t str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    fn line_index(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|s| *s <= offset)
            .saturating_sub(1)
    }

    fn line(&self, offset: usize) -> u32 {
        u32::try_from(self.line_index(offset) + 1).unwrap_or(u32::MAX)
    }

    fn at(&self, offset: usize) -> Position {
        let idx = self.line_index(offset);
        let start = self.starts.get(idx).copied().unwrap_or(0);
        let line_text = self.text.get(start..).unwrap_or("");
        let rel = offset.saturating_sub(start);
        let mut pos = Position::of_offset(line_text, rel);
        // of_offset counted within this line only: it is line 1 there.
        pos.line = u32::try_from(idx + 1).unwrap_or(u32::MAX);
        pos
    }
}

/// Collects problems up to [`MAX_REPORTED_PROBLEMS`], counting the rest.
struct Sink<'t> {
    lines: LineIndex<'t>,
    problems: Vec<Problem>,
    omitted: usize,
}

impl Sink<'_> {
    fn report(&mut self, make: impl FnOnce(&LineIndex<'_>) -> Problem) {
        if self.problems.len() < MAX_REPORTED_PROBLEMS {
            let problem = make(&self.lines);
            self.problems.push(problem);
        } else {
            self.omitted += 1;
        }
    }
}

fn validator(key: &str) -> (Validator, &'static str) {
    match key {
        "name" | "handler" => (validate::dns_label, validate::LABEL_SYNTAX),
        "runtime_class" => (validate::dns_subdomain, validate::SUBDOMAIN_SYNTAX),
        _ => (validate::identity, validate::IDENTITY_SYNTAX),
    }
}

fn type_name(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Parse and validate the content of a grants file.
///
/// Pure: no I/O, never panics on any input (fuzzed and property-tested).
/// Size is not checked here; [`super::load`] refuses files over
/// [`super::MAX_FILE_BYTES`] before calling this. On failure, returns every
/// problem found, sorted by position.
pub fn parse_bytes(bytes: &[u8]) -> Result<Vec<Binding>, Vec<Problem>> {
    let mut problems = Vec::new();

    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        problems.push(Problem::ByteOrderMark);
    }
    let nul = bytes.iter().position(|b| *b == 0);
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            // The prefix is valid UTF-8 by construction; fall back to an empty
            // prefix rather than panic if that ever were not so.
            let prefix = std::str::from_utf8(valid).unwrap_or("");
            if let Some(n) = nul.filter(|n| *n < prefix.len()) {
                problems.push(Problem::NulByte {
                    at: Position::of_offset(prefix, n),
                });
            }
            problems.push(Problem::NotUtf8 {
                at: Position::of_offset(prefix, prefix.len()),
            });
            return Err(problems);
        }
    };
    if let Some(n) = nul {
        problems.push(Problem::NulByte {
            at: Position::of_offset(text, n),
        });
        return Err(problems);
    }

    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            problems.push(Problem::Syntax {
                at: e.span().map(|s| Position::of_offset(text, s.start)),
                message: excerpt::sanitize(e.message(), MAX_SYNTAX_MESSAGE_CHARS),
            });
            return Err(problems);
        }
    };

    let mut sink = Sink {
        lines: LineIndex::new(text),
        problems,
        omitted: 0,
    };
    let bindings = walk_document(doc.get_ref(), &mut sink);
    let Sink {
        mut problems,
        omitted,
        ..
    } = sink;
    if problems.is_empty() {
        Ok(bindings)
    } else {
        // Stable: problems at the same place keep the order they were found in.
        problems.sort_by_key(Problem::position);
        if omitted > 0 {
            problems.push(Problem::Truncated { omitted });
        }
        Err(problems)
    }
}

fn walk_document(root: &DeTable<'_>, sink: &mut Sink<'_>) -> Vec<Binding> {
    let mut saw_version = false;
    let mut bindings = Vec::new();

    // Look at schema_version first: a file written for another version is
    // reported as exactly that, without a flood of follow-on schema errors.
    for (key, value) in root.iter() {
        if key.get_ref().as_ref() != "schema_version" {
            continue;
        }
        saw_version = true;
        match value.get_ref() {
            DeValue::Integer(int) => match i64::from_str_radix(int.as_str(), int.radix()) {
                Ok(SCHEMA_VERSION) => {}
                Ok(other) => {
                    // Only a BOM can have been reported before this.
                    sink.report(|l| Problem::UnsupportedSchemaVersion {
                        at: l.at(value.span().start),
                        found: other.to_string(),
                    });
                    return bindings;
                }
                Err(_) => {
                    // Only a BOM can have been reported before this.
                    sink.report(|l| Problem::UnsupportedSchemaVersion {
                        at: l.at(value.span().start),
                        found: excerpt::sanitize(int.as_str(), excerpt::MAX_EXCERPT_CHARS),
                    });
                    return bindings;
                }
            },
            other => sink.report(|l| Problem::WrongType {
                at: l.at(value.span().start),
                what: "schema_version".to_owned(),
                expected: "the integer 1",
                found: type_name(other),
            }),
        }
    }

    for (key, value) in root.iter() {
        match key.get_ref().as_ref() {
            "schema_version" => {}
            "bindings" => match value.get_ref() {
                DeValue::Array(items) => {
                    if items.len() > MAX_BINDINGS {
                        let first_extra = items
                            .get(MAX_BINDINGS)
                            .map_or(value.span().start, |v| v.span().start);
                        sink.report(|l| Problem::TooManyBindings {
                            at: l.at(first_extra),
                            count: items.len(),
                            max: MAX_BINDINGS,
                        });
                    }
                    bindings = walk_bindings(items, sink);
                }
                other => sink.report(|l| Problem::WrongType {
                    at: l.at(value.span().start),
                    what: "bindings".to_owned(),
                    expected: "an array of tables ([[bindings]])",
                    found: type_name(other),
                }),
            },
            other => sink.report(|l| Problem::UnknownKey {
                at: l.at(key.span().start),
                table: TableRef::TopLevel,
                key: excerpt::quote(other),
            }),
        }
    }

    if !saw_version {
        sink.report(|_| Problem::MissingKey {
            at: None,
            table: TableRef::TopLevel,
            key: "schema_version",
        });
    }
    // A file without `bindings` grants nothing: the natural result of
    // deleting the last `[[bindings]]` table must not stop the agent (with
    // the webhook failing closed, no Runtime could then be changed).
    bindings
}

fn walk_bindings(items: &[toml::Spanned<DeValue<'_>>], sink: &mut Sink<'_>) -> Vec<Binding> {
    let mut bindings = Vec::new();
    // name → (index, line of the name value)
    let mut names: HashMap<String, (usize, u32)> = HashMap::new();

    for (index, item) in items.iter().enumerate() {
        let table_ref = TableRef::Binding(index);
        let DeValue::Table(table) = item.get_ref() else {
            sink.report(|l| Problem::WrongType {
                at: l.at(item.span().start),
                what: format!("bindings[{index}]"),
                expected: "a table",
                found: type_name(item.get_ref()),
            });
            continue;
        };

        let mut fields: [Option<String>; 7] = Default::default();
        let mut seen = [false; 7];
        let mut complete = true;
        for (key, value) in table.iter() {
            let key_str = key.get_ref().as_ref();
            let Some(slot) = BINDING_KEYS.iter().position(|k| *k == key_str) else {
                sink.report(|l| Problem::UnknownKey {
                    at: l.at(key.span().start),
                    table: table_ref,
                    key: excerpt::quote(key_str),
                });
                continue;
            };
            seen[slot] = true;
            let static_key = BINDING_KEYS[slot];
            let DeValue::String(s) = value.get_ref() else {
                sink.report(|l| Problem::WrongType {
                    at: l.at(value.span().start),
                    what: format!("bindings[{index}].{static_key}"),
                    expected: "a string",
                    found: type_name(value.get_ref()),
                });
                complete = false;
                continue;
            };
            let (check, syntax) = validator(static_key);
            match check(s) {
                Ok(()) => fields[slot] = Some(s.to_string()),
                Err(issue) => {
                    sink.report(|l| Problem::InvalidValue {
                        at: l.at(value.span().start),
                        table: table_ref,
                        key: static_key,
                        value: excerpt::quote(s),
                        syntax,
                        issue,
                    });
                    complete = false;
                }
            }
            if static_key == "name"
                && let Some(name) = &fields[slot]
            {
                note_name(
                    &mut names,
                    sink,
                    (index, table_ref),
                    name,
                    value.span().start,
                );
            }
        }
        if !all_seen(&seen, sink, table_ref, item.span().start) {
            complete = false;
        }
        if complete
            && let [
                Some(name),
                Some(project),
                Some(environment),
                Some(application),
                Some(service),
                Some(runtime_class),
                Some(handler),
            ] = fields
        {
            bindings.push(Binding {
                name,
                identity: Identity {
                    project,
                    environment,
                    application,
                    service,
                },
                runtime_class,
                handler,
            });
        }
    }
    bindings
}

/// Remembers a binding's name, reporting a name given twice (with the
/// first's index and line).
fn note_name(
    names: &mut HashMap<String, (usize, u32)>,
    sink: &mut Sink<'_>,
    (index, table_ref): (usize, TableRef),
    name: &str,
    offset: usize,
) {
    match names.get(name) {
        Some(&(first_index, first_line)) => sink.report(|l| Problem::DuplicateName {
            at: l.at(offset),
            table: table_ref,
            name: excerpt::quote(name),
            first_index,
            first_line,
        }),
        None => {
            names.insert(name.to_string(), (index, sink.lines.line(offset)));
        }
    }
}

/// Whether a binding gave every key; each missing one is reported.
fn all_seen(seen: &[bool; 7], sink: &mut Sink<'_>, table_ref: TableRef, start: usize) -> bool {
    let mut all = true;
    for (slot, key) in BINDING_KEYS.iter().enumerate() {
        if !seen[slot] {
            sink.report(|l| Problem::MissingKey {
                at: Some(l.at(start)),
                table: table_ref,
                key,
            });
            all = false;
        }
    }
    all
}
