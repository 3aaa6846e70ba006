//! Names what this machine lacks for the integration tests while
//! `cargo test --workspace` compiles, before any test runs, instead of at
//! the first cluster start: it runs the same check as `./demo` and
//! `.ci/run` (`tests/k8s/prerequisites.sh`) and prints each missing thing
//! as a cargo warning, with the Debian packages to install. It never fails
//! the build: the unit tests need none of it. Cargo runs a build script
//! with few dependents late in a cold build (none of berth's crates had
//! started 150 s into one at load 10), so on a fresh machine this comes
//! minutes in; `./demo` and `.ci/run` check in their first second.

use std::process::Command;

const CHECK: &str = r#"
source "$1"
prereq_check
for e in "${prereq_build[@]}"; do echo "build|${e#*|}"; done
for e in "${prereq_real[@]}"; do echo "real|${e#*|}"; done
for e in "${prereq_tests[@]}"; do echo "tests|${e#*|}"; done
echo "packages|$( { prereq_packages prereq_build; prereq_packages prereq_real; prereq_packages prereq_tests; } | sort -u | tr '\n' ' ')"
"#;

fn main() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/k8s/prerequisites.sh");
    println!("cargo:rerun-if-changed={script}");
    println!("cargo:rerun-if-changed=build.rs");
    let Ok(out) = Command::new("bash")
        .args(["-c", CHECK, "prerequisites", script])
        .output()
    else {
        println!(
            "cargo:warning=bash not found: the integration tests (tests/it) build and start the local control plane with bash scripts"
        );
        return;
    };
    let mut packages = String::new();
    let mut missing = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((part, what)) = line.split_once('|') else {
            continue;
        };
        let needed_by = match part {
            "build" => "the local control plane's build",
            "real" => "the real-node tests",
            "tests" => "the integration tests",
            _ => {
                packages = what.trim().to_string();
                continue;
            }
        };
        missing += 1;
        println!("cargo:warning=missing for {needed_by}: {what}");
    }
    if missing > 0 {
        let install = if packages.is_empty() {
            String::new()
        } else {
            format!("; Debian/Ubuntu: apt-get install {packages}")
        };
        println!(
            "cargo:warning=the integration tests (tests/it) will fail without the above (the unit tests need none of it){install}"
        );
    }
}
