//! The import circles of a crate, for every crate's layering test.
//!
//! At every level of the module tree, the modules of one folder form a
//! graph: the folder's own file (`mod.rs`, `lib.rs`: "the parent") and
//! each child (a file, or a folder with everything below it). A module
//! imports another when its non-test code names it or an item of it:
//! `crate::a::b`, `super::b`, `self::b` and bare `b::` for a child `b`
//! of a module's own file, `use` groups included. An item the parent
//! re-exports from a child (`pub use b::Thing`) counts as the child's. A
//! circle — two modules that import each other, directly or round a
//! longer path — means neither can be read, tested or moved without the
//! other; every circle is reported with one path round it.
//!
//! Deliberately a scan, not a parser: it reads paths the way they are
//! written in this repository (rustfmt's layout), and what it cannot
//! resolve (a path through an external crate, a local variable) it leaves
//! out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// A module's path below the crate root (`["store", "meta"]`); the root
/// is `[]`.
pub type ModulePath = Vec<String>;

/// One source file's module and its non-test code.
#[derive(Clone, Debug)]
pub struct Source {
    pub module: ModulePath,
    /// Whether this is a folder's own file (`mod.rs`, `lib.rs`, `main.rs`).
    pub folder: bool,
    pub code: String,
}

/// A module of a folder's graph: the folder's own file or a child.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    /// The folder's own file.
    Parent,
    /// A child module, with everything below it.
    Child(String),
}

impl Node {
    fn name(&self, folder: &[String]) -> String {
        match self {
            Node::Parent if folder.is_empty() => "the crate root".into(),
            Node::Parent => format!("{} (own file)", folder.join("::")),
            Node::Child(c) if folder.is_empty() => c.clone(),
            Node::Child(c) => format!("{}::{c}", folder.join("::")),
        }
    }
}

/// One folder's graph: who imports whom among its modules, with the first
/// path seen for each import (what a report names).
pub type Graph = BTreeMap<Node, BTreeMap<Node, String>>;

/// Each folder's graph.
pub type Graphs = BTreeMap<ModulePath, Graph>;

/// The circles of the crate whose sources are under `src` (its `lib.rs`
/// or `main.rs` at the top), one line each, naming the modules and one
/// path round them; empty when there are none.
pub fn circles(src: &Path) -> Vec<String> {
    report(&graphs(&read_sources(src)))
}

/// Fails, naming every circle, when the crate under `src` has one that
/// `waiting` does not list. `waiting` holds circles left for their owner to
/// break, each as the start of its report line with why it may stand for
/// now; one that is gone fails too, so that its entry goes.
pub fn assert_no_circles(crate_name: &str, src: &Path, waiting: &[(&str, &str)]) {
    let found = circles(src);
    let unexpected: Vec<&str> = found
        .iter()
        .map(String::as_str)
        .filter(|c| !waiting.iter().any(|(w, _)| c.starts_with(w)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "import circles in {crate_name}:\n{}",
        unexpected.join("\n")
    );
    for (circle, why) in waiting {
        assert!(
            found.iter().any(|c| c.starts_with(circle)),
            "{crate_name}: {circle} is gone ({why}): remove it from the waiting list"
        );
    }
}

/// Every non-test `.rs` file under `src`, with its module path: test
/// files (`tests.rs`, `*_tests.rs`, modules declared `#[cfg(test)]`) are
/// left out, and so are items marked `#[cfg(test)]`.
pub fn read_sources(src: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    walk(src, &[], &mut out);
    out
}

fn walk(dir: &Path, module: &[String], out: &mut Vec<Source>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    let mut test_modules = Vec::new();
    for path in &files {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let own = matches!(stem, "mod" | "lib" | "main");
        if own && path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, tests) = strip_test_items(&text);
            test_modules.extend(tests);
            out.push(Source {
                module: module.to_vec(),
                folder: true,
                code,
            });
        }
    }
    for path in &files {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if matches!(stem, "mod" | "lib" | "main" | "tests")
            || stem.ends_with("_tests")
            || test_modules.iter().any(|t| t == stem)
        {
            continue;
        }
        let mut child = module.to_vec();
        child.push(stem.to_string());
        if path.is_dir() {
            if path.join("mod.rs").is_file() || !path.with_extension("rs").is_file() {
                walk(path, &child, out);
            } else {
                // `a.rs` beside `a/`: the folder holds a.rs's children.
                walk_children_of(path, &child, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).expect("read source");
            let (code, tests) = strip_test_items(&text);
            out.push(Source {
                module: child.clone(),
                folder: path.with_extension("").is_dir(),
                code,
            });
            let _ = tests;
        }
    }
}

