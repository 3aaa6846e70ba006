//! Fleet mode drawn (issue 56): the CLUSTER column, the header of every
//! cluster's state, a cluster that dropped out dimmed with the age of its
//! data while the others stay live, and the review naming its cluster.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::tests::{line_with, render, row_dimmed, snap, text_of};
use crate::fixtures;
use crate::model::{App, Kind, ListView, Msg, ReviewState, WatchEvent, WatchKey, update};

fn press(app: &mut App, code: KeyCode) {
    update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

/// prod-us's Runtimes watch fails, and keeps failing, until `secs`
/// seconds after its last data.
fn drop_us(app: &mut App, secs: i64) {
    let o = app.origin_of(1);
    let later = fixtures::now() + k8s_openapi::jiff::SignedDuration::from_secs(secs);
    update(app, Msg::Tick(later));
    update(
        app,
        Msg::Watched(
            o,
            WatchKey::all(Kind::Runtime),
            WatchEvent::Error("connection refused".into()),
        ),
    );
}

#[test]
fn fleet_runtimes_view_with_the_header() {
    let mut app = fixtures::fleet();
    snap("fleet-runtimes", &mut app);
    let text = text_of(&render(&mut app, 140, 24));
    assert!(text.contains("CLUSTER"), "{text}");
    assert!(
        line_with(
            &render(&mut app, 140, 24),
            " prod-us │ connected │ leader berth-agent-7f9c │ grants abababababab"
        )
        .is_some(),
        "{text}"
    );
    assert!(
        text.contains("3:Handlers (8)"),
        "both clusters counted: {text}"
    );
}

#[test]
fn a_dropped_cluster_is_dimmed_with_the_age_of_its_data_and_the_others_not() {
    let mut app = fixtures::fleet();
    drop_us(&mut app, 42);
    snap("fleet-dropped", &mut app);
    let buf = render(&mut app, 140, 24);
    let header = line_with(&buf, " prod-us │").expect("prod-us's line");
    assert!(
        header.contains("unreachable (last data 42s ago): Runtime: connection refused"),
        "{header}"
    );
    assert!(
        line_with(&buf, "Runtimes [all]")
            .is_some_and(|l| l.contains("prod-us: last known data, reconnecting")),
        "{}",
        text_of(&buf)
    );
    // prod-us's rows dimmed, prod-eu's not.
    for (needle, dimmed) in [("prod-us  demo", true), ("prod-eu  demo", false)] {
        assert_eq!(row_dimmed(&buf, needle), Some(dimmed), "{needle}");
    }
    // The age grows with time, no rebuild needed.
    let later = fixtures::now() + k8s_openapi::jiff::SignedDuration::from_secs(300);
    update(&mut app, Msg::Tick(later));
    let header = line_with(&render(&mut app, 140, 24), " prod-us │").expect("line");
    assert!(header.contains("last data 5m ago"), "{header}");
}

#[test]
fn sorting_and_filtering_by_cluster() {
    let mut app = fixtures::fleet();
    // Column 0 is CLUSTER: sort descending.
    press(&mut app, KeyCode::Char('s'));
    press(&mut app, KeyCode::Char('s'));
    let buf = render(&mut app, 140, 24);
    let text = text_of(&buf);
    let first = text.lines().find(|l| l.contains(" demo ")).expect("a row");
    assert!(first.contains("prod-us"), "{text}");
    for c in "/cluster=prod-eu".chars() {
        press(&mut app, KeyCode::Char(c));
    }
    press(&mut app, KeyCode::Enter);
    let text = text_of(&render(&mut app, 140, 24));
    assert!(
        text.contains("3/6") && !text.contains("prod-us  demo"),
        "{text}"
    );
}

#[test]
fn the_review_names_its_cluster_first_and_asks_for_it() {
    let mut app = fixtures::fleet();
    let rt = match fixtures::objects()
        .into_iter()
        .find(|o| o.key() == ("demo".to_string(), "worker".to_string()))
    {
        Some(crate::model::Object::Runtime(rt)) => *rt,
        _ => unreachable!(),
    };
    let plan = crate::retire::plan::plan_runtime(
        &crate::retire::Action::Delete,
        &rt,
        &Default::default(),
        "alice@example.com",
        "2026-11-29T12:00:00Z",
    )
    .expect("plan");
    app.ui.review = Some(ReviewState::Ready {
        review: Box::new(crate::retire::Review {
            cluster: crate::model::ClusterId::new("prod-us"),
            plan,
            user: "alice@example.com".into(),
            verdict: crate::retire::Verdict::Accepted,
        }),
        typed: String::new(),
    });
    snap("fleet-review-delete", &mut app);
    let text = text_of(&render(&mut app, 140, 24));
    assert!(
        text.contains("Review in cluster prod-us: delete the Runtime"),
        "{text}"
    );
    assert!(
        text.contains("│cluster prod-us — delete the Runtime — Runtime demo/worker"),
        "{text}"
    );
    assert!(
        text.contains("Type prod-us/worker to confirm in cluster prod-us"),
        "{text}"
    );
}

#[test]
fn the_tabs_and_matrix_cover_every_cluster() {
    let mut app = fixtures::fleet();
    app.open(crate::model::Screen::Matrix);
    let text = text_of(&render(&mut app, 140, 40));
    assert!(
        text.contains("── cluster prod-eu ──") && text.contains("── cluster prod-us ──"),
        "{text}"
    );
    assert_eq!(app.table(ListView::Retained).total(), 12);
}

#[test]
fn findings_name_their_clusters_and_the_fleet_ones_come_with_them() {
    // prod-us's web is blocked where prod-eu's is granted.
    let mut us = fixtures::objects();
    for o in &mut us {
        if let crate::model::Object::Runtime(rt) = o
            && rt.metadata.name.as_deref() == Some("web")
            && let Some(p) = rt.status.as_mut().and_then(|s| s.profile.as_mut())
        {
            p.state = berth_shared::api::ProfileState::Revoked;
        }
    }
    let mut app = fixtures::fleet_with(vec![("prod-eu", fixtures::objects()), ("prod-us", us)]);
    app.open(crate::model::Screen::Findings);
    let text = text_of(&render(&mut app, 200, 60));
    assert!(
        text.contains("[prod-eu,prod-us] fleet-identity-split: shop/prod/shop/web"),
        "{text}"
    );
    assert!(
        text.contains("[prod-us] retained-after-revocation"),
        "{text}"
    );
}

#[test]
fn the_header_digest_is_the_agents_own_file_without_its_retired_grants() {
    // prod-us's agent restarted with a new file: its live grants carry the
    // new digest, a retired one (kept for a workload) the old.
    let mut us = fixtures::objects();
    for o in &mut us {
        if let crate::model::Object::RuntimeGrant(g) = o
            && let Some(s) = g.status.as_mut()
        {
            if let Some(src) = s.source.as_mut() {
                src.sha256 = Some("cd".repeat(32));
            }
            if g.metadata.name.as_deref() == Some("gvisor-api") {
                s.source = Some(berth_shared::api::GrantSource {
                    sha256: Some("ef".repeat(32)),
                    loaded_at: None,
                });
                s.conditions
                    .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                        type_: "Retired".into(),
                        status: "True".into(),
                        reason: "RemovedFromFile".into(),
                        message: String::new(),
                        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            fixtures::now(),
                        ),
                        observed_generation: None,
                    });
            }
        }
    }
    // And another agent of the same cluster published a grant of its own
    // file: not this agent's.
    let other = us
        .iter()
        .find_map(|o| match o {
            crate::model::Object::RuntimeGrant(g) => Some(g.as_ref().clone()),
            _ => None,
        })
        .map(|mut g| {
            g.metadata.name = Some("another-agents".into());
            g.metadata.labels = Some([("berth.dev/published-by".into(), "other".into())].into());
            if let Some(src) = g.status.as_mut().and_then(|s| s.source.as_mut()) {
                src.sha256 = Some("99".repeat(32));
            }
            crate::model::Object::from(g)
        })
        .expect("a grant");
    us.push(other);
    let mut app = fixtures::fleet_with(vec![("prod-eu", fixtures::objects()), ("prod-us", us)]);
    let buf = render(&mut app, 140, 24);
    let us_line = line_with(&buf, " prod-us │").expect("prod-us's line");
    assert!(us_line.contains("grants cdcdcdcdcdcd"), "{us_line}");
    let eu_line = line_with(&buf, " prod-eu │").expect("prod-eu's line");
    assert!(eu_line.contains("grants abababababab"), "{eu_line}");
}
