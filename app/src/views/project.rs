use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::{
    change_badge, delta_badge, error_view, fmt_score, gate_badge, loading, severity_chips,
};
use leptos::server_fn::ServerFn;

use crate::api::project::{load_project_chart, project_scans, SetDefaultBranch, SetProjectGate};
use crate::model::{
    severity_colour, ChartPoint, GateSettings, GateStatus, LineChoice, LineSummary, ProjectChart,
    Range, ScanSummary, ScansPage, Severity, DATE_BASELINE, HEIGHT, WIDTH,
};

#[component]
pub fn ProjectPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let project_id = move || params.read().get("project_id").unwrap_or_default();
    let range = move || Range::parse(&query.read().get("range").unwrap_or_default());
    let line = move || {
        let q = query.read();
        LineChoice::from_query(q.get("branch"), q.get("pr"))
    };
    let pulls_tab = move || query.read().get("tab").as_deref() == Some("pulls");
    let full_scale = move || query.read().get("scale").as_deref() == Some("full");
    let page = move || {
        query
            .read()
            .get("page")
            .and_then(|p| p.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let chart = Resource::new(
        move || (project_id(), range(), line(), full_scale()),
        |(id, range, line, full)| {
            let (branch, pr) = line_args(&line);
            load_project_chart(id, range, branch, pr, full)
        },
    );
    let posture = Resource::new(
        move || (project_id(), range(), line()),
        |(id, range, line)| {
            let (branch, pr) = line_args(&line);
            crate::api::posture::load_project_posture(id, range, branch, pr)
        },
    );
    let scans = Resource::new(
        move || (project_id(), page(), line()),
        |(id, page, line)| {
            let (branch, pr) = line_args(&line);
            project_scans(id, page, branch, pr)
        },
    );
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                let chart = chart.await;
                // Extra: the page shows without it if it fails.
                let posture = match posture.await {
                    Ok(view) if !pulls_tab() => {
                        Some(super::posture::posture_card(&project_id(), &line(), range(), view))
                    }
                    _ => None,
                };
                match chart {
                    Ok(chart) => chart_section(chart, pulls_tab(), posture).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match scans.await {
                    Ok(page) if !pulls_tab() => scans_table(project_id(), range(), line(), full_scale(), page).into_any(),
                    _ => ().into_any(),
                }
            })}
        </Suspense>
    }
}

/// A line as the server functions take it.
fn line_args(line: &LineChoice) -> (Option<String>, Option<i64>) {
    match line {
        LineChoice::Default => (None, None),
        LineChoice::Branch(b) => (Some(b.clone()), None),
        LineChoice::PullRequest(n) => (None, Some(*n)),
    }
}