fn walk_children_of(dir: &Path, module: &[String], out: &mut Vec<Source>) {
    let mut inner = Vec::new();
    walk(dir, module, &mut inner);
    // No own file in the folder: `a.rs` beside it is the folder's file.
    inner.retain(|s| !(s.folder && s.module == module));
    out.extend(inner);
}

/// `text` without the items marked `#[cfg(test)]`, and the names of the
/// test-only module files it declares (`#[cfg(test)] mod tests;`).
pub fn strip_test_items(text: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut test_files = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        out.push_str(&rest[..i]);
        let item = &rest[i + MARK.len()..];
        // The item ends at its first `;` outside braces, or at the brace
        // closing its body.
        let mut depth = 0usize;
        let mut end = item.len();
        for (j, c) in item.char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let decl = item[..end].trim();
        if decl.ends_with(';') && !decl.contains('{') && decl.contains("mod ") {
            let name = decl
                .trim_end_matches(';')
                .split_whitespace()
                .last()
                .unwrap_or_default();
            test_files.push(name.to_string());
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// `code` without comments (line comments, doc comments and block
/// comments) and string literals, which name modules without importing
/// them.
fn code_only(code: &str) -> String {
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
fn tree(s: &str, base: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
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

/// Builds every folder's graph from the sources.
pub fn graphs(sources: &[Source]) -> Graphs {
    let modules: BTreeSet<ModulePath> = sources.iter().map(|s| s.module.clone()).collect();
    // What each folder's own file re-exports from where: `pub use b::X`.
    let mut reexports: BTreeMap<(ModulePath, String), ModulePath> = BTreeMap::new();
    for s in sources.iter().filter(|s| s.folder) {
        let code = code_only(&s.code);
        for path in uses(&code, "pub use ")
            .into_iter()
            .chain(uses(&code, "pub(crate) use "))
        {
            if let Some(abs) = resolve(&s.module, true, &path, &modules)
                && let Some(name) = path.last()
            {
                reexports.insert((s.module.clone(), name.clone()), abs);
            }
        }
    }
    let mut graphs = Graphs::new();
    for s in sources {
        // A folder's re-exports are its children's items, not its own
        // use of them (they count where they are used).
        let code = without_reexports(&code_only(&s.code));
        // Inline modules (`mod enabled { use super::Error; }`) resolve
        // their paths from where they are, and count as their file.
        let segments = inline_modules(&code);
        let mut named: Vec<(ModulePath, Vec<String>)> = Vec::new();
        for (inline, segment) in &segments {
            let mut at = s.module.clone();
            at.extend(inline.iter().cloned());
            for prefix in ["crate::", "super::", "self::"] {
                for path in paths_after(segment, prefix) {
                    let mut full = vec![prefix.trim_end_matches("::").to_string()];
                    full.extend(path);
                    named.push((at.clone(), full));
                }
            }
            // Bare paths to the module's own children (`b::x`, `use b::{..}`).
            for path in paths_after_words(segment) {
                named.push((at.clone(), path));
            }
        }
        let code = segments
            .into_iter()
            .next()
            .map(|(_, c)| c)
            .unwrap_or_default();
        // A folder's file using, by name, what it re-exports from a child.
        if s.folder {
            let declared = without_declarations(&code);
            let words = words(&declared);
            for ((folder, name), _) in reexports.range((s.module.clone(), String::new())..) {
                if *folder != s.module {
                    break;
                }
                // A type or constant by its name; a function by a call
                // (a lowercase name alone is as often a variable).
                let used = if name.starts_with(|c: char| c.is_lowercase()) {
                    calls(&declared, name)
                } else {
                    words.contains(name.as_str())
                };
                if used {
                    named.push((s.module.clone(), vec!["self".into(), name.clone()]));
                }
            }
        }
        for (at, path) in named {
            let Some(target) = resolve(&at, s.folder, &path, &modules) else {
                continue;
            };
            let target = through_reexport(target, &path, &modules, &reexports);
            let why = format!("{}: {}", display(&s.module, s.folder), path.join("::"));
            edge(&mut graphs, &s.module, &target, why);
        }
    }
    graphs
}

/// `code` split into its own part and the body of each inline module
/// (`mod name { … }`, nested ones too), each with the inline path to it:
/// the first entry is the file's own code, with the bodies cut out.
fn inline_modules(code: &str) -> Vec<(Vec<String>, String)> {
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
fn next_inline_mod(code: &str) -> Option<(String, usize, usize)> {
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
fn without_declarations(code: &str) -> String {
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
fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].trim_start();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':')
            && after.starts_with('(')
    })
}

/// Every identifier of `code`.
fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `code` without its `pub use …;` and `pub(crate) use …;` statements.
fn without_reexports(code: &str) -> String {
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
fn uses(code: &str, keyword: &str) -> Vec<Vec<String>> {
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
fn paths_after_words(code: &str) -> Vec<Vec<String>> {
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

/// The absolute path `path` (starting `crate`, `super` or `self`) names
/// from `module`; `None` for a path out of the crate. A folder's own file
/// is the module; another file's `super` is its folder.
fn resolve(
    module: &[String],
    folder: bool,
    path: &[String],
    modules: &BTreeSet<ModulePath>,
) -> Option<ModulePath> {
    let (first, rest) = path.split_first()?;
    let mut abs: ModulePath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            m.pop()?;
            m
        }
        // A bare `pub use b::X` in a folder's file: its child b.
        _ => {
            let mut m = module.to_vec();
            m.push(first.clone());
            if !modules.contains(&m) {
                return None;
            }
            m
        }
    };
    let _ = folder;
    let mut rest = rest.iter().peekable();
    while rest.peek().is_some_and(|s| s.as_str() == "super") {
        rest.next();
        abs.pop()?;
    }
    abs.extend(rest.cloned());
    Some(abs)
}

/// `target` as far as it is a module, through the parent's re-exports:
/// `super::Thing` re-exported by the folder from its child `b` is `b`'s.
fn through_reexport(
    target: ModulePath,
    _path: &[String],
    modules: &BTreeSet<ModulePath>,
    reexports: &BTreeMap<(ModulePath, String), ModulePath>,
) -> ModulePath {
    let mut module = target.clone();
    while !module.is_empty() && !modules.contains(&module) {
        module.pop();
    }
    if let Some(item) = target.get(module.len())
        && let Some(from) = reexports.get(&(module.clone(), item.clone()))
        && *from != target
    {
        return through_reexport(from.clone(), &[], modules, reexports);
    }
    module
}

/// A module's file as a report names it.
fn display(module: &[String], folder: bool) -> String {
    match (module.is_empty(), folder) {
        (true, _) => "the crate root".into(),
        (false, true) => format!("{} (own file)", module.join("::")),
        (false, false) => module.join("::"),
    }
}

/// Adds the edge `from → to` at the folder where their paths part.
fn edge(graphs: &mut Graphs, from: &[String], to: &[String], why: String) {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let folder: ModulePath = from[..common].to_vec();
    let side = |m: &[String]| -> Node {
        match m.get(common) {
            Some(child) => Node::Child(child.clone()),
            None => Node::Parent,
        }
    };
    let (a, b) = (side(from), side(to));
    if a != b {
        let graph = graphs.entry(folder).or_default();
        graph.entry(b.clone()).or_default();
        graph.entry(a).or_default().entry(b).or_insert(why);
    }
}

/// The strongly connected components of `graph` with more than one
/// module (Tarjan), each sorted.
pub fn tangles(graph: &Graph) -> Vec<Vec<Node>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Node, usize>,
        low: BTreeMap<&'g Node, usize>,
        stack: Vec<&'g Node>,
        on_stack: BTreeSet<&'g Node>,
        out: Vec<Vec<Node>>,
    }
    fn visit<'g>(s: &mut State<'g>, node: &'g Node) {
        let i = s.index.len();
        s.index.insert(node, i);
        s.low.insert(node, i);
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in s.graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.clone());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !s.index.contains_key(node) {
            visit(&mut s, node);
        }
    }
    s.out.sort();
    s.out
}

