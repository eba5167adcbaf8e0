//! The compliance views (issue 47): the posture card of a project's page, a framework's page
//! (its sections as a heatmap, its top failing requirements, every requirement with the
//! findings behind it) and the rollup on the projects page. All server-rendered, with no
//! island: the trends are drawn on the server and every chart has its table.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::{count_of, error_view, loading, utc_time};
use crate::api::posture::load_framework;
use crate::model::{
    heat, percent, FrameworkTrend, FrameworkView, LineChoice, PostureCounts, PostureRollup,
    ProjectPostureView, Range, RequirementView, RollupLine, TREND_HEIGHT, TREND_WIDTH,
};

/// A framework page's address on a line (`line_query`: `branch=…&`, or empty).
pub fn framework_href(project_id: &str, framework: &str, line_query: &str) -> String {
    let path = format!(
        "/projects/{project_id}/frameworks/{}",
        crate::links::path_segment(framework)
    );
    match line_query.trim_end_matches('&') {
        "" => path,
        q => format!("{path}?{q}"),
    }
}

/// An id for a section's anchor: its characters that may not stand in one replaced.
fn section_anchor(section: &str) -> String {
    let safe: String = section
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("section-{safe}")
}

fn counts_line(c: &PostureCounts) -> String {
    format!(
        "{} passed · {} failed · {} triaged · {} not evaluated",
        c.passed, c.failed, c.triaged, c.not_evaluated
    )
}

/// A requirement's status as a tag.
pub fn status_tag(status: &str) -> AnyView {
    let text = match status {
        "not_evaluated" => "not evaluated",
        other => other,
    };
    view! { <span class=format!("req-status {status}")>{text.to_owned()}</span> }.into_any()
}

/// The share passing as a bar under its figure (the figure is the text; the bar decoration).
fn share_bar(share: Option<f64>) -> AnyView {
    let width = share.map_or(0.0, |s| (s * 100.0).clamp(0.0, 100.0));
    view! {
        <span class="share">
            <span class="share-figure">{percent(share)}</span>
            <svg class="share-bar" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true">
                <rect class="share-track" width="100" height="6"></rect>
                <rect class="share-fill" width=format!("{width:.1}") height="6"></rect>
            </svg>
        </span>
    }
    .into_any()
}

/// Why a posture reads 0 % when requirements were judged but none passed: a requirement
/// passes only on a PASS finding, and a scanner that sends only its failures never has one.
fn none_passed(counts: &tidemark_wire::posture::PostureCounts) -> Option<AnyView> {
    (counts.passed == 0 && counts.failed + counts.triaged > 0).then(|| {
        view! {
            <p class="muted small" data-testid="none-passed">
                "No requirement passed: one passes only on a " <code>"PASS"</code>
                " finding, and the scan had none for these rules. A scanner that sends its passing checks as well as its failures shows what holds."
            </p>
        }
        .into_any()
    })
}

