//! Hostile strings from the cluster — ESC/CSI, OSC 52, DCS, C1 CSI (0x9b),
//! BEL, backspace, bidi overrides — in names, annotations, images, node
//! names, event and condition messages: no control byte reaches the drawn
//! buffer nor any `berth get` output.

use berth_shared::sanitize::{is_clean, is_clean_text};
use serde_json::json;

use crate::fixtures;
use crate::get::{self, Format, What};
use crate::model::{Kind, ListView, Msg, Object, Screen, WatchEvent, update};
use crate::store::ingest::prepare;
use crate::views::tests::render;

const NASTY: &str = "x\u{1b}[31mESC\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{07}OSC\u{1b}P1$r0m\u{1b}\\DCS\u{9b}2JC1\u{07}BEL\u{08}BS\u{202e}RLO\u{2066}LRI\u{1b}_APC\u{1b}\\\u{0}\r\n";

fn o<K>(v: serde_json::Value) -> Object
where
    K: kube::ResourceExt + serde::Serialize + serde::de::DeserializeOwned + Clone,
    Object: From<K>,
{
    let k: K = serde_json::from_value(v).expect("fixture");
    Object::from(prepare(k).expect("prepared"))
}

fn hostile_objects() -> Vec<Object> {
    let n = NASTY;
    let cond = json!({"type": "Blocked", "status": "True", "reason": "Revoked", "message": n,
                      "lastTransitionTime": "2026-11-29T11:00:00Z"});
    vec![
        o::<berth_shared::api::Runtime>(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
            "metadata": {"name": format!("evil{n}"), "namespace": format!("ns{n}"),
                         "annotations": {format!("a{n}"): n}, "labels": {"l": n}},
            "spec": {"application": format!("app{n}"), "service": n, "runtimeProfile": n,
                     "image": {"repository": n, "tag": n}},
            "status": {"profile": {"alias": n, "class": n, "handler": n, "state": "Revoked"},
                       "rollout": {"desired": 1, "phase": "Blocked"},
                       "upgrade": {"desiredImage": n, "currentImage": n, "lastSuccessfulImage": n},
                       "conditions": [cond]},
        })),
        o::<berth_shared::api::RuntimeGrant>(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "RuntimeGrant",
            "metadata": {"name": format!("g{n}")},
            "spec": {"project": n, "environment": n, "application": n, "service": n,
                     "runtimeClass": format!("c{n}"), "handler": n},
            "status": {"classPresent": true, "classHandler": n, "handlerMatches": false,
                       "nodes": {"withHandler": 0, "total": 1, "summary": n},
                       "source": {"sha256": n}, "conditions": [cond]},
        })),
        o::<k8s_openapi::api::node::v1::RuntimeClass>(json!({
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": format!("c{n}"), "annotations": {"x": n}}, "handler": n,
        })),
        o::<k8s_openapi::api::core::v1::Node>(json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("node{n}")},
            "status": {"conditions": [{"type": "Ready", "status": "True", "message": n}],
                       "runtimeHandlers": [{"name": n}]},
        })),
        o::<k8s_openapi::api::core::v1::Pod>(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("pod{n}"), "namespace": format!("ns{n}"),
                         "annotations": {"berth.dev/runtime-profile": n}},
            "spec": {"runtimeClassName": format!("c{n}"), "nodeName": n,
                     "containers": [{"name": "c", "image": n}]},
            "status": {"phase": n, "message": n},
        })),
        o::<k8s_openapi::api::apps::v1::Deployment>(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("evil{n}"), "namespace": format!("ns{n}"),
                         "ownerReferences": [{"apiVersion": "berth.dev/v1alpha1", "kind": "Runtime",
                                              "name": format!("evil{n}"), "uid": "u", "controller": true}]},
            "spec": {"selector": {}, "template": {"spec": {"runtimeClassName": format!("c{n}"),
                     "containers": [{"name": "c", "image": n}]}}},
            "status": {"conditions": [{"type": "Progressing", "status": "True", "reason": n, "message": n}]},
        })),
        o::<k8s_openapi::api::core::v1::Event>(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("e{n}"), "namespace": format!("ns{n}")},
            "involvedObject": {"kind": "Runtime", "name": format!("evil{n}"), "namespace": format!("ns{n}")},
            "type": n, "reason": n, "message": n, "lastTimestamp": "2026-11-29T11:00:00Z",
        })),
        o::<k8s_openapi::api::coordination::v1::Lease>(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "berth-agent", "namespace": "berth-system"},
            "spec": {"holderIdentity": n},
        })),
    ]
}

