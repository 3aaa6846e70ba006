//! Fuzz the grants-file parser: any bytes must give `Ok(bindings)` that pass
//! every format rule, or a non-empty list of problems whose messages carry no
//! control characters — and never a panic.

#![no_main]

use berth_shared::grants::{self, LoadedGrants, MAX_BINDINGS, MAX_FILE_BYTES, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match grants::parse_bytes(data) {
        Ok(bindings) => {
            assert!(bindings.len() <= MAX_BINDINGS);
            for b in &bindings {
                assert!(validate::dns_label(&b.name).is_ok());
                assert!(validate::dns_label(&b.handler).is_ok());
                assert!(validate::dns_subdomain(&b.runtime_class).is_ok());
                for v in [&b.project, &b.environment, &b.application, &b.service] {
                    assert!(validate::identity(v).is_ok());
                }
            }
        }
        Err(problems) => {
            assert!(!problems.is_empty());
            for p in &problems {
                let msg = p.to_string();
                assert!(!msg.chars().any(char::is_control), "{msg:?}");
            }
        }
    }
    // The in-memory entry point adds the size limit and the sha256.
    match LoadedGrants::from_unchecked_bytes("fuzz.toml", data) {
        Ok(loaded) => assert!(data.len() <= MAX_FILE_BYTES && loaded.sha256.len() == 64),
        Err(e) => {
            let _ = e.to_string();
            let _ = e.diagnostics();
        }
    }
});