/// The project page's compliance card: one small multiple per framework (its share passing
/// over the chart's range on one time axis), and the same as a table.
pub fn posture_card(
    project_id: &str,
    line: &LineChoice,
    range: Range,
    view: ProjectPostureView,
) -> AnyView {
    if view.frameworks.is_empty() {
        return view! {
            <section class="card" aria-labelledby="posture-heading" data-testid="posture-card">
                <h2 id="posture-heading">"Compliance"</h2>
                <p class="muted">"The latest scan names no framework its rules belong to. A push's "
                    <code>"frameworks"</code> " (" <code>"[\"cis-aws-2.0\"]"</code>
                    ") and rule ids like " <code>"cis-aws-2.0-1.4"</code> " show each framework's posture here."</p>
            </section>
        }
        .into_any();
    }
    let line_query = line.query();
    let drift = view.drift_detection;
    let rows = view.frameworks.clone();
    view! {
        <section class="card" aria-labelledby="posture-heading" data-testid="posture-card">
            <div class="card-head">
                <h2 id="posture-heading">"Compliance"</h2>
                <span class="muted small">{format!("Share of requirements passing, now and {}", crate::model::over_range(range))}</span>
            </div>
            <ul class="trends" data-testid="posture-trends">
                {view.frameworks.into_iter().map(|f| trend_tile(project_id, &line_query, drift, f)).collect_view()}
            </ul>
            <details class="as-table">
                <summary>"The same as a table"</summary>
                <div class="table-wrap" tabindex="0">
                    <table data-testid="posture-table">
                        <caption class="visually-hidden">{format!("Each framework's share of requirements passing, now and {}", crate::model::over_range(range))}</caption>
                        <thead><tr>
                            <th scope="col">"Framework"</th><th scope="col">"Passing now"</th>
                            <th scope="col">"Passed"</th><th scope="col">"Failed"</th>
                            <th scope="col">"Triaged"</th><th scope="col">"Not evaluated"</th>
                            <th scope="col">"First in range"</th>
                            <th scope="col">"Lowest"</th><th scope="col">"Highest"</th>
                            <th scope="col">"Scans"</th>
                        </tr></thead>
                        <tbody>
                            {rows.into_iter().map(|f| view! {
                                <tr>
                                    <th scope="row">{f.name.clone()}</th>
                                    <td data-label="Passing now">{percent(f.counts.share_passing)}</td>
                                    <td data-label="Passed">{f.counts.passed}</td>
                                    <td data-label="Failed">{f.counts.failed}</td>
                                    <td data-label="Triaged">{f.counts.triaged}</td>
                                    <td data-label="Not evaluated">{f.counts.not_evaluated}</td>
                                    <td data-label="First in range">{percent(f.first)}</td>
                                    <td data-label="Lowest">{percent(f.low)}</td>
                                    <td data-label="Highest">{percent(f.high)}</td>
                                    <td data-label="Scans">{f.scans}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </details>
        </section>
    }
    .into_any()
}

fn trend_tile(project_id: &str, line_query: &str, drift: bool, f: FrameworkTrend) -> AnyView {
    let href = framework_href(project_id, &f.framework, line_query);
    let drifted = (drift && !f.drifted.is_empty()).then(|| {
        view! {
            <p class="drift small" data-testid="trend-drift">
                {format!("Drift: {} passed before and fail{} now: ", count_of(f.drifted.len() as i64, "requirement", "requirements"), if f.drifted.len() == 1 { "s" } else { "" })}
                {f.drifted.iter().map(|d| view! { <code>{d.clone()}</code> " " }).collect_view()}
            </p>
        }
    });
    view! {
        <li class="trend" data-framework=f.framework.clone()>
            <h3><a href=href>{f.name.clone()}</a></h3>
            <p class="trend-share"><strong>{percent(f.counts.share_passing)}</strong>" passing"</p>
            <figure class="trend-chart" aria-label=f.summary.clone()>
                <div class="chart-layer" inner_html=f.svg.clone()></div>
                <svg class="chart-overlay chart-axes" viewBox=format!("0 0 {TREND_WIDTH} {TREND_HEIGHT}") aria-hidden="true">
                    <text class="axis" x="6" y="14">"100%"</text>
                    <text class="axis" x="6" y=TREND_HEIGHT - 6>"0%"</text>
                </svg>
            </figure>
            <p class="muted small">{counts_line(&f.counts)}</p>
            {none_passed(&f.counts)}
            {drifted}
        </li>
    }
    .into_any()
}

/// `/projects/{project_id}/frameworks/{framework}`: one framework in the line's latest scan.
#[component]
pub fn FrameworkPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let key = move || {
        let p = params.read();
        let q = query.read();
        (
            p.get("project_id").unwrap_or_default(),
            // As `framework_href` wrote it (one segment, percent-encoded).
            percent_encoding::percent_decode_str(&p.get("framework").unwrap_or_default())
                .decode_utf8_lossy()
                .into_owned(),
            q.get("branch"),
            q.get("pr").and_then(|n| n.parse::<i64>().ok()),
        )
    };
    let data = Resource::new(key, |(project, framework, branch, pr)| {
        load_framework(project, framework, branch, pr)
    });
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(v) => framework_page(v).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

fn framework_page(v: FrameworkView) -> impl IntoView {
    let project_href = match v.line_query.trim_end_matches('&') {
        "" => format!("/projects/{}", v.project_id),
        q => format!("/projects/{}?{q}", v.project_id),
    };
    let scan_href = format!("/projects/{}/scans/{}", v.project_id, v.scan_id);
    let top: Vec<RequirementView> = v.top_failing(10).into_iter().cloned().collect();
    let failing = v
        .requirements
        .iter()
        .filter(|r| r.status == "failed")
        .count();
    let drifted: Vec<String> = if v.drift_detection {
        v.requirements
            .iter()
            .filter(|r| r.drifted)
            .map(|r| r.id.clone())
            .collect()
    } else {
        Vec::new()
    };
    view! {
        <Title text=format!("{} · {} · Tidemark", v.name, v.project_label)/>
        <nav class="crumbs" aria-label="Breadcrumb">
            <a href="/projects">"Projects"</a> " / " <a href=project_href>{v.project_label.clone()}</a> " / "
        </nav>
        <section class="page-head">
            <h1>{v.name.clone()}</h1>
            <p class="headline" data-testid="framework-headline">
                <span class="big-score">{percent(v.counts.share_passing)}</span>
                <span>" of requirements passing"</span>
                <span class="muted">{format!(" · {} · on ", counts_line(&v.counts))}</span>
                <span class="branch-name">{v.line_label.clone()}</span>
            </p>
            <p class="muted small">"As the latest scan, " <a href=scan_href.clone()>{v.scan_id.clone()}</a>
                " of " {utc_time(v.scanned_at.clone())} ", stands with the triage that holds now. "
                <a href=format!("{scan_href}/report.html")>"Its compliance report"</a> " is the evidence to hand an auditor."</p>
            {none_passed(&v.counts)}
        </section>
        {(!drifted.is_empty()).then(|| view! {
            <p class="notice drift" data-testid="framework-drift">
                {format!("Drift: {} passed in the previous scan and fail{} now: ", count_of(drifted.len() as i64, "requirement", "requirements"), if drifted.len() == 1 { "s" } else { "" })}
                {drifted.iter().map(|d| view! { <code>{d.clone()}</code> " " }).collect_view()}
            </p>
        })}
        {heatmap(&v)}
        {top_failing(&v, top, failing)}
        {every_requirement(&v)}
    }
}

/// Each section's share of requirements failing as a shaded tile (darker is worse), linked
/// to its requirements below; the table under it says the same in numbers.
fn heatmap(v: &FrameworkView) -> AnyView {
    view! {
        <section class="card" aria-labelledby="sections-heading">
            <h2 id="sections-heading">"Sections"</h2>
            <p class="muted small">"Each section's share of requirements failing: the darker, the more fail."</p>
            <ol class="heatmap" data-testid="heatmap">
                {v.sections.iter().map(|s| view! {
                    <li class=format!("heat-{}", heat(s.failing))>
                        <a href=format!("#{}", section_anchor(&s.section))>
                            <span class="heat-name">{s.section.clone()}</span>
                            <span class="heat-share">{format!("{} failing", percent(s.failing))}</span>
                            <span class="heat-count">{format!("{} of {}", s.counts.failed, s.counts.passed + s.counts.failed + s.counts.triaged)}</span>
                        </a>
                    </li>
                }).collect_view()}
            </ol>
            <details class="as-table">
                <summary>"The same as a table"</summary>
                <div class="table-wrap" tabindex="0">
                    <table data-testid="sections-table">
                        <caption class="visually-hidden">"Requirements per section"</caption>
                        <thead><tr>
                            <th scope="col">"Section"</th><th scope="col">"Passed"</th><th scope="col">"Failed"</th>
                            <th scope="col">"Triaged"</th><th scope="col">"Not evaluated"</th><th scope="col">"Failing"</th>
                        </tr></thead>
                        <tbody>
                            {v.sections.iter().map(|s| view! {
                                <tr>
                                    <th scope="row">{s.section.clone()}</th>
                                    <td data-label="Passed">{s.counts.passed}</td>
                                    <td data-label="Failed">{s.counts.failed}</td>
                                    <td data-label="Triaged">{s.counts.triaged}</td>
                                    <td data-label="Not evaluated">{s.counts.not_evaluated}</td>
                                    <td data-label="Failing">{percent(s.failing)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </details>
        </section>
    }
    .into_any()
}

/// A requirement's name: its rule id (a custom control: its id) and its title, with what
/// the catalogue says of it folded underneath.
fn requirement_name(custom: bool, r: &RequirementView) -> AnyView {
    let id = if custom {
        view! { <code>{r.id.clone()}</code> }.into_any()
    } else {
        view! { <a href=super::requirement::requirement_href(&r.id)><code>{r.id.clone()}</code></a> }.into_any()
    };
    view! {
        {id}
        {r.title.clone().map(|t| view! { " " <span>{t}</span> })}
        {r.description.clone().map(|d| view! {
            <details class="req-about"><summary class="small">"About"</summary><p class="small muted">{d}</p></details>
        })}
    }
    .into_any()
}

/// The findings behind a requirement: each resource linked to its finding's page (its whole
/// life), since when it fails, and its triage.
fn findings_list(project_id: &str, custom: bool, r: &RequirementView) -> AnyView {
    view! {
        <ul class="req-findings">
            {r.findings.iter().map(|f| view! {
                <li>
                    <a href=super::finding::finding_href(project_id, &f.finding_id)><code>{f.resource.clone()}</code></a>
                    {custom.then(|| view! { " " <code class="muted">{f.rule_id.clone()}</code> })}
                    // Its own "failing since" only where it differs from the requirement's
                    // (one date a row says once).
                    <span class="muted small">{format!(" · {}", f.severity)}
                        {(r.failing_since.as_deref() != Some(f.failing_since.as_str())).then(|| view! { " · failing since " {utc_time(f.failing_since.clone())} })}
                    </span>
                    {f.triage.clone().map(|t| view! { <span class="small triage-note">{format!(" · {t}")}</span> })}
                </li>
            }).collect_view()}
        </ul>
    }
    .into_any()
}

fn top_failing(v: &FrameworkView, top: Vec<RequirementView>, failing: usize) -> AnyView {
    let project_id = v.project_id.clone();
    view! {
        <section class="card" aria-labelledby="top-heading">
            <h2 id="top-heading">"Top failing requirements"</h2>
            {if top.is_empty() {
                view! { <p class="muted" data-testid="top-failing-none">"No requirement fails."</p> }.into_any()
            } else {
                view! {
                    <p class="muted small">{format!("{} of {} failing, the most failing resources first.", top.len(), failing)}</p>
                    <div class="table-wrap" tabindex="0">
                        <table data-testid="top-failing">
                            <thead><tr>
                                <th scope="col">"Requirement"</th><th scope="col">"Failing since"</th>
                                <th scope="col">"Resources"</th>
                            </tr></thead>
                            <tbody>
                                {top.iter().map(|r| view! {
                                    <tr>
                                        <th scope="row">{requirement_name(v.custom, r)}</th>
                                        <td data-label="Failing since">{super::utc_time_or(r.failing_since.clone(), "–")}</td>
                                        <td data-label="Resources">{findings_list(&project_id, v.custom, r)}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
    .into_any()
}

fn every_requirement(v: &FrameworkView) -> AnyView {
    let project_id = v.project_id.clone();
    let mut previous = String::new();
    let rows = v
        .requirements
        .iter()
        .map(|r| {
            // The first requirement of each section is where its heatmap tile leads.
            let anchor = (r.section != previous).then(|| section_anchor(&r.section));
            previous = r.section.clone();
            view! {
                <tr id=anchor>
                    <th scope="row">{requirement_name(v.custom, r)}</th>
                    <td data-label="Section">{r.section.clone()}</td>
                    <td data-label="Status">{if r.manual && r.status == "not_evaluated" { view! { <span class="tag">"manual"</span> }.into_any() } else { status_tag(&r.status) }}
                        {(v.drift_detection && r.drifted).then(|| view! { " " <span class="tag drift">"drifted"</span> })}</td>
                    <td data-label="Failing since">{super::utc_time_or(r.failing_since.clone(), "–")}</td>
                    <td data-label="Findings">{(!r.findings.is_empty()).then(|| findings_list(&project_id, v.custom, r))}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="requirements-heading">
            <h2 id="requirements-heading">"Every requirement"</h2>
            {catalogue_line(v)}
            <div class="table-wrap" tabindex="0">
                <table data-testid="requirements-table">
                    <thead><tr>
                        <th scope="col">"Requirement"</th><th scope="col">"Section"</th><th scope="col">"Status"</th>
                        <th scope="col">"Failing since"</th><th scope="col">"Findings"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

/// Where the requirement list comes from: the vendor's catalogue (with how many no scan
/// evaluated), or only what scans reported.
fn catalogue_line(v: &FrameworkView) -> Option<AnyView> {
    if v.custom {
        return None;
    }
    let unevaluated = v
        .requirements
        .iter()
        .filter(|r| r.status == "not_evaluated")
        .count();
    Some(match &v.catalogue {
        Some(c) => view! {
            <p class="muted small" data-testid="catalogue-note">
                {format!(
                    "All {} requirements of the {} catalogue; {} not evaluated by this scan ({} of them manual: no scan can check them).",
                    c.requirements, c.name, unevaluated, c.manual
                )}
            </p>
        }
        .into_any(),
        None => view! {
            <p class="notice" role="note" data-testid="catalogue-note">
                "No catalogue is published for this framework, so this lists only the requirements scans reported; "
                "requirements no scan evaluated are not shown."
            </p>
        }
        .into_any(),
    })
}

/// The projects page's rollup: frameworks and cloud accounts across the account's projects,
/// worst first.
pub fn rollup_section(r: PostureRollup) -> AnyView {
    if r.frameworks.is_empty() {
        return ().into_any();
    }
    view! {
        <section class="card" aria-labelledby="rollup-heading" data-testid="posture-rollup">
            <h2 id="rollup-heading">"Compliance across projects"</h2>
            <p class="muted small">"Each project's latest scan on its default branch, as pushed; the worst first."</p>
            <div class="rollup">
                {rollup_table("rollup-frameworks", "Framework", &r.frameworks, false)}
                {rollup_table("rollup-accounts", "Cloud account", &r.accounts, true)}
            </div>
        </section>
    }
    .into_any()
}

/// A rollup row's name, linked to the findings behind it in the inbox (across the projects,
/// each finding with its requirement); a custom framework's controls are not rules, so its
/// name stays text.
fn rollup_name(l: &RollupLine, cloud: bool) -> AnyView {
    let q = crate::links::query_value(&l.key);
    if cloud {
        let href = format!("/findings?cloud_account={q}");
        view! { <span class="tag">{l.cloud.clone().unwrap_or_default()}</span> " " <a href=href><code>{l.name.clone()}</code></a> }.into_any()
    } else if l.key.starts_with("custom:") {
        view! { <span>{l.name.clone()}</span> }.into_any()
    } else {
        let href = format!("/findings?framework={q}");
        view! { <a href=href>{l.name.clone()}</a> }.into_any()
    }
}

fn rollup_table(
    testid: &'static str,
    what: &'static str,
    lines: &[RollupLine],
    cloud: bool,
) -> impl IntoView {
    view! {
        <div class="table-wrap" tabindex="0">
            <table data-testid=testid>
                <caption>{format!("By {}", what.to_lowercase())}</caption>
                <thead><tr>
                    <th scope="col">{what}</th>
                    <th scope="col">"Passing"</th><th scope="col">"Failed"</th>
                    <th scope="col">"Triaged"</th><th scope="col">"Projects"</th>
                </tr></thead>
                <tbody>
                    {lines.iter().map(|l| view! {
                        <tr>
                            <th scope="row">{rollup_name(l, cloud)}</th>
                            <td data-label="Passing">{share_bar(l.counts.share_passing)}</td>
                            <td data-label="Failed">{l.counts.failed}</td>
                            <td data-label="Triaged">{l.counts.triaged}</td>
                            <td data-label="Projects">{l.projects}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
