//! Reading Rust source as text: comments and strings left out, use-trees
//! and paths read whole, inline modules split off. Deliberately a scan,
//! not a parser (see [`super`]).

use std::collections::BTreeSet;

/// `code` without comments (line comments, doc comments and block
/// comments) and string literals, which name modules without importing
/// them.
pub(crate) fn code_only(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push_str("\"\"");
            }
            // A char literal ('"', '{') would open a string or a group.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                let literal = rest.starts_with('\\') && rest.chars().nth(2) == Some('\'')
                    || rest.chars().nth(1) == Some('\'');
                if literal {
                    for c in chars.by_ref() {
                        if c == '\'' {
                            break;
                        }
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every path written after `prefix` in `code`, whole: `prefix a::b`,
/// and `prefix{a, b::{c, self}}` as `[a]`, `[b, c]` and `[b]`. A prefix
/// that continues a longer path (`x::super::`) does not count.
pub fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find(prefix) {
        let start = at + i;
        at = start + prefix.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c == ':' || c.is_alphanumeric() || c == '_') {
            continue;
        }
        tree(&code[at..], &mut Vec::new(), &mut out);
    }
    out
}

/// Reads one use-tree at the start of `s` onto `base`, pushing each whole
/// path to `out`; returns the bytes read.
pub(crate) fn tree(s: &str, base: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let depth = base.len();
    let mut pos = 0;
    loop {
        let rest = &s[pos..];
        let trimmed = rest.trim_start();
        pos += rest.len() - trimmed.len();
        if let Some(group) = trimmed.strip_prefix('{') {
            pos += 1;
            let mut inner = 0;
            loop {
                inner += tree(&group[inner..], base, out);
                let rest = &group[inner..];
                let t = rest.trim_start();
                inner += rest.len() - t.len();
                if let Some(after) = t.strip_prefix(',') {
                    inner += 1;
                    if after.trim_start().starts_with('}') {
                        let skipped = after.len() - after.trim_start().len();
                        inner += skipped + 1;
                        break;
                    }
                } else {
                    if t.starts_with('}') {
                        inner += 1;
                    }
                    break;
                }
            }
            pos += inner;
            base.truncate(depth);
            return pos;
        }
        let word: String = trimmed
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        pos += word.len();
        if word == "self" {
            // `{self, ..}`: the path so far.
            if base.len() > depth || !base.is_empty() {
                out.push(base.clone());
            }
            base.truncate(depth);
            return pos;
        }
        let more = trimmed[word.len()..].starts_with("::");
        base.push(word);
        if more {
            pos += 2;
            continue;
        }
        break;
    }
    if base.len() > depth {
        out.push(base.clone());
    }
    base.truncate(depth);
    pos
}

/// `code` split into its own part and the body of each inline module
/// (`mod name { … }`, nested ones too), each with the inline path to it:
/// the first entry is the file's own code, with the bodies cut out.
pub(crate) fn inline_modules(code: &str) -> Vec<(Vec<String>, String)> {
    fn split(code: &str, path: &[String], out: &mut Vec<(Vec<String>, String)>) {
        let mut own = String::with_capacity(code.len());
        let mut rest = code;
        while let Some((name, start, open)) = next_inline_mod(rest) {
            own.push_str(&rest[..start]);
            let body_start = open + 1;
            let mut depth = 1usize;
            let mut end = rest.len();
            for (j, c) in rest[body_start..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = body_start + j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let mut inner = path.to_vec();
            inner.push(name);
            split(&rest[body_start..end], &inner, out);
            rest = rest.get(end + 1..).unwrap_or("");
        }
        own.push_str(rest);
        out.push((path.to_vec(), own));
    }
    let mut out = Vec::new();
    split(code, &[], &mut out);
    out.sort_by_key(|(p, _)| p.len());
    out
}

/// The next `mod name {` in `code`: the name, where `mod` starts and
/// where its brace is.
pub(crate) fn next_inline_mod(code: &str) -> Option<(String, usize, usize)> {
    let mut at = 0;
    while let Some(i) = code[at..].find("mod ") {
        let start = at + i;
        at = start + 4;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let after = &code[at..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let tail = after[name.len()..].trim_start();
        if !name.is_empty() && tail.starts_with('{') {
            let brace = at + name.len() + (after.len() - name.len() - tail.len());
            return Some((name, start, brace));
        }
    }
    None
}

/// `code` without its `mod x;` declarations (a name, not a use).
pub(crate) fn without_declarations(code: &str) -> String {
    code.lines()
        .filter(|l| {
            let t = l.trim_start();
            !((t.starts_with("mod ")
                || t.starts_with("pub mod ")
                || t.starts_with("pub(crate) mod "))
                && t.ends_with(';'))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` calls `name(…)` (not as a method or a path's end).
pub(crate) fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].trim_start();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':')
            && after.starts_with('(')
    })
}

/// Every identifier of `code`.
pub(crate) fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `code` without its `pub use …;` and `pub(crate) use …;` statements.
pub(crate) fn without_reexports(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let next = ["pub use ", "pub(crate) use "]
            .iter()
            .filter_map(|k| rest.find(k))
            .min();
        let Some(i) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i]);
        rest = rest[i..].split_once(';').map_or("", |(_, after)| after);
    }
}

/// The paths of `use` statements starting with `keyword` (`pub use `).
pub(crate) fn uses(code: &str, keyword: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line_start in code.match_indices(keyword).map(|(i, _)| i) {
        let before = code[..line_start].chars().next_back();
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        tree(
            &code[line_start + keyword.len()..],
            &mut Vec::new(),
            &mut out,
        );
    }
    out
}

/// Every path that starts with a plain word followed by `::` (candidates
/// for a module's own children; [`resolve`] keeps those that are).
pub(crate) fn paths_after_words(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let starts_word = (c.is_ascii_lowercase() || c == '_')
            && (i == 0 || {
                let p = bytes[i - 1] as char;
                !(p.is_alphanumeric() || p == '_' || p == ':')
            });
        if starts_word {
            let word: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = i + word.len();
            if code[after..].starts_with("::")
                && !matches!(word.as_str(), "crate" | "super" | "self" | "std")
            {
                let mut paths = Vec::new();
                tree(&code[i..], &mut Vec::new(), &mut paths);
                out.extend(paths.into_iter().map(|mut p| {
                    p.insert(0, "self".into());
                    p
                }));
                // A bare path's own children only: `b::` in module M.
                out.retain(|p: &Vec<String>| p.len() > 1);
            }
            i = after.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}