fn assert_buffer_clean(buf: &ratatui::buffer::Buffer, what: &str) {
    for cell in buf.content() {
        assert!(
            is_clean(cell.symbol()),
            "{what}: control character {:?} drawn",
            cell.symbol()
        );
    }
}

#[test]
fn hostile_strings_never_reach_the_screen() {
    let mut app = fixtures::app_with(hostile_objects());
    update(
        &mut app,
        Msg::Watch(Kind::Pod, WatchEvent::Error(NASTY.to_string())),
    );
    let evil = app.clusters[0]
        .data
        .store
        .runtimes
        .keys()
        .next()
        .cloned()
        .expect("the hostile Runtime survived ingest");
    assert!(is_clean(&evil.1) && evil.1.starts_with("evil"));
    let screens = vec![
        Screen::List(ListView::Runtimes),
        Screen::List(ListView::Grants),
        Screen::List(ListView::Handlers),
        Screen::List(ListView::Retained),
        Screen::Rollout(crate::fixtures::cluster(), evil.clone()),
        Screen::Details(crate::fixtures::cluster(), Kind::Runtime, evil.clone()),
        Screen::Details(
            crate::fixtures::cluster(),
            Kind::RuntimeClass,
            app.clusters[0]
                .data
                .store
                .classes
                .keys()
                .next()
                .cloned()
                .expect("class"),
        ),
        Screen::Details(
            crate::fixtures::cluster(),
            Kind::Event,
            app.clusters[0]
                .data
                .store
                .events
                .keys()
                .next()
                .cloned()
                .expect("event"),
        ),
    ];
    for s in screens {
        app.ui.screens = vec![s.clone()];
        for show_help in [false, true] {
            app.ui.show_help = show_help;
            let buf = render(&mut app, 200, 60);
            assert_buffer_clean(&buf, &format!("{s:?}"));
        }
        // Something of the hostile data is really drawn.
        let buf = render(&mut app, 200, 60);
        let text: String = buf.content().iter().map(|c| c.symbol()).collect();
        assert!(
            text.contains("ESC") || text.contains("evil") || text.contains("x"),
            "{s:?}"
        );
    }
    // The typed filter and command line too.
    app.ui.screens = vec![Screen::List(ListView::Runtimes)];
    app.ui.lists[0].filter = NASTY.to_string();
    assert_buffer_clean(&render(&mut app, 200, 60), "filter");
}

#[test]
fn hostile_strings_never_reach_berth_get() {
    let app = fixtures::app_with(hostile_objects());
    for what in [
        What::Runtimes,
        What::Grants,
        What::Handlers,
        What::Retained,
        What::Rollouts,
    ] {
        for fmt in [Format::Table, Format::Json, Format::Yaml] {
            let out = get::format(what, &app.clusters[0].data.store, fixtures::now(), fmt);
            assert!(is_clean_text(&out), "{what:?} {fmt:?}: {out:?}");
            assert!(
                !out.contains("\\u001b") && !out.contains("\\e"),
                "{what:?} {fmt:?}: {out}"
            );
            assert!(
                out.contains("ESC") || out.contains("evil"),
                "{what:?} {fmt:?}: {out}"
            );
        }
    }
}