/// The line's head, its score history, its compliance card (`posture`) and the project's
/// settings.
fn chart_section(chart: ProjectChart, pulls_tab: bool, posture: Option<AnyView>) -> impl IntoView {
    let project = chart.project.clone();
    let id = project.id.clone();
    let (gate, is_admin) = (chart.gate, chart.is_admin);
    let line = chart.line.clone();
    let branches = chart.branches.clone();
    let pulls = chart.pulls.clone();
    let title = match (&line.pull_request, line.is_default && !pulls_tab) {
        (Some(pr), _) => match &pr.title {
            Some(t) => format!("#{} {t} · {} · Tidemark", pr.number, project.label),
            None => format!("#{} · {} · Tidemark", pr.number, project.label),
        },
        (None, true) => format!("{} · Tidemark", project.label),
        (None, false) if pulls_tab => format!("Pull requests · {} · Tidemark", project.label),
        (None, false) => format!("{} · {} · Tidemark", line.label(), project.label),
    };
    // The default line's head is the project's; another line shows its own, and a pull
    // request its change against its base (what it was judged by).
    let base_branch = line
        .pull_request
        .as_ref()
        .and_then(|p| p.base_branch.clone());
    let (score, change, count) = if line.is_default {
        (
            project.last_score,
            project.last_delta.map(|d| (d, None)),
            project.scan_count,
        )
    } else {
        let head = line.head.as_ref();
        let change = head.map(|h| match (h.base_score_delta, &base_branch) {
            (Some(d), Some(b)) => (d, Some(b.clone())),
            _ => (h.score_delta, None),
        });
        (head.map(|h| h.score), change, line.scan_count)
    };
    let default_names: Vec<String> = branches.iter().filter_map(|b| b.name.clone()).collect();
    let current_default = branches
        .iter()
        .find(|b| b.is_default)
        .and_then(|b| b.name.clone());
    view! {
        <Title text=title/>
        <nav class="crumbs" aria-label="Breadcrumb"><a href="/projects">"Projects"</a> " / "</nav>
        <section class="page-head">
            <h1>{project.label.clone()}</h1>
            <p class="headline">
                <span class="big-score">{score.map(fmt_score).unwrap_or_else(|| "–".into())}</span>
                <span data-testid="line-change">{match change {
                    Some((d, against)) => change_badge(d, against.as_deref()).into_any(),
                    None => delta_badge(None).into_any(),
                }}</span>
                <span class="muted">{format!(" · {}", super::count_of(count, "scan", "scans"))}</span>
                {(!pulls_tab).then(|| view! { <span class="muted">" on "</span><span class="branch-name" data-testid="line-label">{line.label()}</span> })}
                {project.archived.then(|| view! { <span class="tag">"archived"</span> })}
            </p>
        </section>
        {line_nav(&id, &line, &branches, pulls.len(), pulls_tab)}
        {if pulls_tab {
            pulls_table(&id, pulls).into_any()
        } else {
            view! {
                {line.pull_request.is_some().then(|| pull_request_card(&line))}
                {history_card(line.choice(), chart)}
                {posture}
            }
            .into_any()
        }}
        {gate_panel(id.clone(), gate, is_admin)}
        {(is_admin && default_names.len() > 1)
            .then(|| default_branch_panel(id.clone(), default_names, current_default))}
    }
}

/// The two tabs (the branches' history, the pull requests) and the branch selector: a plain
/// form, so it works before (or without) the WASM, and its choice is in the address.
fn line_nav(
    project_id: &str,
    line: &LineSummary,
    branches: &[LineSummary],
    pulls: usize,
    pulls_tab: bool,
) -> impl IntoView {
    let selected = line.choice();
    // A pull request (its list, or one of them) is the pull-request tab's; a branch the
    // branches tab's. The tab of the page itself is `page`, of its context `true`.
    let on_pull = line.pull_request.is_some();
    let branches_current = (!pulls_tab && !on_pull).then_some("page");
    let pulls_current = if pulls_tab {
        Some("page")
    } else {
        on_pull.then_some("true")
    };
    view! {
        <nav class="line-nav" aria-label="Branches and pull requests" data-testid="line-nav">
            <div class="segmented">
                <a href=format!("/projects/{project_id}") class:active=branches_current.is_some()
                    aria-current=branches_current data-testid="branches-tab">"Branches"</a>
                <a href=format!("/projects/{project_id}?tab=pulls") class:active=pulls_current.is_some()
                    aria-current=pulls_current data-testid="pulls-tab">
                    {format!("Pull requests ({pulls})")}
                </a>
            </div>
            {(!pulls_tab && !on_pull).then(|| view! {
                <form method="get" action=format!("/projects/{project_id}") class="branch-select" data-testid="branch-select">
                    <label>"Branch "
                        <select name="branch">
                            {branches.iter().map(|b| {
                                let value = if b.is_default { String::new() } else { b.name.clone().unwrap_or_default() };
                                let label = if b.is_default { format!("{} (default)", b.label()) } else { b.label() };
                                let chosen = b.choice() == selected;
                                view! { <option value=value selected=chosen>{label}</option> }
                            }).collect_view()}
                        </select>
                    </label>
                    <button type="submit" class="secondary">"Show"</button>
                </form>
            })}
        </nav>
    }
}

