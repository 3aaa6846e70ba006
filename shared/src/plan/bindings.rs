//! Binding differences, matched by name: the name is the alias Runtimes
//! select, so a renamed binding is a removal plus an addition.

use crate::decide::GrantBinding;

use super::types::{BindingChange, BindingChanges, FieldChange, PlanBinding};

/// The fields of a binding other than its name, with their file keys.
fn fields(b: &GrantBinding) -> [(&'static str, &str); 6] {
    [
        ("project", &b.project),
        ("environment", &b.environment),
        ("application", &b.application),
        ("service", &b.service),
        ("runtime_class", &b.runtime_class),
        ("handler", &b.handler),
    ]
}

/// What changes from `current` to `next`, each list sorted by name.
pub fn diff_bindings(current: &[GrantBinding], next: &[GrantBinding]) -> BindingChanges {
    let mut out = BindingChanges::default();
    for n in next {
        match current.iter().find(|c| c.name == n.name) {
            None => out.added.push(PlanBinding::from(n)),
            Some(c) => {
                let changed: Vec<FieldChange> = fields(c)
                    .into_iter()
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
        .map(PlanBinding::from)
        .collect();
    out.added.sort_by(|a, b| a.name.cmp(&b.name));
    out.removed.sort_by(|a, b| a.name.cmp(&b.name));
    out.changed.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
