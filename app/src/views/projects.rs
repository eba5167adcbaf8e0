use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{delta_badge, error_view, fmt_score, loading};
use crate::api::projects::{load_glance, projects_page};
use crate::model::{Paging, ProjectCard, ProjectSort, ProjectsGlance, ProjectsView};

/// The page's order, name filter and page, from its URL (`?sort=score&q=api&page=2`).
#[derive(Debug, Clone, Default, PartialEq)]
struct Arrangement {
    sort: ProjectSort,
    filter: String,
    page: u32,
}

impl Arrangement {
    /// This arrangement's URL at page `page`.
    fn href(&self, page: u32) -> String {
        let mut query = Vec::new();
        if self.sort != ProjectSort::default() {
            query.push(format!("sort={}", self.sort.as_str()));
        }
        if !self.filter.is_empty() {
            query.push(format!("q={}", crate::links::query_value(&self.filter)));
        }
        if page > 1 {
            query.push(format!("page={page}"));
        }
        match query.is_empty() {
            true => "/projects".to_owned(),
            false => format!("/projects?{}", query.join("&")),
        }
    }
}

#[component]
pub fn ProjectsPage() -> impl IntoView {
    let query = use_query_map();
    let arrangement = move || {
        let q = query.read();
        Arrangement {
            sort: ProjectSort::parse(&q.get("sort").unwrap_or_default()),
            filter: q.get("q").unwrap_or_default().chars().take(200).collect(),
            page: q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1),
        }
    };
    let data = Resource::new(arrangement, |a| {
        projects_page(a.sort.as_str().to_owned(), a.filter, a.page)
    });
    let glance = Resource::new(arrangement, |a| {
        load_glance(a.sort.as_str().to_owned(), a.filter, a.page)
    });
    let rollup = Resource::new(|| (), |_| crate::api::posture::load_rollup());
    view! {
        <Title text="Projects · Tidemark"/>
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                let a = arrangement();
                // The glance is extra: the list shows without it if it fails.
                let glance = glance.await.unwrap_or_default();
                let rollup = rollup.await.unwrap_or_default();
                match data.await {
                    Ok(view) => projects(view, glance, rollup, a).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

/// Sort and name filter: an ordinary GET form, so it works before (and without) the WASM.
fn arrange_form(a: &Arrangement) -> impl IntoView {
    view! {
        <form method="get" class="filters" role="search" aria-label="Sort and filter projects">
            <label for="projects-q">
                "Name"
                <input type="search" name="q" id="projects-q" value=a.filter.clone()
                    placeholder="part of a project's name"/>
            </label>
            <label for="projects-sort">
                "Sort by"
                <select name="sort" id="projects-sort">
                    {ProjectSort::ALL.into_iter().map(|s| view! {
                        <option value=s.as_str() selected=s == a.sort>{s.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit" class="primary">"Apply"</button>
        </form>
    }
}

fn projects(
    v: ProjectsView,
    g: ProjectsGlance,
    rollup: crate::model::PostureRollup,
    a: Arrangement,
) -> impl IntoView {
    let usage = match v.cap {
        Some(cap) => format!("{} of {} projects", v.active, cap),
        None => format!(
            "{} (no limit)",
            super::count_of(v.active as i64, "project", "projects")
        ),
    };
    let paging = v.paging.unwrap_or(Paging {
        page: 1,
        pages: 1,
        matching: v.projects.len() as u64,
        total: v.projects.len() as u64,
    });
    let any_project = paging.total > 0;
    // The server arranged the page: active projects first, then archived ones.
    let (archived, active): (Vec<ProjectCard>, Vec<ProjectCard>) =
        v.projects.into_iter().partition(|p| p.archived);
    let empty = active.is_empty() && archived.is_empty();
    let filtered = !a.filter.trim().is_empty();
    view! {
        <section class="page-head">
            <h1>"Projects"</h1>
            <p class="usage" data-testid="usage">{usage} " · " {v.tier} " plan"</p>
        </section>
        {any_project.then(|| overview_section(&g.overview))}
        {super::posture::rollup_section(rollup)}
        {any_project.then(|| arrange_form(&a))}
        {if !any_project {
            first_scan_help(&v.base_url).into_any()
        } else if empty && filtered {
            view! { <p class="muted" data-testid="no-match">"No project's name contains that."</p> }.into_any()
        } else if empty || active.is_empty() && paging.page == 1 {
            view! { <p class="muted">"No active projects."</p> }.into_any()
        } else if active.is_empty() {
            ().into_any()
        } else {
            project_table(active, &g, "Active projects").into_any()
        }}
        {(!archived.is_empty()).then(|| view! {
            <section class="archived" aria-labelledby="archived-heading">
                <h2 id="archived-heading">"Archived"</h2>
                <p class="muted">"History stays readable. Admins can unarchive in Settings when a slot is free."</p>
                {project_table(archived, &g, "Archived projects")}
            </section>
        })}
        {(paging.pages > 1).then(|| pager(&a, paging))}
    }
}

/// Links between the pages of the list, keeping its order and filter: an ordinary link each,
/// so paging works before (and without) the WASM.
fn pager(a: &Arrangement, p: Paging) -> impl IntoView {
    let first = (p.page as u64 - 1) * crate::model::PROJECTS_PER_PAGE as u64 + 1;
    let last = (first + crate::model::PROJECTS_PER_PAGE as u64 - 1).min(p.matching);
    let link = |page: u32, text: &'static str, rel: &'static str| {
        view! { <a href=a.href(page) rel=rel data-testid=format!("page-{rel}")>{text}</a> }
    };
    view! {
        <nav class="pager" aria-label="Pages of projects" data-testid="projects-pager">
            {(p.page > 1).then(|| link(p.page - 1, "← Previous", "prev"))}
            <span data-testid="page-position">
                {format!("{first}–{last} of {} · page {} of {}", p.matching, p.page, p.pages)}
            </span>
            {(p.page < p.pages).then(|| link(p.page + 1, "Next →", "next"))}
        </nav>
    }
}

/// Open findings by severity, most severe first; zero counts grey.
fn open_counts(open: [i64; 4]) -> impl IntoView {
    let names = ["critical", "high", "medium", "low"];
    view! {
        <span class="open-counts">
            {names.iter().zip(open).map(|(name, n)| {
                let class = if n == 0 { format!("sev-count zero {name}") } else { format!("sev-count {name}") };
                view! { <span class=class title=format!("{n} open {name}")>{format!("{n} {}", &name[..1].to_uppercase())}</span> }
            }).collect_view()}
        </span>
    }
}

/// Failing projects beyond those the overview names.
fn more_failing(o: &crate::model::AccountOverview) -> Option<u64> {
    o.failing_total
        .checked_sub(o.failing.len() as u64)
        .filter(|n| *n > 0)
}

/// Above the list: which projects fail their gate and why, the oldest open criticals, and
/// open findings by severity over the last 90 days.
fn overview_section(o: &crate::model::AccountOverview) -> impl IntoView {
    let failing = if o.failing.is_empty() {
        view! { <p class="muted" data-testid="failing-none">"Every project passes its gate (or has none)."</p> }.into_any()
    } else {
        view! {
            <ul class="failing" data-testid="failing-projects">
                {o.failing.iter().map(|(id, label, reasons)| view! {
                    <li>
                        <a href=format!("/projects/{id}")>{label.clone()}</a>
                        <span class="muted small">{format!(": {}", reasons.join("; "))}</span>
                    </li>
                }).collect_view()}
                {more_failing(o).map(|n| view! {
                    <li data-testid="failing-more">
                        <a href="/projects?sort=score">{format!("and {n} more")}</a>
                        <span class="muted small">" (lowest score first)"</span>
                    </li>
                })}
            </ul>
        }
        .into_any()
    };
    let criticals = if o.oldest_criticals.is_empty() {
        view! { <p class="muted">"No open critical finding."</p> }.into_any()
    } else {
        view! {
            <ol class="oldest" data-testid="oldest-criticals">
                {o.oldest_criticals.iter().map(|f| view! {
                    <li>
                        <a href=super::finding::finding_href(&f.project_id, &f.finding_id)><code>{f.rule_id.clone()}</code></a>
                        " on " <code>{f.resource.clone()}</code>
                        <span class="muted small">{format!(" · {} · {}", f.label, f.age)}</span>
                    </li>
                }).collect_view()}
            </ol>
        }
        .into_any()
    };
    view! {
        <section class="overview" aria-label="The account at a glance" data-testid="overview">
            <div class="card">
                <h2>"Failing their gate"</h2>
                {failing}
            </div>
            <div class="card">
                <h2>"Oldest open criticals"</h2>
                {criticals}
            </div>
            {severity_days(&o.severity_days)}
        </section>
    }
}

/// Open findings per day: the bars with dates and counts on their axes, each day's values on
/// hover and focus (one Tab stop, arrow keys between days: `public/dashboard.js`), and the
/// same facts as a table.
fn severity_days(d: &crate::model::SeverityDays) -> impl IntoView {
    use crate::model::Severity;
    const W: u32 = 880;
    const H: u32 = 190;
    if d.svg.is_empty() {
        return view! {
            <section class="card severity-days" aria-labelledby="days-heading">
                <h2 id="days-heading">"Open findings, last 90 days"</h2>
                <p class="muted" data-testid="severity-days">{d.summary.clone()}</p>
            </section>
        }
        .into_any();
    }
    let newest = d
        .columns
        .last()
        .map(|c| c.label.clone())
        .unwrap_or_default();
    view! {
        <section class="card severity-days" aria-labelledby="days-heading">
            <h2 id="days-heading">"Open findings, last 90 days"</h2>
            <figure class="chart" data-testid="severity-days" aria-label=d.summary.clone()>
                <div class="chart-layer" inner_html=d.svg.clone()></div>
                <svg class="chart-overlay chart-axes" viewBox=format!("0 0 {W} {H}") aria-hidden="true">
                    {d.x_ticks.iter().enumerate().map(|(i, (x, label))| {
                        // The last date ends at the chart's edge rather than past it.
                        let last = i + 1 == d.x_ticks.len();
                        view! {
                            <text class="axis date" x=if last { W as i32 - 2 } else { *x } y=H - 6
                                text-anchor=if last { "end" } else { "middle" }>{label.clone()}</text>
                        }
                    }).collect_view()}
                    {d.y_ticks.iter().map(|(y, v)| view! {
                        <text class="axis count" x="38" y=y + 4 text-anchor="end">{*v}</text>
                    }).collect_view()}
                </svg>
                <svg class="chart-overlay" viewBox=format!("0 0 {W} {H}") role="group" aria-label="Days on the chart">
                    {d.columns.iter().map(|c| view! {
                        <g class="day" data-tip="" role="img" aria-label=c.label.clone() data-day=c.at>
                            <rect class="day-hit" x=c.x y="0" width=c.width height=H - 24></rect>
                            <rect class="dot" x=c.x y=c.top width=c.width height="1"></rect>
                        </g>
                    }).collect_view()}
                </svg>
                <figcaption>
                    <span class="legend small">
                        {Severity::ALL.iter().map(|&severity| view! {
                            <svg class="swatch" viewBox="0 0 1 1" aria-hidden="true">
                                <rect width="1" height="1" fill=crate::model::severity_colour(severity)></rect>
                            </svg>
                            {format!("{}  ", severity.as_str())}
                        }).collect_view()}
                    </span>
                    <span class="muted" data-testid="days-newest">{newest}</span>
                </figcaption>
            </figure>
            <details class="as-table">
                <summary>"The same as a table"</summary>
                <div class="table-wrap" tabindex="0">
                    <table data-testid="severity-days-table">
                        <caption class="visually-hidden">"Open findings per day: the first day, each day they changed, and today"</caption>
                        <thead><tr>
                            <th scope="col">"Day"</th><th scope="col">"Critical"</th><th scope="col">"High"</th>
                            <th scope="col">"Medium"</th><th scope="col">"Low"</th><th scope="col">"Open"</th>
                        </tr></thead>
                        <tbody>
                            {d.rows.iter().map(|(day, c)| view! {
                                <tr>
                                    <th scope="row">{day.clone()}</th>
                                    <td data-label="Critical">{c[0]}</td>
                                    <td data-label="High">{c[1]}</td>
                                    <td data-label="Medium">{c[2]}</td>
                                    <td data-label="Low">{c[3]}</td>
                                    <td data-label="Open">{c.iter().sum::<i64>()}</td>
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

fn project_table(
    projects: Vec<ProjectCard>,
    g: &ProjectsGlance,
    caption: &'static str,
) -> impl IntoView {
    let glance = |id: &str| {
        g.projects
            .iter()
            .find(|(p, _, _)| p == id)
            .map(|(_, gate, open)| (gate.status, *open))
            .unwrap_or((tidemark_wire::GateStatus::None, [0; 4]))
    };
    view! {
        <div class="table-wrap" tabindex="0">
            <table class="projects">
                <caption class="visually-hidden">{caption}</caption>
                <thead>
                    <tr>
                        <th scope="col">"Project"</th>
                        <th scope="col">"Score"</th>
                        <th scope="col">"Change"</th>
                        <th scope="col">"Gate"</th>
                        <th scope="col">"Open findings"</th>
                        <th scope="col">"Recent"</th>
                        <th scope="col">"Scans"</th>
                        <th scope="col">"Last scan"</th>
                    </tr>
                </thead>
                <tbody>
                    {projects
                        .into_iter()
                        .map(|p| {
                            let spark = p.sparkline_svg.clone();
                            let (gate, open) = glance(&p.id);
                            view! {
                                <tr data-testid="project-row">
                                    <th scope="row">
                                        <a href=format!("/projects/{}", p.id)>{p.label}</a>
                                        {p.stale_days.map(|d| view! {
                                            " " <span class="tag" data-testid="stale">{format!("stale: no scan for {d} days")}</span>
                                        })}
                                    </th>
                                    <td data-label="Score" class="score">{p.last_score.map(fmt_score).unwrap_or_else(|| "–".into())}</td>
                                    <td data-label="Change">{delta_badge(p.last_delta)}</td>
                                    <td data-label="Gate" data-testid="project-gate">{super::gate_badge(gate)}</td>
                                    <td data-label="Open findings" data-testid="project-open">{open_counts(open)}</td>
                                    <td data-label="Recent" class="spark" aria-hidden="true" inner_html=spark></td>
                                    <td data-label="Scans">{p.scan_count}</td>
                                    <td data-label="Last scan">{match p.last_scanned_at {
                                        Some(at) => super::utc_time(at).into_any(),
                                        None => "never".into_any(),
                                    }}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// The empty state teaches: the exact request that pushes a first scan.
pub fn first_scan_help(base_url: &str) -> impl IntoView {
    let curl = format!(
        "curl -sS -X POST \"{base_url}/v1/dashboard/push\" \\\n  -H 'Content-Type: application/json' \\\n  -H \"X-API-Key: $TIDEMARK_API_KEY\" \\\n  --data @scan-results.json"
    );
    let body = r#"{
  "project_label": "acme/payments-api",
  "cloud": "aws",
  "cloud_account_id": "123456789012",
  "frameworks": ["cis-aws-2.0"],
  "score": 82.5,
  "passed": 140,
  "failed": 2,
  "severity_counts": {"critical": 0, "high": 1, "medium": 1, "low": 0},
  "findings": [{"rule_id": "cis-aws-2.0-1.1", "resource": "aws_s3_bucket.logs",
                "status": "FAIL", "severity": "high",
                "message": "Bucket allows public read", "remediation": "Block public access"}],
  "state_source": "ci",
  "scanned_at": "2026-11-22T06:00:00Z"
}"#;
    view! {
        <section class="card empty" data-testid="empty-state">
            <h2>"No scans yet"</h2>
            <p>
                "Push your first scan from CI or a laptop. Get an API key with "
                <code>"tidemark activate"</code> " (or rotate one in " <a href="/settings">"Settings"</a>
                "), then send the scanner's results:"
            </p>
            <pre class="snippet" tabindex="0"><code>{curl}</code></pre>
            <p>"where " <code>"scan-results.json"</code> " looks like:"</p>
            <pre class="snippet" tabindex="0"><code>{body}</code></pre>
        </section>
    }
}
