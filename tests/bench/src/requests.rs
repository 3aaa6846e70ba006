//! What the apiserver was asked during a measured window, by its own
//! counters (`apiserver_request_total`, summed over codes and versions):
//! the Ready phase of the agent's half against the floor's. Both halves
//! make the same 20,000 pods; CPU alone (`cpu.rs`) shows that the control
//! plane worked harder in one of them, these counts show on what: more
//! pods or ReplicaSets made (a second rollout), more status writes, more
//! reads, or more watch events sent (`apiserver_watch_events_total` and
//! `_sizes_sum`: every watcher, the agent's caches among them, gets each
//! event of its kind encoded and sent), and the watchers it closed for
//! falling behind (`apiserver_terminated_watchers_total`: each such
//! watcher starts over, and with streaming lists its new start is every
//! object of its kind sent again as events).

use std::collections::BTreeMap;

use kube::Client;

use super::table::{Figure, Unit};

/// Request counts at one instant: "VERB resource[/subresource]" → count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample(BTreeMap<String, f64>);

/// The apiserver's request counters now. An unreadable `/metrics` gives
/// an empty sample (the figures then show nothing rather than stop the
/// run).
pub async fn sample(client: &Client) -> Sample {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("metrics request");
    match client.request_text(request).await {
        Ok(text) => parse(&text),
        Err(e) => {
            eprintln!("bench: apiserver /metrics unreadable: {e}");
            Sample::default()
        }
    }
}

/// Sums `apiserver_request_total` by verb, resource and subresource
/// ("VERB resource[/subresource]"), and the watch events the apiserver
/// sent by resource: their count (`apiserver_watch_events_total`,
/// "events resource") and bytes (`apiserver_watch_events_sizes_sum`,
/// "event bytes resource"), and the watchers it closed for falling
/// behind ("watchers closed resource"). An event sent to four watchers
/// counts four times: a watcher more costs the apiserver every event again.
fn parse(text: &str) -> Sample {
    let mut by_key = BTreeMap::new();
    for line in text.lines() {
        let Some((metric, rest)) = line.split_once('{') else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |name: &str| {
            let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
            let len = labels[start..].find('"')?;
            Some(&labels[start..start + len])
        };
        let Some(resource) = label("resource") else {
            continue;
        };
        let key = match metric {
            "apiserver_request_total" => {
                let Some(verb) = label("verb") else { continue };
                match label("subresource").unwrap_or("") {
                    "" => format!("{verb} {resource}"),
                    sub => format!("{verb} {resource}/{sub}"),
                }
            }
            "apiserver_watch_events_total" => format!("{WATCH_EVENTS}{resource}"),
            "apiserver_watch_events_sizes_sum" => format!("{WATCH_BYTES}{resource}"),
            "apiserver_terminated_watchers_total" => format!("{WATCHERS_CLOSED}{resource}"),
            _ => continue,
        };
        *by_key.entry(key).or_insert(0.0) += value;
    }
    Sample(by_key)
}

const WATCH_EVENTS: &str = "events ";
const WATCH_BYTES: &str = "event bytes ";
const WATCHERS_CLOSED: &str = "watchers closed ";

fn is_request(key: &str) -> bool {
    ![WATCH_EVENTS, WATCH_BYTES, WATCHERS_CLOSED]
        .iter()
        .any(|p| key.starts_with(p))
}

impl Sample {
    /// The count of one "VERB resource[/subresource]" (0 if none).
    pub fn get(&self, key: &str) -> f64 {
        self.0.get(key).copied().unwrap_or(0.0)
    }

    /// The writes whose "VERB resource[/subresource]" satisfies `keep`.
    pub fn writes_where(&self, keep: impl Fn(&str) -> bool) -> f64 {
        self.0
            .iter()
            .filter(|(k, _)| is_request(k) && is_write(k) && keep(k))
            .map(|(_, v)| *v)
            .fold(0.0, add)
    }
}

/// The requests made between `a` and `b`.
pub fn delta(a: &Sample, b: &Sample) -> Sample {
    Sample(
        b.0.iter()
            .map(|(k, v)| (k.clone(), (v - a.0.get(k).copied().unwrap_or(0.0)).max(0.0)))
            .filter(|(_, v)| *v > 0.0)
            .collect(),
    )
}

fn is_write(key: &str) -> bool {
    [
        "POST ",
        "PUT ",
        "PATCH ",
        "APPLY ",
        "DELETE ",
        "DELETECOLLECTION ",
    ]
    .iter()
    .any(|v| key.starts_with(v))
}

