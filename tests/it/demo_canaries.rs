//! Issue 53: the demo's canary decision, as `./demo` runs it
//! (`assets/demo/canaries.sh`, sourced by the demo, asking
//! `berth-localcluster canary-image`): with the agent's image on the real
//! node the canaries run from it; when the image did not build, or there
//! is no real node, they are off and the demo says why.

use std::path::Path;
use std::process::Command;

use berth_tests::harness;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// `canary_args` and `canaries_off` after the demo's decision.
fn decide(cluster: &Path, real_nodes: bool, simulated_why: &str) -> (String, String) {
    let bin = harness::workspace_binary(
        "berth-localcluster",
        "berth-localcluster",
        "BERTH_LOCALCLUSTER_BIN",
    );
    let script = r#"set -euo pipefail
source "$0/assets/demo/canaries.sh"
demo_canaries "$1" "$2" "$3" "$4"
printf 'args=%s\n' "${canary_args[*]-}"
printf 'off=%s\n' "$canaries_off""#;
    let out = Command::new("bash")
        .args(["-c", script, ROOT])
        .arg(&bin)
        .arg(cluster)
        .arg(if real_nodes { "1" } else { "0" })
        .arg(simulated_why)
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the decision failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in {stdout}"))
            .to_string()
    };
    (line("args="), line("off="))
}

fn cluster_dir(real_nodes: Option<serde_json::Value>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    if let Some(info) = real_nodes {
        std::fs::write(dir.path().join("real-nodes.json"), info.to_string()).expect("write");
    }
    dir
}

fn info(image: Option<&str>, missing: Option<&str>) -> serde_json::Value {
    serde_json::json!({"nodes": [], "testapp_image": "localhost/berth-testapp@sha256:aa",
        "runsc_missing": null, "agent_image": image, "agent_image_missing": missing})
}

#[test]
fn demo_canaries_run_from_the_agents_image_or_say_why_they_are_off() {
    let demo = std::fs::read_to_string(format!("{ROOT}/demo")).expect("demo");
    assert!(
        demo.contains(r#"source "$root/assets/demo/canaries.sh""#)
            && demo.contains("demo_canaries \"$bin/berth-localcluster\"")
            && demo.contains("CANARIES OFF: $canaries_off"),
        "./demo decides canaries with assets/demo/canaries.sh and warns with its reason"
    );

    let built = cluster_dir(Some(info(Some("localhost/berth-agent@sha256:ab"), None)));
    assert_eq!(
        decide(built.path(), true, ""),
        (
            "--canary-image localhost/berth-agent@sha256:ab --canary-period-seconds 30".into(),
            String::new()
        )
    );

    // The branch no demo run had shown: the real node is up, its image did
    // not build.
    let failed = cluster_dir(Some(info(None, Some("buildah: command not found"))));
    assert_eq!(
        decide(failed.path(), true, ""),
        (
            String::new(),
            "the agent's image did not build: buildah: command not found".into()
        )
    );

    let unasked = cluster_dir(Some(info(None, None)));
    let (args, off) = decide(unasked.path(), true, "");
    assert!(
        args.is_empty() && off.contains("without an agent binary"),
        "{off}"
    );

    let no_file = cluster_dir(None);
    let (args, off) = decide(no_file.path(), true, "");
    assert!(
        args.is_empty() && off.starts_with("no real node ("),
        "{off}"
    );

    let simulated = cluster_dir(None);
    assert_eq!(
        decide(simulated.path(), false, "BERTH_DEMO_REAL_NODE=0"),
        (
            String::new(),
            "no real node (BERTH_DEMO_REAL_NODE=0)".into()
        )
    );
}