fn pull_request_card(line: &LineSummary) -> impl IntoView {
    let pr = line
        .pull_request
        .clone()
        .unwrap_or(crate::model::PullSummary {
            number: 0,
            title: None,
            url: None,
            base_branch: None,
        });
    let base = pr.base_branch.clone().unwrap_or_else(|| "its base".into());
    let verdict = line.head.as_ref().map(|h| {
        (
            h.gate,
            h.compared,
            h.new_findings,
            h.fixed_findings,
            h.base_score_delta,
        )
    });
    view! {
        <section class="card" aria-labelledby="pr-heading" data-testid="pull-request-card">
            <h2 id="pr-heading">
                {match pr.url.clone() {
                    Some(url) => view! { <a href=url rel="noopener noreferrer">{format!("#{}", pr.number)}</a> }.into_any(),
                    None => view! { <span>{format!("#{}", pr.number)}</span> }.into_any(),
                }}
                " " {pr.title.clone().unwrap_or_default()}
            </h2>
            <p>
                {line.name.clone().map(|n| view! { <span class="branch-name">{n}</span> " → " })}
                <span class="branch-name">{base.clone()}</span>
            </p>
            {verdict.map(|(gate, compared, new, fixed, delta)| view! {
                <p data-testid="pull-request-verdict">"Against " {base.clone()} ": " {gate_badge(gate)} " · "
                    {if compared {
                        format!("{} new, {} fixed", new.unwrap_or(0), fixed.unwrap_or(0))
                    } else {
                        format!("{base} had no scan yet: judged on its own")
                    }}
                    {delta.map(|d| view! { " · score " {super::delta_span(Some(d), &format!("against {base}'s scan"))} })}
                </p>
            })}
        </section>
    }
}

