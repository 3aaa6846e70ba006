//! A Prometheus server for one test: the `prometheus` binary that
//! `tests/k8s/build.sh --test-tools` builds from the same Go module and
//! version as promtool, a configuration and rule file of the test's, its
//! HTTP API on a loopback port, stopped on drop.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use berth_tests::bench::process::http_get;
use berth_tests::harness::wait_for_value;
use berth_tests::localcluster::binaries::{Binaries, pinned_version};
use serde_json::Value;

/// The prometheus binary (built once per machine, cached with promtool).
fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bins = Binaries::resolve_test_tools(Path::new(env!("CARGO_TARGET_TMPDIR")))
            .unwrap_or_else(|e| panic!("tests/k8s/build.sh (which builds prometheus) failed: {e}"));
        bins.path("prometheus")
            .unwrap_or_else(|_| {
                panic!(
                    "tests/k8s/build.sh named no prometheus binary (with BERTH_K8S_BIN_DIR set, put prometheus {} there)",
                    pinned_version("PROMETHEUS_VERSION").unwrap_or("?")
                )
            })
            .to_path_buf()
    })
}

/// A running Prometheus.
pub(crate) struct Prometheus {
    child: Child,
    port: u16,
    pub(crate) log: PathBuf,
}

impl Prometheus {
    /// Writes `config` (prometheus.yml, naming `rules.yaml`) and `rules`
    /// into `dir`, starts Prometheus there and waits until it is ready.
    pub(crate) async fn start(dir: &Path, config: &Value, rules: &Value) -> Self {
        std::fs::create_dir_all(dir).expect("mkdir");
        let write = |name: &str, v: &Value| {
            std::fs::write(dir.join(name), yaml_serde::to_string(v).expect("yaml")).expect("write")
        };
        write("prometheus.yml", config);
        write("rules.yaml", rules);
        let port = berth_tests::bench::process::free_port();
        let log = dir.join("prometheus.log");
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(binary())
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("spawn prometheus");
        let mut p = Self { child, port, log };
        let ready = wait_for_value("Prometheus ready", Duration::from_secs(60), || {
            let port = p.port;
            async move { matches!(get(port, "/-/ready").await, Some((200, _))).then_some(()) }
        });
        tokio::select! {
            () = ready => {}
            () = exited(&mut p.child) => panic!("prometheus exited; its log:\n{}", p.log_text()),
        }
        p
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET an API path; its `data`, when the answer is a success.
    pub(crate) async fn api(&self, path: &str) -> Option<Value> {
        let (code, body) = get(self.port, path).await?;
        let doc: Value = serde_json::from_str(&body).ok()?;
        (code == 200 && doc["status"] == "success").then(|| doc["data"].clone())
    }

    /// The metric names Prometheus holds for `job` (`/api/v1/label/__name__/values`).
    pub(crate) async fn names(&self, job: &str) -> BTreeSet<String> {
        let path = format!("/api/v1/label/__name__/values?match%5B%5D=%7Bjob%3D%22{job}%22%7D");
        self.api(&path)
            .await
            .and_then(|d| d.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    }

    /// The alerting rule `alert`'s state (`inactive`, `pending`, `firing`)
    /// and its active alerts' labels (`/api/v1/rules`).
    pub(crate) async fn alert(&self, alert: &str) -> Option<(String, Vec<Value>)> {
        let data = self.api("/api/v1/rules?type=alert").await?;
        let rule = data["groups"]
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .find(|r| r["name"] == alert)?;
        let labels = rule["alerts"]
            .as_array()
            .map(|a| a.iter().map(|x| x["labels"].clone()).collect())
            .unwrap_or_default();
        Some((rule["state"].as_str()?.to_string(), labels))
    }

    /// Waits until `alert`'s state is `state` and `check` holds for its
    /// alerts' labels; returns them.
    pub(crate) async fn wait_alert(
        &self,
        alert: &str,
        state: &str,
        timeout: Duration,
        check: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let what = format!("{alert} {state}");
        wait_for_value(&what, timeout, || async {
            let (s, labels) = self.alert(alert).await?;
            (s == state && check(&labels)).then_some(labels)
        })
        .await
    }
}

/// Resolves when the child has exited.
async fn exited(child: &mut Child) {
    loop {
        if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET (status, body); the shared client speaks HTTP/1.0, so Go's
/// server sends no chunked body.
async fn get(port: u16, path: &str) -> Option<(u16, String)> {
    http_get(port, path, Duration::from_secs(10)).await
}