/// One cycle through `start` inside `members` (breadth-first, so the
/// shortest), as the path round it.
pub fn cycle_through(graph: &Graph, members: &[Node], start: &Node) -> Vec<Node> {
    let mut came_from: BTreeMap<Node, Node> = BTreeMap::new();
    let mut queue = VecDeque::from([start.clone()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(&node).into_iter().flat_map(BTreeMap::keys) {
            if !members.contains(next) {
                continue;
            }
            if next == start {
                let mut path = vec![start.clone()];
                let mut at = node.clone();
                while at != *start {
                    path.push(at.clone());
                    at = came_from[&at].clone();
                }
                path.push(start.clone());
                path.reverse();
                return path;
            }
            if !came_from.contains_key(next) && next != start {
                came_from.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

/// Every circle of every folder: a line naming its modules and one path
/// round it, then the import behind each step of that path.
pub fn report(graphs: &Graphs) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, graph) in graphs {
        for members in tangles(graph) {
            let cycle = cycle_through(graph, &members, &members[0]);
            let names =
                |nodes: &[Node]| -> Vec<String> { nodes.iter().map(|n| n.name(folder)).collect() };
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("\n    {}", graph[&w[0]][&w[1]]))
                .collect();
            out.push(format!(
                "modules {{{}}} form a circle, e.g. {}{}",
                names(&members).join(", "),
                names(&cycle).join(" → "),
                steps.concat()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(module: &str, folder: bool, code: &str) -> Source {
        Source {
            module: module
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            folder,
            code: code.into(),
        }
    }

    #[test]
    fn use_trees_are_read_whole() {
        assert_eq!(
            paths_after("use crate::{api::{self, Runtime}, decide};", "crate::"),
            [
                vec!["api".to_string()],
                vec!["api".into(), "Runtime".into()],
                vec!["decide".into()]
            ]
        );
        assert_eq!(
            paths_after("x::super::a; use super::super::b::C;", "super::"),
            [vec!["super".to_string(), "b".into(), "C".into()]]
        );
        let (code, tests) = strip_test_items(
            "use a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod t { use b; }\nfn c() {}",
        );
        assert_eq!(tests, ["tests"]);
        assert!(!code.contains("use b") && code.contains("fn c"), "{code}");
    }

    #[test]
    fn the_check_sees_siblings_and_a_parent_in_a_circle() {
        // The shapes the console's store and the local cluster had.
        let sources = [
            source("", true, "pub mod store; pub mod cluster;"),
            source(
                "store",
                true,
                "pub mod meta; pub mod slim; pub use slim::SlimPod;",
            ),
            source("store::meta", false, "impl X for super::slim::SlimPod {}"),
            source("store::slim", false, "use super::meta::SlimMeta;"),
            source(
                "cluster",
                true,
                "pub mod nodes; pub enum Error {} fn up() { nodes::start() }",
            ),
            source("cluster::nodes", false, "use super::Error;"),
            // Through the folder's re-export: slim's, not the folder's.
            source("cluster::other", false, "use crate::store::SlimPod;"),
        ];
        let found = report(&graphs(&sources));
        assert_eq!(
            found,
            [
                "modules {cluster (own file), cluster::nodes} form a circle, \
                 e.g. cluster (own file) → cluster::nodes → cluster (own file)\
                 \n    cluster (own file): self::nodes::start\
                 \n    cluster::nodes: super::Error",
                "modules {store::meta, store::slim} form a circle, \
                 e.g. store::meta → store::slim → store::meta\
                 \n    store::meta: super::slim::SlimPod\
                 \n    store::slim: super::meta::SlimMeta",
            ],
            "{found:#?}"
        );
        let g = graphs(&sources);
        assert!(
            g[&Vec::<String>::new()][&Node::Child("cluster".into())]
                .contains_key(&Node::Child("store".into()))
        );
    }

    #[test]
    fn an_inline_module_resolves_from_where_it_is() {
        // otel.rs: `mod enabled { use super::Error; }` names otel's own
        // Error, not the crate root's.
        let sources = [
            source(
                "",
                true,
                "mod otel; mod run; use run::Args; pub enum Error {}",
            ),
            source(
                "otel",
                false,
                "pub enum Error {} mod enabled { use super::Error; }",
            ),
            source("run", false, "use crate::otel; pub struct Args;"),
        ];
        assert!(
            report(&graphs(&sources)).is_empty(),
            "{:?}",
            report(&graphs(&sources))
        );
        assert_eq!(
            inline_modules("a; mod x { b; mod y { c; } d; } e;")
                .into_iter()
                .map(|(p, c)| (p.join("::"), c.split_whitespace().collect::<String>()))
                .collect::<Vec<_>>(),
            [
                (String::new(), "a;e;".to_string()),
                ("x".into(), "b;d;".into()),
                ("x::y".into(), "c;".into())
            ]
        );
    }

    #[test]
    fn comments_and_strings_import_nothing() {
        let sources = [
            source("", true, "pub mod a; pub mod b;"),
            source(
                "a",
                false,
                "// see super::b::X\nconst S: &str = \"crate::b\";",
            ),
            source("b", false, "use crate::a::Y;"),
        ];
        assert!(report(&graphs(&sources)).is_empty());
    }
}