/// The rows of one phase, the agent's count against the floor's: every
/// request, the writes, each kind of write that is at least 1 % of the
/// writes in either half; then the watch events sent and their bytes, and
/// each resource's that is at least 1 % of either half's bytes.
pub fn request_figures(phase: &str, agent: &Sample, floor: Option<&Sample>) -> Vec<Figure> {
    let total = |s: &Sample, writes: bool| -> f64 {
        s.0.iter()
            .filter(|(k, _)| is_request(k) && (!writes || is_write(k)))
            .map(|(_, v)| *v)
            .fold(0.0, add)
    };
    let row = |name: String, measured: f64, floor: Option<f64>| {
        Figure::compared(&name, Unit::Count, measured, floor)
    };
    let mut out = vec![
        row(
            format!("apiserver requests, {phase}: all"),
            total(agent, false),
            floor.map(|s| total(s, false)),
        ),
        row(
            format!("apiserver requests, {phase}: writes"),
            total(agent, true),
            floor.map(|s| total(s, true)),
        ),
    ];
    let writes = total(agent, true).max(floor.map_or(0.0, |s| total(s, true)));
    let mut keys: Vec<&String> = agent.0.keys().collect();
    keys.extend(floor.into_iter().flat_map(|s| s.0.keys()));
    keys.sort();
    keys.dedup();
    for key in keys.into_iter().filter(|k| is_write(k)) {
        let measured = agent.0.get(key).copied().unwrap_or(0.0);
        let in_floor = floor.map(|s| s.0.get(key).copied().unwrap_or(0.0));
        if measured.max(in_floor.unwrap_or(0.0)) * 100.0 < writes {
            continue;
        }
        out.push(row(
            format!("apiserver requests, {phase}: {key}"),
            measured,
            in_floor,
        ));
    }
    out.extend(watch_figures(phase, agent, floor));
    out
}

/// Watch events sent in the phase: all, their bytes, and the resources
/// that are at least 1 % of either half's bytes (count and bytes each);
/// then the watchers closed for falling behind: all (zero included, so
/// that none is a finding) and each resource that had one in either half.
fn watch_figures(phase: &str, agent: &Sample, floor: Option<&Sample>) -> Vec<Figure> {
    let sum = |s: &Sample, prefix: &str| -> f64 {
        s.0.iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| *v)
            .fold(0.0, add)
    };
    let get = |s: &Sample, key: &str| s.0.get(key).copied().unwrap_or(0.0);
    let row = |name: String, unit: Unit, measured: f64, floor: Option<f64>| {
        Figure::compared(&name, unit, measured, floor)
    };
    let mut out = vec![
        row(
            format!("apiserver watch events sent, {phase}: all"),
            Unit::Count,
            sum(agent, WATCH_EVENTS),
            floor.map(|s| sum(s, WATCH_EVENTS)),
        ),
        row(
            format!("apiserver watch events sent, {phase}: all, bytes"),
            Unit::Bytes,
            sum(agent, WATCH_BYTES),
            floor.map(|s| sum(s, WATCH_BYTES)),
        ),
    ];
    // One key's count in each half.
    let compare = |name: String, unit: Unit, key: &str| {
        row(name, unit, get(agent, key), floor.map(|s| get(s, key)))
    };
    let bytes = sum(agent, WATCH_BYTES).max(floor.map_or(0.0, |s| sum(s, WATCH_BYTES)));
    for resource in resources(WATCH_BYTES, agent, floor) {
        let key = format!("{WATCH_BYTES}{resource}");
        let measured = get(agent, &key);
        let in_floor = floor.map(|s| get(s, &key));
        if measured.max(in_floor.unwrap_or(0.0)) * 100.0 < bytes {
            continue;
        }
        out.push(compare(
            format!("apiserver watch events sent, {phase}: {resource}"),
            Unit::Count,
            &format!("{WATCH_EVENTS}{resource}"),
        ));
        out.push(row(
            format!("apiserver watch events sent, {phase}: {resource}, bytes"),
            Unit::Bytes,
            measured,
            in_floor,
        ));
    }
    out.push(row(
        format!("apiserver watchers closed for falling behind, {phase}: all"),
        Unit::Count,
        sum(agent, WATCHERS_CLOSED),
        floor.map(|s| sum(s, WATCHERS_CLOSED)),
    ));
    for resource in resources(WATCHERS_CLOSED, agent, floor) {
        out.push(compare(
            format!("apiserver watchers closed for falling behind, {phase}: {resource}"),
            Unit::Count,
            &format!("{WATCHERS_CLOSED}{resource}"),
        ));
    }
    out
}

