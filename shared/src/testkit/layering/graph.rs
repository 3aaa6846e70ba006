//! The graph the scan builds: each folder's modules and who imports whom
//! among them, read from the sources' paths.

use std::collections::{BTreeMap, BTreeSet};

use super::text::{
    calls, code_only, inline_modules, paths_after, paths_after_words, uses, without_declarations,
    without_reexports, words,
};

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
    pub(crate) fn name(&self, folder: &[String]) -> String {
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

/// The absolute path `path` (starting `crate`, `super` or `self`) names
/// from `module`; `None` for a path out of the crate. A folder's own file
/// is the module; another file's `super` is its folder.
pub(crate) fn resolve(
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
pub(crate) fn through_reexport(
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
pub(crate) fn display(module: &[String], folder: bool) -> String {
    match (module.is_empty(), folder) {
        (true, _) => "the crate root".into(),
        (false, true) => format!("{} (own file)", module.join("::")),
        (false, false) => module.join("::"),
    }
}

/// Adds the edge `from → to` at the folder where their paths part.
pub(crate) fn edge(graphs: &mut Graphs, from: &[String], to: &[String], why: String) {
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
