//! The README's console section lists the keys of the one key table (the
//! table `?` shows and dispatch uses). `BERTH_UPDATE_GOLDEN=1` regenerates
//! the section between its markers.

use std::path::PathBuf;

use crate::model::commands::COMMANDS;
use crate::model::keymap::{KEYS, markdown};

const START: &str = "<!-- console-keys:start (generated from console/src/model/keymap.rs) -->\n";
const END: &str = "<!-- console-keys:end -->";

#[test]
fn readme_lists_every_key_of_the_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let (Some(a), Some(b)) = (readme.find(START), readme.find(END)) else {
        panic!("README.md lacks the console key markers");
    };
    let current = &readme[a + START.len()..b];
    let expected = markdown();
    if current != expected && std::env::var_os("BERTH_UPDATE_GOLDEN").is_some() {
        let updated = format!("{}{START}{expected}{}", &readme[..a], &readme[b..]);
        std::fs::write(&path, updated).expect("write README.md");
        return;
    }
    assert_eq!(
        current, expected,
        "README.md's console keys differ from the key table (BERTH_UPDATE_GOLDEN=1 regenerates)"
    );
    // And every key and command really is in there.
    for b in KEYS {
        for k in b.keys {
            assert!(current.contains(&format!("`{}`", k.label())), "{k:?}");
        }
    }
    for (name, _, _) in COMMANDS {
        assert!(current.contains(&format!("`:{name}`")), "{name}");
    }
}