/// Sums from +0: `f64`'s `Sum` starts at -0.0, so a sum of nothing
/// printed as "-0", and its ratio as "-0.00×".
pub fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// The resources either half has a `prefix` key for, sorted, once each.
fn resources<'a>(prefix: &str, agent: &'a Sample, floor: Option<&'a Sample>) -> Vec<&'a str> {
    let mut out: Vec<&str> = agent
        .0
        .keys()
        .chain(floor.into_iter().flat_map(|s| s.0.keys()))
        .filter_map(|k| k.strip_prefix(prefix))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "# TYPE apiserver_request_total counter\n\
        apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 90\n\
        apiserver_request_total{code=\"409\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 10\n\
        apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"status\",verb=\"PATCH\",version=\"v1\"} 300\n\
        apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"apps\",resource=\"replicasets\",scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 7\n\
        apiserver_request_duration_seconds_count{verb=\"POST\",resource=\"pods\"} 5\n\
        apiserver_watch_events_total{group=\"\",resource=\"pods\",version=\"v1\"} 40\n\
        apiserver_watch_events_sizes_sum{group=\"\",resource=\"pods\",version=\"v1\"} 160000\n\
        apiserver_watch_events_sizes_count{group=\"\",resource=\"pods\",version=\"v1\"} 40\n\
        apiserver_watch_events_sizes_sum{group=\"\",resource=\"leases\",version=\"v1\"} 100\n\
        apiserver_terminated_watchers_total{group=\"\",resource=\"pods\"} 2\n";

    #[test]
    fn counters_are_summed_by_verb_resource_and_subresource() {
        let s = parse(METRICS);
        assert_eq!(s.0.get("POST pods"), Some(&100.0));
        assert_eq!(s.0.get("PATCH pods/status"), Some(&300.0));
        assert_eq!(s.0.get("LIST replicasets"), Some(&7.0));
        assert_eq!(s.0.get("events pods"), Some(&40.0));
        assert_eq!(s.0.get("event bytes pods"), Some(&160000.0));
        assert_eq!(s.0.get("watchers closed pods"), Some(&2.0));
        assert_eq!(s.0.len(), 7, "{s:?}");
    }

    #[test]
    fn figures_compare_each_kind_of_write_with_the_floor() {
        let before = Sample(BTreeMap::from([("POST pods".into(), 10.0)]));
        let agent = delta(&before, &parse(METRICS));
        assert_eq!(agent.0.get("POST pods"), Some(&90.0));
        let floor = Sample(BTreeMap::from([
            ("POST pods".into(), 80.0),
            ("PATCH pods/status".into(), 300.0),
            ("PUT leases".into(), 1.0),
        ]));
        let rows = request_figures("Ready", &agent, Some(&floor));
        let names: Vec<&str> = rows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "apiserver requests, Ready: all",
                "apiserver requests, Ready: writes",
                "apiserver requests, Ready: PATCH pods/status",
                "apiserver requests, Ready: POST pods",
                "apiserver watch events sent, Ready: all",
                "apiserver watch events sent, Ready: all, bytes",
                "apiserver watch events sent, Ready: pods",
                "apiserver watch events sent, Ready: pods, bytes",
                "apiserver watchers closed for falling behind, Ready: all",
                "apiserver watchers closed for falling behind, Ready: pods",
            ],
            "leases (under 1 % of the writes, and of the bytes) are left out"
        );
        assert_eq!(rows[5].measured, 160100.0);
        assert_eq!(rows[6].measured, 40.0);
        assert_eq!(rows[6].floor, Some(0.0));
        assert_eq!(rows[0].measured, 397.0, "watch events are not requests");
        assert_eq!(rows[1].measured, 390.0);
        assert_eq!(rows[1].floor, Some(381.0));
        assert_eq!(rows[3].floor, Some(80.0));
        assert_eq!(rows[8].measured, 2.0, "watchers closed are not requests");
        assert_eq!(rows[8].floor, Some(0.0));
        assert_eq!(rows[9].measured, 2.0);
    }

    #[test]
    fn a_sum_of_nothing_is_a_positive_zero() {
        let agent = Sample(BTreeMap::from([("POST pods".into(), 1.0)]));
        let floor = parse(METRICS);
        let rows = request_figures("Ready", &agent, Some(&floor));
        let closed = rows
            .iter()
            .find(|f| f.name == "apiserver watchers closed for falling behind, Ready: all")
            .unwrap();
        assert_eq!(closed.floor, Some(2.0));
        assert!(closed.measured.is_sign_positive(), "{}", closed.measured);
    }
}
