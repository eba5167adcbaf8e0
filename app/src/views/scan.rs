use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use super::{change_badge, error_view, fmt_score, gate_badge, loading, severity_chips};
use crate::api::scan::{load_scan, scan_diff, scan_findings, scan_triaged};
use crate::error::DashboardError;
use crate::model::{
    DiffView, FindingQuery, FindingView, FindingsPage, ScanView, Severity, TriagedView,
};

const STATUSES: [&str; 5] = ["FAIL", "WARN", "ERROR", "PASS", "SKIP"];

#[component]
pub fn ScanPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let ids = move || {
        let p = params.read();
        (
            p.get("project_id").unwrap_or_default(),
            p.get("scan_id").unwrap_or_default(),
        )
    };
    let finding_query = move || {
        let q = query.read();
        FindingQuery {
            severity: q.get("severity"),
            status: q.get("status"),
            framework: q.get("framework"),
            text: q.get("q"),
            page: q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0),
            sort: q.get("sort"),
            dir: q.get("dir"),
            after: q.get("after").and_then(|p| p.parse().ok()),
            before: q.get("before").and_then(|p| p.parse().ok()),
        }
    };
    let base = move || query.read().get("base").filter(|b| !b.is_empty());
    let view_choice = move || query.read().get("view");
    let scan = Resource::new(ids, |(project, scan)| load_scan(project, scan));
    let findings = Resource::new(
        move || (ids(), finding_query()),
        |((project, scan), q)| scan_findings(project, scan, q),
    );
    let diff = Resource::new(
        move || (ids(), base()),
        |((project, scan), base)| scan_diff(project, scan, base),
    );
    let triaged = Resource::new(ids, |(project, scan)| scan_triaged(project, scan));
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match scan.await {
                    Ok(view) => scan_head(view).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                let q = finding_query();
                let frameworks = scan.await.map(|s| s.scan.frameworks).unwrap_or_default();
                let new = diff.await.ok().filter(|d| d.has_previous);
                let set_aside = triaged.await.unwrap_or_default();
                let (project, scan_id) = ids();
                let notice = triage_notice(&query.read());
                match findings.await {
                    Ok(page) => view! {
                        {notice}
                        {findings_section(&project, &scan_id, page, q, frameworks, new, set_aside, view_choice())}
                    }.into_any(),
                    Err(DashboardError::Gone(why)) => findings_removed(why).into_any(),
                    Err(_) => ().into_any(),
                }
            })}
        </Suspense>
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                let project = ids().0;
                match diff.await {
                    Ok(d) => diff_section(&project, d).into_any(),
                    Err(_) => ().into_any(),
                }
            })}
        </Suspense>
    }
}

