//! Binding differences, matched by name: the name is the alias Runtimes
//! select, so a renamed binding is a removal plus an addition.

use crate::decide::GrantBinding;

use super::types::{BindingChange, BindingChanges, FieldChange};

/// The fields of a binding other than its name, with their file keys.
fn fields(b: &GrantBinding) -> impl Iterator<Item = (&'static str, &str)> {
    b.file_fields().into_iter().skip(1)
}

/// What changes from `current` to `next`, each list sorted by name.
pub fn diff_bindings(current: &[GrantBinding], next: &[GrantBinding]) -> BindingChanges {
    let mut out = BindingChanges::default();
    for n in next {
        match current.iter().find(|c| c.name == n.name) {
            None => out.added.push(n.clone()),
            Some(c) => {
                let changed: Vec<FieldChange> = fields(c)
                    .zip(fields(n))
                    .filter(|((_, a), (_, b))| a != b)
                    .map(|((field, from), (_, to))| FieldChange {
                        field: field.to_string(),
                        from: from.to_string(),
                        to: to.to_string(),
                    })
                    .collect();
                if !changed.is_empty() {
                    out.changed.push(BindingChange {
                        name: n.name.clone(),
                        fields: changed,
                    });
                }
            }
        }
    }
    out.removed = current
        .iter()
        .filter(|c| !next.iter().any(|n| n.name == c.name))
        .cloned()
        .collect();
    out.added.sort_by(|a, b| a.name.cmp(&b.name));
    out.removed.sort_by(|a, b| a.name.cmp(&b.name));
    out.changed.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