fn pulls_table(project_id: &str, pulls: Vec<LineSummary>) -> impl IntoView {
    if pulls.is_empty() {
        return view! {
            <section class="card" data-testid="pulls-table">
                <p class="muted">"No pull request has been scanned yet. Push with "
                    <code>"git.pull_request"</code> " (the CLI does this in CI) to see them here."</p>
            </section>
        }
        .into_any();
    }
    view! {
        <section class="card" aria-labelledby="pulls-heading">
            <h2 id="pulls-heading">"Pull requests"</h2>
            <div class="table-wrap" tabindex="0">
                <table class="scans" data-testid="pulls-table">
                    <thead>
                        <tr>
                            <th scope="col">"Pull request"</th>
                            <th scope="col">"Branch"</th>
                            <th scope="col">"Head scan"</th>
                            <th scope="col">"Score"</th>
                            <th scope="col">"Verdict against base"</th>
                            <th scope="col">"New findings"</th>
                            <th scope="col">"Last push"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {pulls.into_iter().map(|l| {
                            let pr = l.pull_request.clone();
                            let number = pr.as_ref().map_or(0, |p| p.number);
                            let title = pr.as_ref().and_then(|p| p.title.clone()).unwrap_or_default();
                            let base = pr.as_ref().and_then(|p| p.base_branch.clone()).unwrap_or_default();
                            let head = l.head.clone();
                            view! {
                                <tr>
                                    <th scope="row"><a href=format!("/projects/{project_id}?pr={number}")>{format!("#{number}")}</a> " " {title}</th>
                                    <td data-label="Branch"><span class="branch-name">{l.name.clone().unwrap_or_default()}</span> " → " <span class="branch-name">{base}</span></td>
                                    <td data-label="Head scan">{head.as_ref().map(|h| view! { <a href=format!("/projects/{project_id}/scans/{}", h.scan_id)>{h.scan_id.to_string()}</a> })}</td>
                                    <td data-label="Score" class="score">{head.as_ref().map(|h| fmt_score(h.score))}</td>
                                    <td data-label="Verdict against base">{head.as_ref().map(|h| gate_badge(h.gate))}</td>
                                    <td data-label="New findings">{head.as_ref().map(|h| match (h.compared, h.new_findings) {
                                        (true, Some(n)) => n.to_string(),
                                        _ => "base not scanned".to_owned(),
                                    })}</td>
                                    <td data-label="Last push">{super::utc_time_or(l.last_push.clone(), "–")}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

/// Which branch is the project's line (admins): a plain form posting to the
/// `set_default_branch` server function, which sends the browser back here (the page loads
/// no WASM; see [`super::form_outcome`]).
fn default_branch_panel(
    project_id: tidemark_wire::ids::ProjectId,
    branches: Vec<String>,
    current: Option<String>,
) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="default-branch-heading" data-testid="default-branch-panel">
            <h2 id="default-branch-heading">"Default branch"</h2>
            <p class="muted small">"The projects list, badges, alerts and " <code>"score.regressed"</code>
                " follow the default branch; pushes without a branch go to it."</p>
            <form method="post" action=SetDefaultBranch::PATH>
                <input type="hidden" name="project_id" value=project_id.to_string()/>
                <label>"Default branch "
                    <select name="branch">
                        {branches.into_iter().map(|b| {
                            let chosen = current.as_deref() == Some(b.as_str());
                            view! { <option value=b.clone() selected=chosen>{b.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <button type="submit" class="secondary">"Save default branch"</button>
            </form>
            {super::form_notice(
                SetDefaultBranch::PATH,
                &format!("{} is the default branch now.", current.clone().unwrap_or_default()),
            )}
        </section>
    }
}

/// The project's quality gate: what every push is judged by, and for admins a plain form
/// posting to the `set_project_gate` server function, which sends the browser back here with
/// the gate saved (or the reason it was not).
fn gate_panel(
    project_id: tidemark_wire::ids::ProjectId,
    gate: Option<GateSettings>,
    is_admin: bool,
) -> impl IntoView {
    let number = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let threshold = gate.and_then(|g| g.new_findings_at);
    view! {
        <section class="card" aria-labelledby="gate-heading" data-testid="gate-panel">
            <h2 id="gate-heading">"Quality gate"</h2>
            {match gate {
                None => view! {
                    <p class="muted" data-testid="gate-summary">
                        "No gate yet: every push passes, whatever its score."
                    </p>
                }
                .into_any(),
                Some(g) => view! {
                    <p data-testid="gate-summary">"Every push must have: "
                        {g.describe().join("; ")} "."
                    </p>
                }
                .into_any(),
            }}
            {is_admin.then(|| view! {
                <form method="post" action=SetProjectGate::PATH class="gate-form">
                    <input type="hidden" name="project_id" value=project_id.to_string()/>
                    <label>"Minimum score "
                        <input name="min_score" type="number" min="0" max="100" step="any"
                            placeholder="none" value=number(gate.and_then(|g| g.min_score))/>
                    </label>
                    <label>"Maximum drop "
                        <input name="max_drop" type="number" min="0" max="100" step="any"
                            placeholder="none" value=number(gate.and_then(|g| g.max_drop))/>
                    </label>
                    <label>"No new open findings at or above "
                        <select name="new_findings_at">
                            <option value="" selected=threshold.is_none()>"(any: no condition)"</option>
                            {Severity::ALL
                                .into_iter()
                                .map(|s| view! {
                                    <option value=s.as_str() selected=threshold == Some(s)>{s.as_str()}</option>
                                })
                                .collect_view()}
                        </select>
                    </label>
                    <button type="submit" class="primary">"Save gate"</button>
                    <span class="muted small">" Leave every field empty to remove the gate. Scans already pushed keep their verdicts."</span>
                </form>
                {super::form_notice(SetProjectGate::PATH, "Saved. The next push is judged by this gate.")}
            })}
        </section>
    }
}

/// The score history with its range links and its score axis, all plain links to this page
/// (the page is about 11 KB as sent). Drawn on the server; `public/dashboard.js` answers the
/// points' keys, tooltip and the scan line below the chart (see docs/benchmarks.md: an island
/// here cost the page 136 KB of WASM).
fn history_card(line: LineChoice, chart: ProjectChart) -> impl IntoView {
    let line_query = line.query();
    let (scale, range) = (chart.full_scale, chart.range);
    let href = |r: Range, full: bool| {
        format!(
            "/projects/{}?{}{}range={}",
            chart.project.id,
            line_query,
            if full { "scale=full&" } else { "" },
            r.as_str()
        )
    };
    let scale_links = [(false, "Fitted"), (true, "0–100")]
        .into_iter()
        .map(|(full, text)| {
            let current = full == scale;
            view! {
                <a href=href(range, full) class:active=current aria-current=current.then_some("true")>
                    {text}
                </a>
            }
        })
        .collect_view();
    let range_links = Range::ALL
        .into_iter()
        .map(|r| {
            let current = r == range;
            view! {
                <a href=href(r, scale) class:active=current aria-current=current.then_some("true")>
                    {r.as_str()}
                </a>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="history-heading" data-testid="history-card">
            <div class="card-head">
                <h2 id="history-heading">"Score history"</h2>
                <nav class="segmented" aria-label="Score axis" data-testid="chart-scale">{scale_links}</nav>
                <nav class="segmented" aria-label="Time range">{range_links}</nav>
            </div>
            {history_chart(chart)}
        </section>
    }
}

/// The drawing (static SVG from the server) with the scans' points on top.
fn history_chart(chart: ProjectChart) -> AnyView {
    if chart.points.is_empty() {
        return view! {
            <p class="muted" data-testid="chart-empty">"No scans in this range. Choose a longer one."</p>
        }
        .into_any();
    }
    let shown = chart.points.len();
    let failed = chart.points.iter().any(|p| p.gate == GateStatus::Failed);
    let caption = if chart.scans_in_range > shown {
        format!(
            "{} scans, drawn as {} points (largest-triangle downsampling keeps spikes).",
            chart.scans_in_range, shown
        )
    } else {
        format!(
            "{}.",
            super::count_of(chart.scans_in_range as i64, "scan", "scans")
        )
    };
    // The chart's text alternative: what a reader would take from the picture.
    let summary = {
        let scores = chart.points.iter().map(|p| p.score);
        let (low, high) = scores.fold((f64::MAX, f64::MIN), |(lo, hi), s| (lo.min(s), hi.max(s)));
        let (first, last) = (&chart.points[0], &chart.points[shown - 1]);
        // Drawn on the server only; the browser build never renders this page part.
        #[cfg(feature = "ssr")]
        let (from_day, to_day) = (crate::time::date(first.at), crate::time::date(last.at));
        #[cfg(not(feature = "ssr"))]
        let (from_day, to_day) = (String::new(), String::new());
        format!(
            "Score history: {}; from {} on {} to {} on {}, lowest {}, highest {}{}.",
            super::count_of(chart.scans_in_range as i64, "scan", "scans"),
            super::fmt_score(first.score),
            from_day,
            super::fmt_score(last.score),
            to_day,
            super::fmt_score(low),
            super::fmt_score(high),
            if failed {
                "; some scans failed the quality gate"
            } else {
                ""
            }
        )
    };
    let ProjectChart {
        project,
        points,
        drawing,
        ..
    } = chart;
    view! {
        // On a phone the chart keeps a readable size and scrolls sideways in its box, rather
        // than squashing to a strip whose labels overlap.
        <div class="chart-scroll">
        <figure class="chart history" data-testid="history-chart" data-points=shown aria-label=summary>
            <div class="chart-layer" inner_html=drawing.svg></div>
            // The dates under the bars and the bars' finding counts: drawn once on the server,
            // under the points (the scans table below carries the same facts as text).
            <svg class="chart-overlay chart-axes" viewBox=format!("0 0 {WIDTH} {HEIGHT}") aria-hidden="true" data-testid="chart-axes">
                {drawing.x_ticks.iter().map(|(x, label)| view! {
                    <text class="axis date" x=*x y=DATE_BASELINE text-anchor="middle">{label.clone()}</text>
                }).collect_view()}
                {drawing.bar_ticks.iter().map(|(y, count)| view! {
                    <text class="axis count" x="36" y=y + 4 text-anchor="end">{*count}</text>
                }).collect_view()}
            </svg>
            {chart_points(project.id, points, drawing.dots, drawing.grid)}
            <figcaption>
                <span class="legend">
                    <span class="swatch score"></span> "score  "
                    {Severity::ALL
                        .iter()
                        .map(|&severity| view! {
                            // A fill attribute, not a style: the page policy allows no inline styles.
                            <svg class="swatch" viewBox="0 0 1 1" aria-hidden="true">
                                <rect width="1" height="1" fill=severity_colour(severity)></rect>
                            </svg>
                            {format!("{}  ", severity.as_str())}
                        })
                        .collect_view()}
                    {failed.then(|| view! {
                        <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
                            <circle class="gate-failed" cx="5" cy="5" r="4"></circle>
                        </svg>
                        "failed gate  "
                    })}
                </span>
                <span class="muted">{caption}</span>
            </figcaption>
        </figure>
        </div>
    }
    .into_any()
}

/// The scans' points over the drawing, each a link to its scan carrying what the line under
/// the chart says of it (`data-score`, `data-sev`, `data-gate`). The line shows the newest
/// scan; `public/dashboard.js` fills it in for the point hovered or focused, so the page does
/// not carry that line once per point.
fn chart_points(
    project_id: tidemark_wire::ids::ProjectId,
    points: Vec<ChartPoint>,
    dots: Vec<(i32, i32)>,
    grid: Vec<(i32, u32)>,
) -> impl IntoView {
    let scan_href = |p: &ChartPoint| format!("/projects/{project_id}/scans/{}", p.scan_id);
    let newest = points.last().map(|p| {
        let failed = p.gate == GateStatus::Failed;
        // A `div`, not a `p`: the chips are a list, and an HTML parser closes a paragraph
        // before a list, which left the chips outside the line the script fills in.
        view! {
            <div class="scan-line" data-testid="chart-scan-line">
                <a href=scan_href(p)>{p.scan_id.to_string()}</a>
                " · score " <strong>{fmt_score(p.score)}</strong> " · "
                <span data-gate hidden=!failed><span class="gate failed">"gate failed"</span> " · "</span>
                {severity_chips(p.severities)}
            </div>
        }
    });
    view! {
        <svg class="chart-overlay" viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="group" aria-label="Scans on the chart">
            {grid
                .iter()
                .map(|(y, v)| view! { <text class="axis" x="36" y=y + 4 text-anchor="end">{*v}</text> })
                .collect_view()}
            {dots
                .iter()
                .zip(&points)
                .map(|((x, y), p)| {
                    let failed = p.gate == GateStatus::Failed;
                    let sev = Severity::ALL.map(|s| p.severities.get(s).to_string()).join(",");
                    view! {
                        <a href=scan_href(p) aria-label=p.label.clone() data-at=p.at
                            data-score=fmt_score(p.score) data-sev=sev data-gate=failed.then_some("failed")>
                            {failed.then(|| view! { <circle class="gate-failed" cx=*x cy=*y r="9"></circle> })}
                            <circle class="dot" cx=*x cy=*y r="5"></circle>
                        </a>
                    }
                })
                .collect_view()}
        </svg>
        <div class="chart-tip" role="status" aria-live="polite" data-testid="chart-tip">{newest}</div>
    }
}

fn scans_table(
    project_id: String,
    range: Range,
    line: LineChoice,
    full_scale: bool,
    page: ScansPage,
) -> impl IntoView {
    let q = format!(
        "{}{}",
        line.query(),
        if full_scale { "scale=full&" } else { "" }
    );
    let prev = (page.page > 0).then(|| {
        format!(
            "/projects/{project_id}?{q}range={}&page={}",
            range.as_str(),
            page.page - 1
        )
    });
    let next = page.has_more.then(|| {
        format!(
            "/projects/{project_id}?{q}range={}&page={}",
            range.as_str(),
            page.page + 1
        )
    });
    let shown = page.scans.len() as i64;
    view! {
        <section class="card" aria-labelledby="scans-heading">
            <div class="card-head">
                <h2 id="scans-heading">"Scans"</h2>
                <a class="small" href=format!("/projects/{project_id}/history.csv") download
                    data-testid="history-download">"Download the whole history (CSV)"</a>
            </div>
            <div class="table-wrap" tabindex="0">
                <table class="scans">
                    <thead>
                        <tr>
                            <th scope="col">"Scan"</th>
                            <th scope="col">"Scanned"</th>
                            <th scope="col">"Branch"</th>
                            <th scope="col">"Commit"</th>
                            <th scope="col">"Score"</th>
                            <th scope="col">"Change"</th>
                            <th scope="col">"Gate"</th>
                            <th scope="col">"Checks"</th>
                            <th scope="col">"Source"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {page
                            .scans
                            .into_iter()
                            .map(|s| view! {
                                <tr>
                                    <th scope="row"><a href=format!("/projects/{project_id}/scans/{}", s.scan_id)>{s.scan_id.to_string()}</a></th>
                                    <td data-label="Scanned">{super::utc_time(s.scanned_at.clone())}</td>
                                    <td data-label="Branch">{branch_cell(&s)}</td>
                                    <td data-label="Commit">{commit_link(&s)}</td>
                                    <td data-label="Score" class="score">{fmt_score(s.score)}</td>
                                    <td data-label="Change">{let (d, against) = s.headline_change(); change_badge(d, against)}</td>
                                    <td data-label="Gate" title=s.gate.reasons.join("\n")>{gate_badge(s.gate.status)}</td>
                                    // What failed, as the scan page says it: a push also lists its passing and
                                    // skipped checks, so its number of findings is no count of problems.
                                    <td data-label="Checks">{format!("{} failed · {} passed", s.failed, s.passed)}</td>
                                    <td data-label="Source">{s.state_source}</td>
                                </tr>
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
            <nav class="pager" aria-label="Scan pages">
                {prev.map(|href| view! { <a href=href rel="prev">"← Newer"</a> })}
                <span class="muted" data-testid="scans-pager">{pager_text(page.page, shown, page.total)}</span>
                {next.map(|href| view! { <a href=href rel="next">"Older →"</a> })}
            </nav>
        </section>
    }
}

/// Where a page of scans is in the line's history: "Scans 51–100 of 230 · page 2 of 5".
pub fn pager_text(page: i64, shown: i64, total: i64) -> String {
    use crate::model::SCANS_PAGE_SIZE;
    if shown == 0 {
        return "No scans".to_owned();
    }
    let first = page * SCANS_PAGE_SIZE + 1;
    let total = total.max(first + shown - 1);
    let pages = (total + SCANS_PAGE_SIZE - 1) / SCANS_PAGE_SIZE;
    format!(
        "Scans {first}–{} of {total} · page {} of {pages}",
        first + shown - 1,
        page + 1
    )
}

/// The scan's branch, and its pull request when it was one.
fn branch_cell(s: &ScanSummary) -> impl IntoView {
    view! {
        {s.branch.clone().map(|b| view! { <span class="branch-name">{b}</span> })}
        {s.pull_request.map(|n| view! { " " <span class="tag">{format!("#{n}")}</span> })}
    }
}

/// The short commit, linked to the repository when its address is known.
pub fn commit_link(s: &ScanSummary) -> impl IntoView {
    let short = s.short_commit().map(str::to_owned);
    match (short, s.commit_url.clone()) {
        (Some(short), Some(url)) => view! {
            <a class="commit" href=url rel="noopener noreferrer" title=s.commit.clone()>{short}</a>
        }
        .into_any(),
        (Some(short), None) => {
            view! { <code class="commit" title=s.commit.clone()>{short}</code> }.into_any()
        }
        _ => ().into_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::pager_text;

    #[test]
    fn the_scans_pager_says_where_the_page_is_in_the_history() {
        assert_eq!(pager_text(0, 20, 45), "Scans 1–20 of 45 · page 1 of 3");
        assert_eq!(pager_text(1, 20, 230), "Scans 21–40 of 230 · page 2 of 12");
        assert_eq!(
            pager_text(11, 10, 230),
            "Scans 221–230 of 230 · page 12 of 12"
        );
        // A count that lags a push never says fewer than the page shows.
        assert_eq!(pager_text(0, 3, 2), "Scans 1–3 of 3 · page 1 of 1");
        assert_eq!(pager_text(0, 0, 0), "No scans");
    }
}