fn scan_head(v: ScanView) -> impl IntoView {
    let s = v.scan;
    let (delta, against) = s.headline_change();
    let change = change_badge(delta, against);
    // A pull request's scan is read in its pull request's context: its title, its crumbs.
    let title = match s.pull_request {
        Some(n) => format!("{} · #{n} · {} · Tidemark", s.scan_id, v.project_label),
        None => format!("{} · {} · Tidemark", s.scan_id, v.project_label),
    };
    let pr_crumb = s.pull_request.map(|n| view! {
        <a href=format!("/projects/{}?pr={n}", v.project_id)>{format!("Pull request #{n}")}</a> " / "
    });
    view! {
        <Title text=title/>
        <nav class="crumbs" aria-label="Breadcrumb">
            <a href="/projects">"Projects"</a> " / "
            <a href=format!("/projects/{}", v.project_id)>{v.project_label.clone()}</a> " / "
            {pr_crumb}
        </nav>
        <section class="page-head">
            <h1>{s.scan_id.to_string()}</h1>
            <p class="headline">
                <span class="big-score" data-testid="scan-score">{fmt_score(s.score)}</span>
                <span data-testid="scan-change">{change}</span>
            </p>
            // A thinned scan has no findings to download (its files answer 410).
            {(!v.findings_removed).then(|| downloads(&v.project_id, &s.scan_id))}
        </section>
        <section class="card" aria-label="Scan details">
            <dl class="meta">
                <dt>"Cloud"</dt><dd>{s.cloud.clone()}</dd>
                <dt>"Account"</dt><dd>{s.cloud_account_id.clone()}</dd>
                <dt>"Frameworks"</dt><dd>{s.frameworks.join(", ")}</dd>
                <dt>"State source"</dt><dd>{s.state_source.clone()}</dd>
                {s.branch.clone().map(|b| view! {
                    <dt>"Branch"</dt>
                    <dd data-testid="scan-branch">
                        <a class="branch-name" href=format!("/projects/{}?branch={}", v.project_id, crate::links::query_value(&b))>{b.clone()}</a>
                    </dd>
                })}
                {s.pull_request.map(|n| view! {
                    <dt>"Pull request"</dt>
                    <dd data-testid="scan-pull-request"><a href=format!("/projects/{}?pr={n}", v.project_id)>{format!("#{n}")}</a>
                        {s.base.clone().map(|b| match (b.scan_id, b.new_findings, b.fixed_findings) {
                            (Some(_), Some(new), Some(fixed)) => format!(" · against {}: {new} new, {fixed} fixed", b.branch),
                            _ => format!(" · {} had no scan yet: judged on its own", b.branch),
                        })}
                    </dd>
                })}
                {s.commit.is_some().then(|| view! {
                    <dt>"Commit"</dt><dd>{super::project::commit_link(&s)}</dd>
                })}
                {s.pushed_by.clone().map(|p| view! {
                    <dt>"Pushed by"</dt><dd data-testid="scan-pushed-by">{pushed_by(p)}</dd>
                })}
                <dt>"Scanned at"</dt><dd data-testid="scan-time">{super::utc_time(s.scanned_at.clone())}</dd>
                <dt>"Checks"</dt>
                <dd data-testid="pass-fail">{format!("{} passed · {} failed", s.passed, s.failed)}</dd>
                <dt>"Severity"</dt><dd data-testid="severity-counts">{severity_chips(s.severities)}</dd>
                <dt>"Quality gate"</dt>
                <dd data-testid="scan-gate">
                    {gate_badge(s.gate.status)}
                    {(!s.gate.reasons.is_empty()).then(|| view! {
                        <ul class="gate-reasons">
                            {s.gate.reasons.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}
                        </ul>
                    })}
                </dd>
                {(!s.drifted.is_empty()).then(|| view! {
                    <dt>"Drift"</dt>
                    <dd data-testid="scan-drift">
                        "Passed in the previous scan, failing now:"
                        <ul class="gate-reasons">
                            {s.drifted.iter().map(|d| view! {
                                <li><strong>{d.framework.clone()}</strong>": "{d.requirements.join(", ")}</li>
                            }).collect_view()}
                        </ul>
                    </dd>
                })}
            </dl>
            {v.previous_scan_id.map(|prev| view! {
                <p class="muted">"Previous scan: "
                    <a href=format!("/projects/{}/scans/{prev}", v.project_id)>{prev.to_string()}</a></p>
            })}
        </section>
    }
}

