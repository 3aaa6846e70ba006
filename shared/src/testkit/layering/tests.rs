use super::text::{inline_modules, paths_after};
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