/// A filter's drop-down: each option's value, and the text it shows (with its count).
fn select(
    name: &'static str,
    label: &'static str,
    options: Vec<(String, String)>,
    current: Option<String>,
) -> impl IntoView {
    view! {
        <label for=format!("filter-{name}")>
            {label}
            <select name=name id=format!("filter-{name}")>
                <option value="">"All"</option>
                {options
                    .into_iter()
                    .map(|(value, text)| {
                        let selected = current.as_deref() == Some(value.as_str());
                        view! { <option value=value selected=selected>{text}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
}

/// Every finding of the scan as a file: SARIF 2.1.0 for code-scanning tools, CSV for
/// spreadsheets (the same files as `/v1/projects/…/findings.*`).
fn downloads(project_id: &str, scan_id: &str) -> impl IntoView {
    let base = format!("/projects/{project_id}/scans/{scan_id}/findings");
    let report = format!("/projects/{project_id}/scans/{scan_id}/report");
    view! {
        <p class="downloads small" data-testid="scan-downloads">
            "Download all findings: "
            <a href=format!("{base}.sarif") download>"SARIF"</a>
            " · "
            <a href=format!("{base}.csv") download>"CSV"</a>
        </p>
        <p class="downloads small" data-testid="scan-report">
            "Compliance report: "
            <a href=format!("{report}.html") target="_blank" data-testid="report-html">"printable page"</a>
            " · "
            <a href=format!("{report}.csv") download>"compliance CSV"</a>
            " · "
            <a href=format!("{report}.json") download data-testid="report-json">"signed JSON"</a>
        </p>
    }
}

/// The query string for page `page` of `q` (filters and order kept across pages), starting
/// next to a finding of the page beside it when `anchor` names one (`after` or `before`, and
/// its place in the scanner's order).
fn findings_href(q: &FindingQuery, page: i64, anchor: Option<(&str, i64)>) -> String {
    let mut parts = vec!["view=all".to_owned(), format!("page={page}")];
    if let Some((side, ordinal)) = anchor.filter(|_| page > 0) {
        parts.push(format!("{side}={ordinal}"));
    }
    for (k, v) in [
        ("severity", &q.severity),
        ("status", &q.status),
        ("framework", &q.framework),
        ("q", &q.text),
        ("sort", &q.sort),
        ("dir", &q.dir),
    ] {
        if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
            parts.push(format!("{k}={}", crate::links::query_value(v)));
        }
    }
    format!("?{}", parts.join("&"))
}

/// The findings' order as the page shows it: the column and whether it is reversed.
fn current_sort(q: &FindingQuery) -> (&'static str, bool) {
    // What the server sorts by: an unknown column is the default.
    let column = ["status", "rule", "resource", "scanner"]
        .into_iter()
        .find(|c| q.sort.as_deref() == Some(*c))
        .unwrap_or("severity");
    (column, q.dir.as_deref() == Some("desc"))
}

/// Whether the findings card opens on the scan's new findings: when asked (`?view=new`), or
/// by default when the scan has some and no filter or page is asked for.
fn shows_new(choice: Option<&str>, q: &FindingQuery, new: Option<&DiffView>) -> bool {
    let filtered = q.severity.is_some()
        || q.status.is_some()
        || q.framework.is_some()
        || q.text.is_some()
        || q.sort.is_some()
        || q.page > 0;
    match choice {
        Some("new") => new.is_some(),
        Some(_) => false,
        None => !filtered && new.is_some_and(|d| d.new_count > 0),
    }
}

/// A tab's count: grey when nothing is in it.
/// In place of a thinned scan's findings: why they are gone, and where findings are.
fn findings_removed(why: String) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="findings-heading" data-testid="findings-removed">
            <h2 id="findings-heading">"Findings"</h2>
            <p class="notice" role="status">{why}</p>
        </section>
    }
}

fn tab_count(n: i64) -> impl IntoView {
    view! { <span class=if n == 0 { "count zero" } else { "count" }>{format!("({n})")}</span> }
}

type Options = Vec<(String, String)>;

/// The filters' choices, each saying how many of the scan's findings it holds (within the
/// other filters).
fn filter_options(
    page: &FindingsPage,
    q: &FindingQuery,
    frameworks: Vec<String>,
) -> (Options, Options, Options) {
    let severity_options: Options = Severity::ALL
        .iter()
        .map(|s| {
            let n = page.count(
                Some(s.as_str()),
                q.status.as_deref(),
                q.framework.as_deref(),
            );
            (s.as_str().to_owned(), format!("{} ({n})", s.as_str()))
        })
        .collect();
    let status_options: Options = STATUSES
        .iter()
        .map(|st| {
            let n = page.count(q.severity.as_deref(), Some(st), q.framework.as_deref());
            (st.to_string(), format!("{st} ({n})"))
        })
        .collect();
    let framework_options: Options = frameworks
        .into_iter()
        .map(|f| {
            let n = page.count(q.severity.as_deref(), q.status.as_deref(), Some(&f));
            let label = format!("{f} ({n})");
            (f, label)
        })
        .collect();
    (severity_options, status_options, framework_options)
}

#[allow(clippy::too_many_arguments)]
fn findings_section(
    project_id: &str,
    scan_id: &str,
    page: FindingsPage,
    q: FindingQuery,
    frameworks: Vec<String>,
    new: Option<DiffView>,
    set_aside: TriagedView,
    choice: Option<String>,
) -> impl IntoView {
    let pages = (page.total + page.page_size - 1) / page.page_size;
    let prev = (page.page > 0)
        .then(|| findings_href(&q, page.page - 1, page.first.map(|o| ("before", o))));
    let next = (page.page + 1 < pages)
        .then(|| findings_href(&q, page.page + 1, page.last.map(|o| ("after", o))));
    let showing_triaged = choice.as_deref() == Some("triaged");
    let showing_new = !showing_triaged && shows_new(choice.as_deref(), &q, new.as_ref());
    let filtered =
        q.severity.is_some() || q.status.is_some() || q.framework.is_some() || q.text.is_some();
    let (severity_options, status_options, framework_options) =
        filter_options(&page, &q, frameworks);
    let current = |on: bool| if on { "page" } else { "false" };
    let tabs = view! {
        <nav class="tabs" aria-label="Which findings" data-testid="findings-tabs">
            {new.as_ref().map(|d| view! {
                <a href="?view=new" aria-current=current(showing_new) data-testid="tab-new">
                    {match (&d.base_scan_id, &d.pr_base) {
                        (Some(id), _) => format!("New against {id} "),
                        (None, Some((branch, _))) => format!("New against {branch} "),
                        (None, None) => "New since the previous scan ".to_owned(),
                    }}
                    {tab_count(d.new_count)}
                </a>
            })}
            <a href="?view=all" aria-current=current(!showing_new && !showing_triaged) data-testid="tab-all">
                "All " {tab_count(page.total)}
            </a>
            <a href="?view=triaged" aria-current=current(showing_triaged) data-testid="tab-triaged">
                "Triaged " {tab_count(set_aside.total)}
            </a>
        </nav>
    };
    let body = if showing_triaged {
        triaged_table(project_id, set_aside).into_any()
    } else if showing_new {
        let d = new.unwrap_or_default();
        let triageable = d.new.iter().any(|f| f.tracked.is_some());
        let more = (d.new_count > d.new.len() as i64).then(|| view! {
            <p class="muted small">{format!("The first {} of {} new findings.", d.new.len(), d.new_count)}</p>
        });
        view! {
            {finding_table(project_id, d.new, "new-findings-table", None, true)}
            {more}
            {triageable.then(|| bulk_triage_form(project_id, scan_id, "new"))}
        }
        .into_any()
    } else {
        let triageable = page.findings.iter().any(|f| f.tracked.is_some());
        view! {
            <form method="get" class="filters" role="search" aria-label="Filter findings" data-auto-apply>
                <input type="hidden" name="view" value="all"/>
                {select("severity", "Severity", severity_options, q.severity.clone())}
                {select("status", "Status", status_options, q.status.clone())}
                {select("framework", "Framework", framework_options, q.framework.clone())}
                <label for="filter-q">
                    "Search"
                    <input type="search" name="q" id="filter-q" value=q.text.clone().unwrap_or_default()
                        placeholder="rule, resource or message"/>
                </label>
                {q.sort.clone().map(|s| view! { <input type="hidden" name="sort" value=s/> })}
                {q.dir.clone().map(|d| view! { <input type="hidden" name="dir" value=d/> })}
                <button type="submit" class="primary">"Apply"</button>
            </form>
            <p class="muted" data-testid="finding-total">
                {format!("{} finding{}", page.total, if page.total == 1 { "" } else { "s" })}
            </p>
            {(page.total == 0 && filtered).then(|| view! {
                <p class="notice" role="status" data-testid="findings-empty">
                    "No finding matches these filters. "
                    <a href="?view=all">"Clear the filters"</a>
                </p>
            })}
            {finding_table(project_id, page.findings, "findings-table", Some(&q), true)}
            <nav class="pager" aria-label="Finding pages">
                {prev.map(|href| view! { <a href=href rel="prev">"← Previous"</a> })}
                <span class="muted">{format!("Page {} of {}", page.page + 1, pages.max(1))}</span>
                {next.map(|href| view! { <a href=href rel="next">"Next →"</a> })}
            </nav>
            {triageable.then(|| bulk_triage_form(project_id, scan_id, "all"))}
        }
        .into_any()
    };
    view! {
        <section class="card" aria-labelledby="findings-heading">
            <h2 id="findings-heading">"Findings"</h2>
            {tabs}
            {body}
        </section>
    }
}

/// The branch's findings set aside, with why and by whom.
fn triaged_table(project_id: &str, v: TriagedView) -> impl IntoView {
    if v.rows.is_empty() {
        return view! {
            <p class="muted" data-testid="triaged-none">
                "Nothing is triaged on this branch: open a finding to accept it, mark it a false positive or won't fix."
            </p>
        }
        .into_any();
    }
    view! {
        <div class="table-wrap" tabindex="0">
            <table class="findings" data-testid="triaged-table">
                <thead>
                    <tr>
                        <th scope="col">"Severity"</th>
                        <th scope="col">"Rule"</th>
                        <th scope="col">"Resource"</th>
                        <th scope="col">"Triage"</th>
                        <th scope="col">"Reason"</th>
                    </tr>
                </thead>
                <tbody>
                    {v.rows.into_iter().map(|r| view! {
                        <tr>
                            <td data-label="Severity"><span class=format!("sev {}", r.severity)>{r.severity.clone()}</span></td>
                            <td data-label="Rule"><a href=super::finding::finding_href(project_id, &r.finding_id)><code>{r.rule_id}</code></a></td>
                            <td data-label="Resource"><code>{r.resource}</code></td>
                            <td data-label="Triage">{r.triage}<div class="muted small">{r.by}</div></td>
                            <td data-label="Reason">{r.reason}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A column heading; with `sorting`, a link that sorts by it (again: reversed).
fn heading(
    label: &'static str,
    key: &'static str,
    sorting: Option<&FindingQuery>,
) -> impl IntoView {
    let Some(q) = sorting else {
        return view! { <th scope="col">{label}</th> }.into_any();
    };
    let (column, reversed) = current_sort(q);
    let active = column == key;
    let aria_sort = match (active, reversed) {
        (false, _) => "none",
        (true, false) => "ascending",
        (true, true) => "descending",
    };
    let target = FindingQuery {
        sort: Some(key.to_owned()),
        dir: (active && !reversed).then(|| "desc".to_owned()),
        page: 0,
        after: None,
        before: None,
        ..q.clone()
    };
    let arrow = match (active, reversed) {
        (false, _) => "",
        (true, false) => " ↑",
        (true, true) => " ↓",
    };
    view! {
        <th scope="col" aria-sort=aria_sort>
            <a class="sort" href=findings_href(&target, 0, None) data-testid=format!("sort-{key}")>{label}{arrow}</a>
        </th>
    }
    .into_any()
}

/// The form the scan page's ticked findings are triaged with (each row's box names it with
/// `form=`, so the table need not sit inside the form).
const BULK_FORM: &str = "bulk-triage";

fn finding_table(
    project_id: &str,
    rows: Vec<FindingView>,
    testid: &'static str,
    sorting: Option<&FindingQuery>,
    selectable: bool,
) -> impl IntoView {
    // Only a tracked (open) finding can be triaged; a table with none has no boxes.
    let selectable = selectable && rows.iter().any(|f| f.tracked.is_some());
    view! {
        <div class="table-wrap" tabindex="0">
            <table class="findings" data-testid=testid>
                <thead>
                    <tr>
                        {selectable.then(|| view! {
                            <th scope="col" class="select">
                                <input type="checkbox" data-select-all=BULK_FORM
                                    aria-label="Select every finding on this page" data-testid="select-all"/>
                            </th>
                        })}
                        {heading("Severity", "severity", sorting)}
                        {heading("Status", "status", sorting)}
                        {heading("Rule", "rule", sorting)}
                        {heading("Resource", "resource", sorting)}
                        <th scope="col">"First seen"</th>
                        <th scope="col">"Message"</th>
                    </tr>
                </thead>
                <tbody>
                    {rows
                        .into_iter()
                        .map(|f| {
                            let tag = f.tracked.clone();
                            let rule = match &tag {
                                Some(t) => view! {
                                    <a href=super::finding::finding_href(project_id, &t.id)><code>{f.rule_id.clone()}</code></a>
                                }.into_any(),
                                None => view! { <code>{f.rule_id.clone()}</code> }.into_any(),
                            };
                            let is_new = tag.as_ref().is_some_and(|t| t.new_here);
                            let triage = tag.as_ref().and_then(|t| t.triage.clone());
                            let age = tag.map(|t| view! { <span title=t.first_seen_utc>{t.first_seen}</span> });
                            let select = selectable.then(|| {
                                let label = format!("Select {} on {}", f.rule_id, f.resource);
                                view! {
                                    <td class="select" data-label="Select">
                                        {f.tracked.as_ref().map(|t| view! {
                                            <input type="checkbox" name="finding" value=t.id.to_string()
                                                form=BULK_FORM aria-label=label.clone()/>
                                        })}
                                    </td>
                                }
                            });
                            view! {
                                <tr data-new=is_new.then_some("true")>
                                    {select}
                                    <td data-label="Severity"><span class=format!("sev {}", f.severity)>{f.severity.clone()}</span></td>
                                    <td data-label="Status">
                                        {f.status}
                                        {is_new.then(|| view! { " " <span class="chip new">"New"</span> })}
                                        {triage.map(|label| view! { " " <span class="chip triaged">{label}</span> })}
                                    </td>
                                    <td data-label="Rule">{rule}</td>
                                    <td data-label="Resource"><code>{f.resource}</code></td>
                                    <td data-label="First seen" class="small">{age}</td>
                                    <td data-label="Message">{f.message}<div class="muted small">{f.remediation}</div></td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// Triage the findings ticked above, as one: the same choices as a finding's own page.
fn bulk_triage_form(project_id: &str, scan_id: &str, view: &'static str) -> impl IntoView {
    view! {
        <form method="post" action=format!("/projects/{project_id}/findings/triage") id=BULK_FORM
            class="triage-form bulk" data-testid="bulk-triage" aria-labelledby="bulk-heading" data-bulk="">
            <h3 id="bulk-heading">"Triage the selected findings"</h3>
            <p class="muted small">"Tick findings above (or every one on this page), then set them aside together. "
                "Members set aside what nobody has; replacing a triage that holds is an admin's."</p>
            <input type="hidden" name="scan_id" value=scan_id.to_owned()/>
            <input type="hidden" name="view" value=view/>
            {super::triage_fields("bulk", None, true)}
            <p class="muted small" data-selected-count="" data-testid="bulk-count" aria-live="polite"></p>
            <button type="submit" class="primary">"Triage selected"</button>
        </form>
    }
}

/// What the last triage of selected findings did (the form's answer, `?triage=…`).
fn triage_notice(q: &leptos_router::params::ParamsMap) -> Option<impl IntoView> {
    let number = |name: &str| q.get(name).and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
    let (done, skipped) = (number("count"), number("skipped"));
    let findings = |n: u32| {
        if n == 1 {
            "1 finding".to_owned()
        } else {
            format!("{n} findings")
        }
    };
    let (role, text) = match q.get("triage").as_deref() {
        Some("saved") => {
            let state = q
                .get("state")
                .as_deref()
                .and_then(tidemark_wire::findings::TriageState::parse)
                .map(|s| format!(" as {}", s.label().to_lowercase()))
                .unwrap_or_default();
            let mut text = format!(
                "Triaged {}{state}: each finding's page shows it in its life, with who and why.",
                findings(done)
            );
            if skipped > 0 {
                text.push_str(&format!(
                    " {} already triaged by someone else: only an admin can replace those.",
                    if skipped == 1 {
                        "1 was".to_owned()
                    } else {
                        format!("{skipped} were")
                    }
                ));
            }
            ("status", text)
        }
        Some("forbidden") => (
            "alert",
            format!(
                "Not saved: {} already triaged, and only an admin can replace a triage that holds.",
                if skipped == 1 {
                    "that finding is".to_owned()
                } else {
                    format!("those {skipped} findings are")
                }
            ),
        ),
        Some("none") => (
            "alert",
            "Nothing triaged: tick the findings to triage first.".to_owned(),
        ),
        Some("reason") => (
            "alert",
            "Not saved: say why (a reason of up to 1,000 characters).".to_owned(),
        ),
        Some("expiry") => (
            "alert",
            "Not saved: the expiry must be a date in the future.".to_owned(),
        ),
        Some("state") => (
            "alert",
            "Not saved: choose accepted risk, false positive or won't fix.".to_owned(),
        ),
        _ => return None,
    };
    match q.get("triage").as_deref() {
        Some("reason" | "expiry" | "state" | "none") => super::answer_with_status(422),
        Some("forbidden") => super::answer_with_status(403),
        _ => {}
    }
    Some(view! { <p class="notice" role=role data-testid="triage-notice">{text}</p> })
}

fn diff_section(project_id: &str, d: DiffView) -> impl IntoView {
    let heading = match (&d.base_scan_id, &d.pr_base) {
        (Some(base), _) => format!("Compared with {base}"),
        (None, Some((branch, scan))) => {
            format!("Compared with {branch} ({scan}), the pull request's base")
        }
        (None, None) => "Compared with the previous scan".to_owned(),
    };
    let default_option = match &d.pr_base {
        Some((branch, _)) => format!("The base branch's scan ({branch})"),
        None => "The previous scan".to_owned(),
    };
    let chooser = (!d.choices.is_empty()).then(|| {
        let current = d.base_scan_id.clone();
        view! {
            <form method="get" class="filters" aria-label="Choose the scan to compare with">
                <label for="diff-base">
                    "Compare with"
                    <select name="base" id="diff-base">
                        <option value="">{default_option}</option>
                        {d.choices.iter().map(|id| {
                            let selected = current.as_deref() == Some(id.as_str());
                            view! { <option value=id.to_string() selected=selected>{id.to_string()}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <button type="submit" class="secondary">"Compare"</button>
            </form>
        }
    });
    view! {
        <section class="card" aria-labelledby="diff-heading" data-testid="diff">
            <h2 id="diff-heading">{heading}</h2>
            {chooser}
            {if d.has_previous {
                view! {
                    <p class="diff-summary">
                        <span class=if d.new_count == 0 { "delta zero" } else { "delta down" } data-testid="diff-new">{format!("{} new", d.new_count)}</span>
                        " · "
                        <span class=if d.fixed_count == 0 { "delta zero" } else { "delta up" } data-testid="diff-fixed">{format!("{} fixed", d.fixed_count)}</span>
                        " · "
                        <span data-testid="diff-unchanged">{format!("{} unchanged", d.unchanged_count)}</span>
                    </p>
                    <p class="muted small">
                        "Open findings (FAIL, WARN, ERROR), matched by rule and resource."
                    </p>
                    {(!d.new.is_empty()).then(|| view! { <h3>"New"</h3> {finding_table(project_id, d.new, "diff-new-table", None, false)} })}
                    {(!d.fixed.is_empty()).then(|| view! { <h3>"Fixed"</h3> {finding_table(project_id, d.fixed, "diff-fixed-table", None, false)} })}
                }
                .into_any()
            } else {
                view! { <p class="muted">"This is the project's first scan."</p> }.into_any()
            }}
        </section>
    }
}

/// An API key by its prefix and machine; a keyless CI push by its identity, linked to the run.
fn pushed_by(p: tidemark_wire::PushedBy) -> impl IntoView {
    match p {
        key @ tidemark_wire::PushedBy::ApiKey { .. } => {
            view! { <span>{key.describe()}</span> }.into_any()
        }
        tidemark_wire::PushedBy::Ci(id) => {
            let provider = id.provider_name();
            let detail = id.details();
            let run = id.run_id.clone().map(|run| match id.run_url.clone() {
                Some(url) => {
                    view! { " · " <a href=url rel="noopener noreferrer">{format!("run {run}")}</a> }
                        .into_any()
                }
                None => view! { {format!(" · run {run}")} }.into_any(),
            });
            view! {
                <span class="keyless">{format!("Keyless CI · {provider} {}", id.repository)}</span>
                {(!detail.is_empty()).then(|| format!(" · {}", detail.join(" · ")))}
                {run}
            }
            .into_any()
        }
    }
}
