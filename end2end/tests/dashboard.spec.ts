import { createHash, createHmac, createPublicKey, generateKeyPairSync, sign as cryptoSign, verify as cryptoVerify } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { type AddressInfo } from "node:net";
import { type APIRequestContext } from "@playwright/test";
import {
  expect, expectAccessible, expectNoSidewaysScroll, expectPhoneLayout, expectTablesFit, expectTablesReadOnPhones, test,
  signInWithOidc as signIn, watchCsp,
} from "./support";

// scripts/e2e.sh: an enterprise account capped at one active project, whose admin is ADMIN.
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";
const LICENSE_KEY = process.env.TIDEMARK_E2E_LICENSE_KEY ?? "";
const DAY = 86_400_000;
// The server's outbox directory (its .eml files), from scripts/e2e.sh.
const OUTBOX = process.env.TIDEMARK_E2E_OUTBOX ?? "";

test.describe.configure({ mode: "serial" });


async function activate(request: APIRequestContext): Promise<string> {
  const hash = createHash("sha256").update(LICENSE_KEY).digest("hex");
  const res = await request.post("/v1/license/activate", {
    headers: { "X-License-Key-Hash": hash },
    data: { machine: "playwright" },
  });
  expect(res.status()).toBe(201);
  return (await res.json()).api_key;
}

function finding(rule: string, resource: string, severity: string, status = "FAIL") {
  return { rule_id: rule, resource, status, severity, message: `${rule} on ${resource}`, remediation: "Fix it" };
}

function scan(label: string, daysAgo: number, score: number, findings: object[]) {
  const sev = (s: string) => findings.filter((f: any) => f.severity === s).length;
  return {
    project_label: label, cloud: "aws", cloud_account_id: "123456789012",
    frameworks: ["cis-aws-2.0", "soc2"], score, passed: 100, failed: findings.length,
    severity_counts: { critical: sev("critical"), high: sev("high"), medium: sev("medium"), low: sev("low") },
    findings, state_source: "ci",
    scanned_at: new Date(Date.now() - daysAgo * DAY).toISOString().replace(/\.\d+Z$/, "Z"),
  };
}

async function push(request: APIRequestContext, key: string, body: object) {
  return request.post("/v1/dashboard/push", { headers: { "X-API-Key": key }, data: body });
}

const older = [
  finding("cis-aws-2.0-1.1", "bucket.logs", "high"),
  finding("cis-aws-2.0-1.2", "bucket.data", "low"),
  finding("soc2-cc6.1", "role.admin", "medium", "WARN"),
];
const latest = [
  finding("cis-aws-2.0-1.1", "bucket.logs", "high"),
  finding("cis-aws-2.0-3.4", "vpc.main", "critical"),
  finding("soc2-cc7.2", "trail.main", "high", "ERROR"),
  finding("soc2-cc6.1", "role.admin", "medium", "PASS"),
];

let apiKey = "";
let projectUrl = "";

test("projects, the score chart and its ranges", async ({ page, request }) => {
  apiKey = await activate(request);
  const days = [40, 20, 10, 5, 2];
  for (const [i, d] of days.entries()) {
    const res = await push(request, apiKey, scan("e2e/web", d, 70 + i * 3, older));
    expect(res.status(), await res.text()).toBe(201);
    await new Promise((r) => setTimeout(r, 50));
  }
  const last = await push(request, apiKey, scan("e2e/web", 1, 64.5, latest));
  expect(last.status()).toBe(201);
  const pushed = await last.json();
  expect(pushed.score_delta).toBeCloseTo(-17.5);

  await signIn(page, ADMIN);
  // Signed in, the landing page goes straight to the projects.
  await page.goto("/");
  await expect(page).toHaveURL(/\/projects$/);
  const row = page.getByTestId("project-row").filter({ hasText: "e2e/web" });
  await expect(row).toContainText("64.5");
  await expect(row.locator(".delta.down")).toHaveText("▼ 17.5");
  await expect(page.getByTestId("usage")).toContainText("1 of 1 projects");
  // The account at a glance: each project's open findings, the oldest open criticals, and
  // open findings by severity over time (its text alternative says the latest day's).
  await expect(row.getByTestId("project-open")).toContainText("1 C");
  await expect(row.getByTestId("project-open")).toContainText("2 H");
  await expect(page.getByTestId("oldest-criticals")).toContainText("vpc.main");
  await expect(page.getByTestId("oldest-criticals")).toContainText("first seen yesterday");
  const perDay = page.getByTestId("severity-days");
  await expect(perDay).toHaveAttribute("aria-label", /today 1 critical, 2 high, 1 medium, 0 low/);
  // Its axes: dates under the bars, counts beside them; each day's values on hover and on
  // the keyboard (one Tab stop, arrows between days); and the same as a table.
  await expect(perDay.locator("text.axis.date")).not.toHaveCount(0);
  await expect(perDay.locator("text.axis.count").first()).toHaveText("0");
  const dayColumns = perDay.locator("g.day");
  await expect(dayColumns).toHaveCount(90);
  await dayColumns.last().hover();
  await expect(perDay.getByTestId("chart-float")).toContainText(/4 open\s*1 critical\s*2 high\s*1 medium\s*0 low/);
  await dayColumns.last().focus();
  await page.keyboard.press("ArrowLeft");
  await expect(dayColumns.nth(88)).toBeFocused();
  await expect(perDay.getByTestId("chart-float")).toBeVisible();
  await page.getByText("The same as a table").click();
  await expect(page.getByTestId("severity-days-table").locator("tbody tr").last()).toContainText(/1\s*2\s*1\s*0\s*4/);
  await expect(page.getByTestId("failing-none")).toBeVisible();
  await page.screenshot({ path: "test-results/projects.png", fullPage: true });
  // The name filter and the order live in the URL (an ordinary form).
  await page.getByRole("searchbox", { name: "Name" }).fill("nothing-like-it");
  await page.getByRole("combobox", { name: "Sort by" }).selectOption("score");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/q=nothing-like-it&sort=score/);
  await expect(page.getByTestId("no-match")).toBeVisible();
  await expect(page.getByRole("combobox", { name: "Sort by" })).toHaveValue("score");
  await page.getByRole("searchbox", { name: "Name" }).fill("WEB");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("project-row")).toHaveCount(1);

  await row.getByRole("link", { name: "e2e/web" }).click();
  projectUrl = page.url();
  const chart = page.getByTestId("history-chart");
  await expect(chart).toHaveAttribute("data-points", "6"); // 90d default: all six
  await expect(chart.locator("circle.dot")).toHaveCount(6);
  // A dated time axis and a scale for the severity bars (the most findings of a scan: 4).
  const axes = chart.getByTestId("chart-axes");
  expect(await axes.locator("text.date").count()).toBeGreaterThanOrEqual(2);
  await expect(axes.locator("text.date").first()).toHaveText(/^[A-Z][a-z]{2} \d{1,2}$/);
  await expect(axes.locator("text.count")).toHaveText(["0", "2", "4"]);
  // The score axis is fitted to the scores (64.5 to 79: 50 to 90), not 0-100.
  await expect(chart.locator('svg[role="group"] text.axis').first()).toHaveText("50");
  await expect(chart.locator('svg[role="group"] text.axis').last()).toHaveText("90");
  // The chart is one Tab stop: the newest point; arrows move between points, and each point
  // focused shows its scan under the chart, with a visible focus ring.
  const points = chart.locator('svg[role="group"] a');
  await expect(points).toHaveCount(6);
  await expect(chart.locator('svg[role="group"] a[tabindex="0"]')).toHaveCount(1);
  await points.last().focus();
  await page.keyboard.press("ArrowLeft");
  await expect(points.nth(4)).toBeFocused();
  await expect(points.nth(4)).toHaveAttribute("tabindex", "0");
  await expect(points.last()).toHaveAttribute("tabindex", "-1");
  // The scan line under the chart: one per point, only the focused one shown.
  const scanLine = page.getByTestId("chart-scan-line");
  await expect(scanLine).toHaveCount(1);
  await expect(scanLine).toContainText("score 82");
  // Its severity chips are the focused scan's, not the newest's: they sit inside the line
  // (a list inside a paragraph was moved out of it by the HTML parser, and never followed).
  const [focusedSev, newestSev] = await Promise.all([points.nth(4).getAttribute("data-sev"), points.last().getAttribute("data-sev")]);
  expect(focusedSev).not.toBe(newestSev);
  await expect(scanLine.locator(".sev-chips li")).toHaveText(focusedSev!.split(",").map((n) => new RegExp(`^${n}\\s`)));
  const ring = await points.nth(4).locator("circle.dot").evaluate((c) => getComputedStyle(c).strokeWidth);
  expect(ring).toBe("3px");
  // A tooltip at the focused point: when (in the viewer's zone), the score and the change.
  const float = chart.getByTestId("chart-float");
  await expect(float).toBeVisible();
  await expect(float).toContainText("score 82.0");
  await expect(float).toContainText(/(up|down) [\d.]+ since the previous scan|no change/);
  await expect(float).not.toContainText("UTC");
  const [tipBox, dotBox, chartBox] = await Promise.all([
    float.boundingBox(),
    points.nth(4).locator("circle.dot").boundingBox(),
    chart.boundingBox(),
  ]);
  // Beside the point (above or below it), inside the chart.
  expect(Math.abs(tipBox!.x + tipBox!.width / 2 - (dotBox!.x + dotBox!.width / 2))).toBeLessThan(tipBox!.width / 2 + 1);
  expect(tipBox!.x).toBeGreaterThanOrEqual(chartBox!.x - 1);
  expect(tipBox!.x + tipBox!.width).toBeLessThanOrEqual(chartBox!.x + chartBox!.width + 1);
  await page.keyboard.press("Escape");
  await expect(float).toBeHidden();
  await page.keyboard.press("Home");
  await expect(points.first()).toBeFocused();
  await expect(float).toBeVisible();
  await page.keyboard.press("End");
  await expect(points.last()).toBeFocused();
  // Hovering a point shows its tooltip too.
  await points.nth(2).hover();
  await expect(float).toContainText(/score [\d.]+/);
  // The score axis: fitted by default, or 0-100 (kept in the address).
  const scale = page.getByTestId("chart-scale");
  await expect(scale.getByRole("link", { name: "Fitted" })).toHaveAttribute("aria-current", "true");
  await scale.getByRole("link", { name: "0–100" }).click();
  await expect(page).toHaveURL(/scale=full&range=90d$/);
  await expect(chart.locator('svg[role="group"] text.axis').first()).toHaveText("0");
  await expect(chart.locator('svg[role="group"] text.axis').last()).toHaveText("100");
  await expect(scale.getByRole("link", { name: "0–100" })).toHaveAttribute("aria-current", "true");
  await scale.getByRole("link", { name: "Fitted" }).click();
  await expect(chart.locator('svg[role="group"] text.axis').first()).toHaveText("50");
  // The project page loads no WASM: its range links are links, the address says the range.
  await page.getByRole("link", { name: "7d", exact: true }).click();
  await expect(page.getByTestId("history-chart")).toHaveAttribute("data-points", "3");
  await expect(page).toHaveURL(/range=7d$/);
  await expect(page.getByRole("link", { name: "7d", exact: true })).toHaveAttribute("aria-current", "true");
  await page.getByRole("link", { name: "30d", exact: true }).click();
  await expect(page.getByTestId("history-chart")).toHaveAttribute("data-points", "5");
  await page.getByRole("link", { name: "all", exact: true }).click();
  await expect(page.getByTestId("history-chart").locator("circle.dot")).toHaveCount(6);
  // Focusing a point shows that scan; its link opens it.
  const lastDot = page.getByTestId("history-chart").locator("a").last();
  await lastDot.focus();
  await expect(scanLine).toContainText(pushed.scan_id);
  await expect(scanLine).toContainText("64.5");
  await page.screenshot({ path: "test-results/project.png", fullPage: true });
});

test("compliance: each framework's trend, a framework's heatmap and failing requirements, the rollup", async ({ page }) => {
  await signIn(page, ADMIN);
  await page.goto(`${projectUrl}?range=all`);
  // One small multiple per framework of the latest scan, each with its text alternative.
  const card = page.getByTestId("posture-card");
  await expect(card.locator("li.trend")).toHaveCount(2);
  const cis = card.locator('li.trend[data-framework="cis-aws-2.0"]');
  await expect(cis).toContainText("0% passing");
  // A 0 % says why: this scanner sent only failures for its CIS rules; soc2, with a PASS, needs no note.
  await expect(cis.getByTestId("none-passed")).toContainText("one passes only on a PASS finding");
  await expect(card.locator('li.trend[data-framework="soc2"]').getByTestId("none-passed")).toHaveCount(0);
  await expect(cis.locator("figure")).toHaveAttribute("aria-label", /^cis-aws-2\.0: 0% of requirements passing now; since the first scan, 6 scans from 0% to 0%/);
  await expect(card.locator('li.trend[data-framework="soc2"]')).toContainText("50% passing");
  // The same as a table.
  await card.getByText("The same as a table").click();
  await expect(page.getByTestId("posture-table").locator("tbody tr")).toHaveCount(2);
  await expect(page.getByTestId("posture-table")).toContainText("cis-aws-2.0");

  // A framework's page, by keyboard: its sections shaded by the share failing.
  await cis.getByRole("link", { name: "cis-aws-2.0" }).focus();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/\/frameworks\/cis-aws-2\.0$/);
  // The demo published CIS AWS 2.0's catalogue (catalogues are the vendor's, for every
  // account): the page is named by it and lists every section, evaluated or not.
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("CIS 2.0 (AWS)");
  await expect(page.getByTestId("framework-headline")).toContainText("0 passed · 2 failed");
  await expect(page.getByTestId("none-passed")).toBeVisible();
  const heat = page.getByTestId("heatmap");
  await expect(heat.locator("li")).toHaveCount(5);
  await expect(heat.locator("li.heat-4")).toHaveCount(2);
  await expect(heat.locator("li").first()).toContainText("100% failing");
  // The top failing requirements with their resources, each linked to its finding's life.
  const top = page.getByTestId("top-failing");
  await expect(top.locator("tbody tr")).toHaveCount(2);
  await expect(top).toContainText("bucket.logs");
  await expect(top).toContainText("vpc.main");
  await heat.getByRole("link", { name: /^3 Logging/ }).click();
  await expect(page).toHaveURL(/#section-3_Logging$/);
  await expectAccessible(page, "a framework page");
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, "a framework page in the dark scheme");
  await page.emulateMedia({ colorScheme: "light" });
  await page.getByTestId("top-failing").getByRole("link", { name: "vpc.main" }).click();
  await expect(page).toHaveURL(/\/findings\/fnd_/);

  // Across projects: per framework and per cloud account, worst first.
  await page.goto("/projects");
  const rollup = page.getByTestId("posture-rollup");
  await expect(page.getByTestId("rollup-frameworks").locator("tbody tr").first()).toContainText("cis-aws-2.0");
  await expect(page.getByTestId("rollup-accounts")).toContainText("123456789012");
  await expect(rollup).toContainText("aws");
  await expectAccessible(page, "the projects page with its rollup");
  // A framework's row leads to its findings across the projects, each with its requirement.
  await page.getByTestId("rollup-frameworks").getByRole("link", { name: "cis-aws-2.0" }).click();
  await expect(page).toHaveURL(/\/findings\?framework=cis-aws-2\.0$/);
  await expect(page.getByTestId("inbox-table")).toContainText("vpc.main");
  await expect(page.getByTestId("inbox-table")).not.toContainText("soc2-");
});

test("a requirement across projects: from a framework page's requirement to its resources, failing first", async ({ page }) => {
  await signIn(page, ADMIN);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${new URL(projectUrl).pathname}/frameworks/cis-aws-2.0`);
    // The catalogue's 64 requirements, those no scan evaluated too.
    await expect(page.getByTestId("catalogue-note")).toContainText("All 64 requirements of the CIS 2.0 (AWS) catalogue");
    await expect(page.getByTestId("requirements-table").locator("tbody tr")).toHaveCount(64);
    await page.getByTestId("requirements-table").getByRole("link", { name: "cis-aws-2.0-3.4" }).click();
    await expect(page).toHaveURL(/\/requirements\/cis-aws-2\.0-3\.4$/);
    await expect(page.getByTestId("requirement-heading")).toHaveText(/^cis-aws-2\.0-3\.4 Ensure /);
    await expect(page.getByTestId("requirement-summary")).toContainText("1 project of 1 fail it");
    const rows = page.getByTestId("requirement-resources").locator("tbody tr");
    await expect(rows.first()).toContainText("vpc.main");
    await expect(rows.first()).toContainText("failed");
    await page.screenshot({ path: `test-results/requirement-${width}.png`, fullPage: true });
    await rows.first().getByRole("link", { name: "vpc.main" }).click();
    await expect(page).toHaveURL(/\/findings\/fnd_/);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("a scan: counts, filters, search and the diff", async ({ page }) => {
  await signIn(page, ADMIN);
  await page.goto(projectUrl);
  await page.getByTestId("history-chart").locator("a").last().click();
  await expect(page).toHaveURL(/\/scans\//);
  await expect(page.getByTestId("scan-score")).toHaveText("64.5");
  await expect(page.getByTestId("pass-fail")).toHaveText("100 passed · 4 failed");
  await expect(page.getByTestId("severity-counts")).toContainText("1 critical");
  await expect(page.getByTestId("severity-counts")).toContainText("2 high");
  // Its time reads in the viewer's zone with how long ago; the UTC text is the tooltip.
  const when = page.getByTestId("scan-time").locator("time");
  await expect(when).toHaveAttribute("data-local", "true");
  await expect(when).toHaveAttribute("title", /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  await expect(when).toContainText(/yesterday|hours? ago/);
  // It opens on what is new since the previous scan, each tagged, with its age.
  await expect(page.getByTestId("tab-new")).toHaveAttribute("aria-current", "page");
  await expect(page.getByTestId("tab-new")).toContainText("(2)");
  const fresh = page.getByTestId("new-findings-table");
  await expect(fresh.locator("tbody tr")).toHaveCount(2);
  await expect(fresh.locator('tbody tr[data-new="true"]')).toHaveCount(2);
  await expect(fresh).toContainText("vpc.main");
  // Its scan was taken yesterday: that is when these were first seen.
  await expect(fresh.locator("tbody tr").first()).toContainText("yesterday");
  await page.getByTestId("tab-all").click();
  await expect(page.getByTestId("tab-all")).toHaveAttribute("aria-current", "page");
  await expect(page.getByTestId("finding-total")).toHaveText("4 findings");
  // bucket.logs has failed since the first scan: not new, and older than this one.
  const logs = page.getByTestId("findings-table").locator("tbody tr", { hasText: "bucket.logs" });
  await expect(logs).not.toHaveAttribute("data-new", "true");
  await expect(logs).toContainText("40 days ago");

  // Most severe first by default; a column heading sorts by it, a second click reverses it.
  const firstRule = () => page.getByTestId("findings-table").locator("tbody tr").first().locator('td[data-label="Rule"]');
  await expect(firstRule()).toHaveText("cis-aws-2.0-3.4");
  await expect(page.getByTestId("findings-table").getByRole("columnheader", { name: /^Severity/ })).toHaveAttribute("aria-sort", "ascending");
  await page.getByTestId("sort-rule").click();
  await expect(page).toHaveURL(/sort=rule/);
  await expect(firstRule()).toHaveText("cis-aws-2.0-1.1");
  await page.getByTestId("sort-rule").click();
  await expect(page).toHaveURL(/dir=desc/);
  await expect(firstRule()).toHaveText("soc2-cc7.2");
  await expect(page.getByTestId("findings-table").getByRole("columnheader", { name: /^Rule/ })).toHaveAttribute("aria-sort", "descending");
  await page.getByTestId("sort-severity").click();
  await expect(firstRule()).toHaveText("cis-aws-2.0-3.4");

  await page.getByRole("combobox", { name: "Severity" }).selectOption("high");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("finding-total")).toHaveText("2 findings");
  await page.getByRole("combobox", { name: "Severity" }).selectOption("");
  await page.getByRole("combobox", { name: "Framework" }).selectOption("soc2");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("finding-total")).toHaveText("2 findings");
  await page.getByRole("combobox", { name: "Framework" }).selectOption("");
  await page.getByRole("searchbox", { name: "Search" }).fill("VPC.MAIN");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByTestId("finding-total")).toHaveText("1 finding");
  await expect(page.getByTestId("findings-table")).toContainText("cis-aws-2.0-3.4");

  await expect(page.getByTestId("diff-new")).toHaveText("2 new");
  await expect(page.getByTestId("diff-fixed")).toHaveText("2 fixed");
  await expect(page.getByTestId("diff-unchanged")).toHaveText("1 unchanged");
  await expect(page.getByTestId("diff-new-table")).toContainText("trail.main");
  // A fixed finding reads as fixed, never as the FAIL it was.
  await expect(page.getByTestId("diff-fixed-table").locator("tbody tr").first()).toContainText("FIXED");
  await expect(page.getByTestId("diff-fixed-table")).not.toContainText("FAIL");
  await page.screenshot({ path: "test-results/scan.png", fullPage: true });

  // Compared with the oldest scan instead (the same "older" findings: the same diff).
  const base = page.getByRole("combobox", { name: "Compare with" });
  const oldest = (await base.locator("option").last().getAttribute("value")) ?? "";
  await base.selectOption(oldest);
  await page.getByRole("button", { name: "Compare" }).click();
  await expect(page).toHaveURL(new RegExp(`base=${oldest}`));
  await expect(page.getByTestId("diff").getByRole("heading", { level: 2 })).toHaveText(`Compared with ${oldest}`);
  await expect(page.getByTestId("diff-new")).toHaveText("2 new");
  await expect(page.getByRole("combobox", { name: "Compare with" })).toHaveValue(oldest);

  // The downloads: SARIF 2.1.0 and CSV of all four findings, whatever the filter shows.
  const links = page.getByTestId("scan-downloads");
  const [sarifDownload] = await Promise.all([
    page.waitForEvent("download"),
    links.getByRole("link", { name: "SARIF" }).click(),
  ]);
  expect(sarifDownload.suggestedFilename()).toMatch(/^e2e_web-\d{8}-\d{6}-e2e-web\.sarif$/);
  const sarif = JSON.parse(fs.readFileSync((await sarifDownload.path())!, "utf8"));
  expect(sarif.version).toBe("2.1.0");
  expect(sarif.runs[0].results.map((r: any) => r.ruleId)).toEqual(latest.map((f) => f.rule_id));
  const [csvDownload] = await Promise.all([
    page.waitForEvent("download"),
    links.getByRole("link", { name: "CSV" }).click(),
  ]);
  const csv = fs.readFileSync((await csvDownload.path())!, "utf8").trim().split(/\r?\n/);
  expect(csv[0]).toBe("rule_id,resource,status,severity,message,remediation");
  expect(csv).toHaveLength(5);

  // The compliance report: a printable page, accessible in both schemes.
  const report = page.getByTestId("scan-report");
  const reportUrl = (await report.getByTestId("report-html").getAttribute("href")) ?? "";
  expect(reportUrl).toMatch(/\/scans\/[^/]+\/report\.html$/);
  await expect(report.getByTestId("report-json")).toHaveAttribute("href", /\/report\.json$/);
  await page.goto(reportUrl);
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(/^Compliance report: /);
  await expectAccessible(page, "the compliance report");
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, "the compliance report in the dark scheme");
  await page.emulateMedia({ colorScheme: "light" });

  await page.goto(projectUrl);
  const [history] = await Promise.all([
    page.waitForEvent("download"),
    page.getByTestId("history-download").click(),
  ]);
  expect(history.suggestedFilename()).toBe("e2e_web-history.csv");
  const rows = fs.readFileSync((await history.path())!, "utf8").trim().split(/\r?\n/);
  expect(rows[0]).toMatch(/^scanned_at,scan_id,score,score_delta,/);
  expect(rows.length).toBeGreaterThan(2);
});

test("a finding's page: its life on the branch, triage with a reason and expiry, and undo", async ({ page }) => {
  await signIn(page, ADMIN);
  await page.goto(projectUrl);
  await page.getByTestId("history-chart").locator("a").last().click();
  await expect(page.getByTestId("tab-new")).toHaveAttribute("aria-current", "page");
  const scanPage = page.url();
  await page.getByTestId("new-findings-table").getByRole("link", { name: "cis-aws-2.0-3.4" }).click();
  await expect(page).toHaveURL(/\/findings\/fnd_/);
  await expect(page).toHaveTitle("cis-aws-2.0-3.4 on vpc.main · e2e/web · Tidemark");
  await expect(page.getByTestId("finding-state")).toHaveText("Open");
  await expect(page.getByTestId("finding-resource")).toHaveText("vpc.main");
  await expect(page.getByTestId("finding-message")).toHaveText("cis-aws-2.0-3.4 on vpc.main");
  await expect(page.getByTestId("finding-first-seen")).toContainText("yesterday");
  // One clock and one format: the finding's "last seen" reads exactly as the scan page's
  // time of that same scan (the viewer's zone, how long ago counted alike).
  const lastSeen = page.getByTestId("finding-last-seen").locator("time");
  await expect(lastSeen).toHaveAttribute("data-local", "true");
  const other = await page.context().newPage();
  await other.goto(scanPage);
  await expect(other.getByTestId("scan-time").locator("time")).toHaveAttribute("data-local", "true");
  expect(await lastSeen.innerText()).toBe(await other.getByTestId("scan-time").locator("time").innerText());
  await other.close();
  await expect(page.getByTestId("finding-timeline").locator("li")).toHaveCount(1);
  await expect(page.getByTestId("finding-timeline").locator("li").first()).toContainText("Opened FAIL, critical");

  // Triaged with a reason and an expiry: the page says so, and its history has it.
  const form = page.getByTestId("triage-form");
  await form.getByLabel("Accepted risk").check();
  await form.getByLabel("Reason (required)").fill("The VPC is a sandbox; reviewed with security.");
  const until = new Date(Date.now() + 30 * DAY).toISOString().slice(0, 10);
  await form.getByLabel(/^Until/).fill(until);
  await form.getByRole("button", { name: "Triage" }).click();
  await expect(page.getByTestId("triage-notice")).toContainText("Triaged");
  await expect(page.getByTestId("finding-state")).toHaveText("Triaged");
  await expect(page.getByTestId("finding-triage")).toContainText(`Accepted risk until ${until}`);
  await expect(page.getByTestId("finding-timeline").locator('li[data-kind="triaged"]')).toContainText(ADMIN);
  await page.screenshot({ path: "test-results/finding.png", fullPage: true });

  // The scan page tags the row with its triage.
  await page.goto(scanPage);
  await expect(page.getByTestId("new-findings-table").locator("tbody tr", { hasText: "vpc.main" })).toContainText("Accepted risk");
  // And lists it apart, with why and by whom.
  await page.getByTestId("tab-triaged").click();
  await expect(page.getByTestId("tab-triaged")).toContainText("(1)");
  await expect(page.getByTestId("triaged-table").locator("tbody tr")).toHaveCount(1);
  await expect(page.getByTestId("triaged-table")).toContainText("The VPC is a sandbox; reviewed with security.");
  await page.goto(scanPage);

  // A blank reason is refused and changes nothing; then the admin undoes the triage.
  await page.getByTestId("new-findings-table").getByRole("link", { name: "cis-aws-2.0-3.4" }).click();
  await page.getByTestId("triage-undo").click();
  await expect(page.getByTestId("triage-notice")).toContainText("undone");
  await expect(page.getByTestId("finding-state")).toHaveText("Open");
  await expect(page.getByTestId("finding-timeline").locator("li")).toHaveCount(3);
  await expect(page.getByTestId("finding-timeline").locator("li").last()).toContainText("Triage undone");
});

test("an admin's quality gate judges the next push, and the chart and scan page show it", async ({ page, request }) => {
  await signIn(page, ADMIN);
  await page.goto(projectUrl);
  const panel = page.getByTestId("gate-panel");
  await expect(page.getByTestId("gate-summary")).toContainText("No gate");
  await panel.getByLabel("Minimum score").fill("60");
  await panel.getByLabel("Maximum drop").fill("2");
  await panel.getByLabel("No new open findings at or above").selectOption("critical");
  await panel.getByRole("button", { name: "Save gate" }).click();
  await expect(panel.getByRole("status")).toContainText("Saved");
  await expect(page.getByTestId("gate-summary")).toContainText("score at least 60");
  await page.reload();
  await expect(page.getByTestId("gate-summary")).toContainText(
    "score at least 60; a drop of at most 2 points from the previous scan; no new open findings at critical severity or above",
  );

  // 64.5 -> 58: below the minimum and a drop of 6.5; no new critical finding.
  const res = await push(request, apiKey, scan("e2e/web", 0.5, 58, latest));
  expect(res.status()).toBe(201);
  const pushed = await res.json();
  expect(pushed.gate).toEqual({
    status: "failed",
    reasons: [
      "score 58 is below the gate's minimum of 60",
      "score dropped 6.5 points since the previous scan; the gate allows at most 2",
    ],
  });

  await page.reload();
  const chart = page.getByTestId("history-chart");
  await expect(chart.locator(".chart-overlay circle.gate-failed")).toHaveCount(1);
  await expect(chart).toContainText("failed gate");
  await expect(page.getByRole("table").getByRole("row").nth(1)).toContainText("failed");
  await page.screenshot({ path: "test-results/project-gate.png", fullPage: true });
  await chart.getByRole("link", { name: /quality gate failed/ }).click();
  await expect(page).toHaveURL(new RegExp(`/scans/${pushed.scan_id}$`));
  await expect(page.getByTestId("scan-gate")).toContainText("failed");
  await expect(page.getByTestId("scan-gate")).toContainText("score 58 is below the gate's minimum of 60");
  await page.screenshot({ path: "test-results/scan-gate.png", fullPage: true });
  // The projects page puts it among the projects failing their gate, with the reasons.
  await page.goto("/projects");
  await expect(page.getByTestId("failing-projects")).toContainText("e2e/web");
  await expect(page.getByTestId("failing-projects")).toContainText("score 58 is below the gate's minimum of 60");
});

test("branches and pull requests: the selector, the pull-requests tab and a scan judged against its base", async ({ page, request }) => {
  const repo = "https://github.com/acme/web";
  // A feature branch far below the gate's minimum: its own line, the project's untouched.
  let res = await push(request, apiKey, {
    ...scan("e2e/web", 0.4, 20, latest),
    git: { branch: "feature/tls", default_branch: "main", commit: "abcdef0123456789", repository_url: repo },
  });
  expect(res.status(), await res.text()).toBe(201);
  expect((await res.json()).branch).toBe("feature/tls");
  // Its pull request into main adds one critical finding.
  res = await push(request, apiKey, {
    ...scan("e2e/web", 0.3, 61, [...latest, finding("cis-aws-2.0-9.9", "bucket.public", "critical")]),
    git: {
      branch: "feature/tls", commit: "1234567abcdef", repository_url: repo,
      pull_request: { number: 7, base_branch: "main", title: "Serve over TLS", url: `${repo}/pull/7` },
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  const pr = await res.json();
  expect(pr.base.new_findings).toBe(1);
  expect(pr.gate.reasons).toEqual(["1 new open finding at critical severity or above; the gate allows none"]);

  await signIn(page, ADMIN);
  await page.goto("/projects");
  // The projects list still shows main's latest score (the gate test's 58).
  await expect(page.getByTestId("project-row").filter({ hasText: "e2e/web" })).toContainText("58");
  await page.goto(projectUrl);
  await expect(page.getByTestId("line-label")).toHaveText("main");
  const select = page.getByRole("combobox", { name: "Branch", exact: true });
  await expect(select.locator("option")).toHaveText(["main (default)", "feature/tls"]);
  await select.selectOption("feature/tls");
  await page.getByRole("button", { name: "Show", exact: true }).click();
  await expect(page).toHaveURL(/\?branch=feature%2Ftls/);
  await expect(page.getByTestId("line-label")).toHaveText("feature/tls");
  await expect(page.getByTestId("history-chart")).toHaveAttribute("data-points", "1");
  await expect(page.getByTestId("history-chart").locator("figcaption")).toContainText("1 scan.");
  await expect(page.getByTestId("line-label").locator("..")).toContainText("· 1 scan on");
  const row = page.getByRole("table").getByRole("row").nth(1);
  await expect(row).toContainText("feature/tls");
  await expect(row.getByRole("link", { name: "abcdef0" })).toHaveAttribute("href", `${repo}/commit/abcdef0123456789`);
  // A range keeps the branch in the address.
  await page.getByRole("link", { name: "all", exact: true }).click();
  await expect(page).toHaveURL(/branch=feature\/tls&range=all/);
  await page.screenshot({ path: "test-results/project-branch.png", fullPage: true });

  await page.getByTestId("pulls-tab").click();
  await expect(page).toHaveURL(/tab=pulls/);
  const pulls = page.getByTestId("pulls-table");
  await expect(pulls.getByRole("row")).toHaveCount(2);
  await expect(pulls.getByRole("row").nth(1)).toContainText("#7 Serve over TLS");
  await expect(pulls.getByRole("row").nth(1)).toContainText("feature/tls → main");
  await expect(pulls.getByRole("row").nth(1)).toContainText("failed");
  await expect(pulls.getByRole("row").nth(1).getByRole("cell").nth(4)).toHaveText("1");
  await page.screenshot({ path: "test-results/project-pulls.png", fullPage: true });
  await pulls.getByRole("link", { name: "#7" }).click();
  await expect(page).toHaveURL(/\?pr=7$/);
  await expect(page.getByTestId("pull-request-card")).toContainText("Serve over TLS");
  await expect(page.getByTestId("pull-request-verdict")).toContainText("1 new, 0 fixed");
  // Issue 45, rows 2, 3 and 11: the pull request is the page's context: its title, its tab
  // (a link marked current, not a list item), no branch selector naming main, and its change
  // against its base rather than against its own previous push.
  const delta = pr.base.score_delta as number;
  const signed = `${delta < 0 ? "▼" : delta > 0 ? "▲" : "±"} ${Math.abs(delta).toFixed(1)}`;
  await expect(page).toHaveTitle("#7 Serve over TLS · e2e/web · Tidemark");
  await expect(page.getByTestId("pulls-tab")).toHaveAttribute("aria-current", "true");
  await expect(page.getByTestId("branches-tab")).not.toHaveAttribute("aria-current", /.*/);
  await expect(page.getByTestId("line-nav").getByRole("listitem")).toHaveCount(0);
  await expect(page.getByTestId("branch-select")).toHaveCount(0);
  await expect(page.getByTestId("line-change")).toContainText(`${signed} against main`);
  await expect(page.getByTestId("pull-request-verdict")).toContainText(`score ${signed}`);
  await expect(page.getByTestId("scans-pager")).toHaveText("Scans 1–1 of 1 · page 1 of 1");

  // The pull request's scan compares with main's scan it was judged against, by default.
  await page.getByRole("table").getByRole("link", { name: pr.scan_id }).click();
  await expect(page).toHaveURL(new RegExp(`/scans/${pr.scan_id}$`));
  await expect(page.getByTestId("scan-pull-request")).toContainText("#7 · against main: 1 new, 0 fixed");
  await expect(page.getByTestId("diff").getByRole("heading", { level: 2 })).toHaveText(
    `Compared with main (${pr.base.scan_id}), the pull request's base`,
  );
  await expect(page.getByTestId("diff-new")).toHaveText("1 new");
  await expect(page.getByTestId("diff-new-table")).toContainText("bucket.public");
  await expect(page.getByRole("combobox", { name: "Compare with" }).locator("option").first()).toHaveText(
    "The base branch's scan (main)",
  );
  await page.screenshot({ path: "test-results/scan-pull-request.png", fullPage: true });
  // Row 1: New means new against the base. The high finding main has had for weeks is not
  // new here, and its age is main's; only the critical one the pull request adds is new.
  await expect(page).toHaveTitle(`${pr.scan_id} · #7 · e2e/web · Tidemark`);
  await expect(page.getByTestId("scan-change")).toContainText(`${signed} against main`);
  await expect(page.getByTestId("tab-new")).toContainText("New against main (1)");
  await page.getByTestId("tab-all").click();
  const all = page.getByTestId("findings-table");
  const old = all.locator("tbody tr", { hasText: "bucket.logs" });
  await expect(old.locator(".chip.new")).toHaveCount(0);
  await expect(old).toContainText(/days ago on main/);
  await expect(all.locator("tbody tr", { hasText: "bucket.public" }).locator(".chip.new")).toHaveText("New");
  await expect(all.locator(".chip.new")).toHaveCount(1);

  // Row 9: triage several findings at once, from the scan page (every box on the page, one
  // left out), with one reason; each is triaged on the pull request's line.
  const boxes = all.locator('input[name="finding"]');
  const open = await boxes.count();
  expect(open).toBeGreaterThan(1);
  // Nothing ticked: the button is off (no round trip to be told so), and says why.
  const bulkButton = page.getByTestId("bulk-triage").getByRole("button", { name: "Triage selected" });
  await expect(bulkButton).toBeDisabled();
  await expect(page.getByTestId("bulk-count")).toHaveText("Nothing selected yet.");
  await all.getByTestId("select-all").check();
  await expect(page.getByTestId("bulk-count")).toHaveText(`${open} findings selected.`);
  await expect(bulkButton).toBeEnabled();
  for (let i = 0; i < open; i++) await expect(boxes.nth(i)).toBeChecked();
  await boxes.first().uncheck();
  const bulk = page.getByTestId("bulk-triage");
  await bulk.getByLabel("Won't fix").check();
  await bulk.getByLabel("Reason (required)").fill("Preview environment, torn down after review");
  await bulk.getByRole("button", { name: "Triage selected" }).click();
  await expect(page.getByTestId("triage-notice")).toHaveText(`Triaged ${open - 1} findings as won't fix: each finding's page shows it in its life, with who and why.`);
  await expect(page.getByTestId("tab-triaged")).toContainText(`(${open - 1})`);
  await expect(page.getByTestId("findings-table").locator(".chip.triaged")).toHaveCount(open - 1);
});

test("tables read as cards on a phone and use the width of a desktop; pagers count; a finding's life folds its scans", async ({ page }) => {
  await signIn(page, ADMIN);
  const project = new URL(projectUrl, page.url()).pathname;
  await page.goto(project);
  const scanUrl = new URL((await page.getByTestId("history-chart").locator("a").last().getAttribute("href")) ?? "", page.url()).pathname;
  // Row 7: the scans pager says where the page is and how many there are.
  await expect(page.getByTestId("scans-pager")).toHaveText(/^Scans 1–(\d+) of \1 · page 1 of 1$/);

  // Row 8: main's long-standing finding reads as one change with its scans folded in, not a
  // line per scan.
  await page.goto(`${scanUrl}?view=all`);
  await page.getByTestId("findings-table").getByRole("link", { name: "cis-aws-2.0-1.1" }).click();
  const life = page.getByTestId("finding-timeline");
  await expect(life.locator("li")).toHaveCount(1);
  await expect(life.locator("li").first()).toContainText("Opened FAIL, high");
  await expect(life.getByTestId("timeline-folded")).toContainText(/Then unchanged in \d+ scans/);
  const findingUrl = new URL(page.url()).pathname;

  const pages = [
    "/projects", project, `${project}?pr=7`, `${project}?tab=pulls`, `${scanUrl}?view=all`, findingUrl, "/settings/audit",
    `${project}/frameworks/cis-aws-2.0`,
  ];
  // Rows 4 and 5: on a 390 px phone each cell is labelled with its own column, rule ids stay
  // whole, the header bar is short and the charts' labels readable.
  await page.setViewportSize({ width: 390, height: 900 });
  // Pictures of the e2e account (docs/dashboard.md's are the demo's: tests/demo.spec.ts),
  // taken here while the project still has its open findings and pull request.
  const shots = new Map([["/projects", "projects"], [project, "project"], [`${project}?pr=7`, "pull-request"],
    [`${scanUrl}?view=all`, "scan-all"], [`${project}/frameworks/cis-aws-2.0`, "framework"]]);
  const shoot = async (url: string, width: number) => {
    const name = shots.get(url);
    if (name) await page.screenshot({ path: `test-results/e2e-shots/${name}-${width}.png`, fullPage: true });
  };
  for (const url of pages) {
    await page.goto(url);
    await shoot(url, 390);
    await expectTablesReadOnPhones(page, `${url} at 390px`);
    await expectNoSidewaysScroll(page, `${url} at 390px`);
    await expectPhoneLayout(page, `${url} at 390px`);
    const bar = await page.locator("header.topbar").boundingBox();
    expect.soft(bar?.height ?? 0, `the header bar on ${url}`).toBeLessThanOrEqual(110);
  }
  await page.goto(`${scanUrl}?view=all`);
  const rule = page.getByTestId("findings-table").locator("tbody tr").first().locator("code").first();
  expect((await rule.boundingBox())?.height ?? 99).toBeLessThan(24); // one line
  await page.goto(project);
  const label = await page.getByTestId("chart-axes").locator("text.axis").first().boundingBox();
  expect(label?.height ?? 0).toBeGreaterThanOrEqual(8);
  // A page that does not exist keeps the viewer's own header (not "Sign in"), at both widths.
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    const res = await page.goto("/no/such/page");
    expect(res?.status()).toBe(404);
    await expect(page.getByTestId("signed-in-as")).toContainText(ADMIN);
    await expect(page.getByRole("link", { name: "Sign in" })).toHaveCount(0);
  }
  // Row 6: on a 1280 px screen no table is cut off in its scroller.
  await page.setViewportSize({ width: 1280, height: 900 });
  for (const url of pages) {
    await page.goto(url);
    await shoot(url, 1280);
    await expectTablesFit(page, `${url} at 1280px`);
  }
});

test("Rotate Key revokes the old key at once and the new one pushes", async ({ page, request }) => {
  await signIn(page, ADMIN);
  // Settings has a page per section, in a side navigation.
  await page.goto("/settings/sso");
  await expect(page.getByTestId("sso-domains")).toContainText("saml-e2e.example");
  await expect(page.getByRole("button", { name: "Save SSO" })).toBeVisible();
  const nav = page.getByTestId("settings-nav");
  await expect(nav.getByRole("link")).toHaveText(["API keys", "License", "Machines", "Members", "Single sign-on", "Projects",
    "Frameworks", "Storage", "Alerts", "Badges", "Webhooks", "Trusted publishers", "Provisioning", "Audit log"]);
  await expect(nav.getByRole("link", { name: "Single sign-on" })).toHaveAttribute("aria-current", "page");
  await nav.getByRole("link", { name: "API keys" }).click();
  await expect(page).toHaveURL(/\/settings\/keys$/);
  await expect(page.getByTestId("keys")).toContainText("playwright");
  await expect(page.getByTestId("members")).toHaveCount(0);
  // It asks first; "Cancel" rotates nothing.
  let question = "";
  page.once("dialog", (dialog) => { question = dialog.message(); void dialog.dismiss(); });
  await page.getByRole("button", { name: "Rotate Key" }).click();
  await page.waitForTimeout(500);
  expect(question).toContain("Every current key stops working");
  await expect(page.getByTestId("new-key")).toHaveCount(0);
  page.once("dialog", (dialog) => void dialog.accept());
  await page.getByRole("button", { name: "Rotate Key" }).click();
  const shown = page.getByTestId("new-key");
  await expect(shown).toHaveText(/^svc_api_/);
  // The form's answer is a redirect to a page a reload cannot repeat (post/redirect/get).
  await expect(page).toHaveURL(/\/settings\/keys\?shown=[0-9A-Za-z]{22}$/);
  const newKey = (await shown.textContent()) ?? "";
  await page.screenshot({ path: "test-results/settings-rotated.png", fullPage: true });
  // Reloaded, the page shows the key no more, says why, and rotates nothing (the key just
  // shown still pushes, below).
  await page.reload();
  await expect(page.getByTestId("shown-already")).toBeVisible();
  await expect(page.getByTestId("new-key")).toHaveCount(0);

  const old = await push(request, apiKey, scan("e2e/web", 0, 66, latest));
  expect(old.status()).toBe(401);
  expect((await old.json()).error).toBe("invalid_api_key");
  const fresh = await push(request, newKey, scan("e2e/web", 0, 67, latest));
  expect(fresh.status(), await fresh.text()).toBe(201);
  apiKey = newKey;
});

test("an admin makes a named key with an expiry beside the others, and revokes it", async ({ page, request }) => {
  const works = async (key: string) =>
    (await request.get("/v1/frameworks", { headers: { "X-API-Key": key } })).status();
  await signIn(page, ADMIN);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/settings/keys");
    const name = `e2e CI ${width}`;
    const form = page.getByTestId("new-key-form");
    await form.getByLabel("Name").fill(name);
    await form.getByLabel("Expires").selectOption("30");
    await form.getByRole("button", { name: "New key" }).click();
    const shown = page.getByTestId("new-key");
    await expect(shown).toHaveText(/^svc_api_/);
    await expect(page.getByTestId("new-key-panel")).toContainText("the other keys keep working");
    await expect(page).toHaveURL(/\/settings\/keys\?shown=/);
    const key = (await shown.textContent()) ?? "";
    const row = page.getByTestId("keys").getByRole("row").filter({ hasText: name });
    // Its expiry, 30 days on, under its name.
    const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const expires = row.getByTestId("key-expiry").locator("time");
    await expect(expires).toHaveAttribute("datetime", new RegExp(`^${expiry}`));
    await expect(expires).toContainText(/\(in (29|30) days\)/);
    await page.screenshot({ path: `test-results/settings-new-key-${width}.png`, fullPage: true });
    expect(await works(key)).toBe(200);
    expect(await works(apiKey), "New key revoked nothing").toBe(200);
    let question = "";
    page.once("dialog", (dialog) => { question = dialog.message(); void dialog.accept(); });
    await row.getByRole("button", { name: /^Revoke key/ }).click();
    await expect(page.getByRole("status").filter({ hasText: "Key revoked" })).toBeVisible();
    expect(question).toContain(name);
    await expect(page.getByTestId("keys").getByRole("row").filter({ hasText: name })).toHaveCount(0);
    expect(await works(key)).toBe(401);
    expect(await works(apiKey)).toBe(200);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("an admin releases a machine's seat in Settings → Machines; its key stops pushing at once", async ({ page, request }) => {
  const hash = createHash("sha256").update(LICENSE_KEY).digest("hex");
  const res = await request.post("/v1/license/activate", {
    headers: { "X-License-Key-Hash": hash, "X-Machine-Fingerprint": "fp-e2e-release" },
    data: { machine: "release-me" },
  });
  expect(res.status()).toBe(201);
  const key = (await res.json()).api_key;
  await signIn(page, ADMIN);
  await page.goto("/settings/machines");
  const table = page.getByTestId("machines");
  const row = table.getByRole("row").filter({ hasText: "release-me" });
  await expect(row).toContainText("fp-e2e-release");
  await expect(page.getByTestId("seats-used")).toContainText(/\d+ machines?; this licence has no seat limit\./);
  await page.screenshot({ path: "test-results/settings-machines.png", fullPage: true });
  // It asks first; then the seat is freed and the page says so (post/redirect/get).
  let question = "";
  page.once("dialog", (dialog) => { question = dialog.message(); void dialog.accept(); });
  await page.getByRole("button", { name: "Release the seat of release-me" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Seat released" })).toBeVisible();
  expect(question).toContain("Its API keys stop working at once");
  await expect(page).toHaveURL(/\/settings\/machines/);
  await expect(table.getByRole("row").filter({ hasText: "release-me" })).toHaveCount(0);
  // The released machine's key is refused at once.
  const pushed = await push(request, key, scan("released-seat", 0, 90, []));
  expect(pushed.status()).toBe(401);
});

test("archiving frees the slot for a new label", async ({ page, request }) => {
  const refused = await push(request, apiKey, scan("e2e/api", 0, 90, []));
  expect(refused.status()).toBe(409);
  expect((await refused.json()).error).toBe("project_limit_reached");

  await signIn(page, ADMIN);
  await page.goto("/settings/projects");
  await page.getByRole("button", { name: "Archive e2e/web" }).click();
  await expect(page.getByRole("button", { name: "Unarchive e2e/web" })).toBeVisible();

  const accepted = await push(request, apiKey, scan("e2e/api", 0, 90, []));
  expect(accepted.status(), await accepted.text()).toBe(201);
  const archived = await push(request, apiKey, scan("e2e/web", 0, 70, []));
  expect((await archived.json()).error).toBe("project_archived");

  await page.goto("/projects");
  await expect(page.getByRole("heading", { name: "Archived" })).toBeVisible();
});

test("an admin makes a status badge in Settings; it loads without a session and can be revoked", async ({ page, request }) => {
  await signIn(page, ADMIN);
  await page.goto("/settings/badges");
  const row = page.getByTestId("badge-row").filter({ hasText: "e2e/api" });
  await row.getByRole("button", { name: "Create badge" }).click();
  const markdown = row.locator(".badge-markdown");
  await expect(markdown).toContainText("/badge/bdg_");
  await expect(markdown).toContainText("[![Tidemark: e2e/api]");
  const image = row.getByRole("img", { name: "Badge of e2e/api" });
  await expect(image).toBeVisible();
  expect(await image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
  await page.screenshot({ path: "test-results/settings-badges.png", fullPage: true });

  const src = (await image.getAttribute("src")) ?? "";
  const anonymous = await request.get(src, { headers: { cookie: "" } });
  expect(anonymous.status()).toBe(200);
  expect(await anonymous.text()).toContain("tidemark: 90.0");

  await row.getByRole("button", { name: "Revoke badge" }).click();
  await expect(row.getByRole("button", { name: "Create badge" })).toBeVisible();
  expect((await request.get(src)).status()).toBe(404);
});

test("an admin adds a webhook in Settings; deliveries arrive signed, are retried and show in the log", async ({ page, request }) => {
  // A real receiver on loopback (the server runs with TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1): it
  // answers the first request 500, then 204.
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.statusCode = received.length === 1 ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((ready) => receiver.listen(0, "127.0.0.1", () => ready()));
  const port = (receiver.address() as AddressInfo).port;
  try {
    await signIn(page, ADMIN);
    await page.goto("/settings/webhooks");
    const panel = page.getByTestId("webhooks");
    await panel.getByText("Add an endpoint").click();
    await panel.getByLabel("URL").fill(`http://127.0.0.1:${port}/tidemark?token=t0k3n`);
    await panel.getByLabel("gate.failed").check();
    await panel.getByRole("button", { name: "Add endpoint" }).click();
    const shown = panel.getByTestId("webhook-secret");
    await expect(shown).toHaveText(/^whsec_[0-9A-Za-z]{32}$/);
    const secret = (await shown.textContent()) ?? "";
    const endpoint = panel.getByTestId("webhook-endpoint");
    await expect(endpoint).toContainText(`http://127.0.0.1:${port}/…`);
    await expect(endpoint).toContainText("scan.pushed, gate.failed");
    await expect(panel).not.toContainText("t0k3n");

    const pushed = await push(request, apiKey, scan("e2e/api", 0, 91, []));
    expect(pushed.status(), await pushed.text()).toBe(201);
    await expect.poll(() => received.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    for (const r of received) {
      const parts = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers["tidemark-signature"]));
      expect(parts, "signature header").not.toBeNull();
      const expected = createHmac("sha256", secret).update(`${parts![1]}.${r.body}`).digest("hex");
      expect(parts![2]).toBe(expected);
    }
    const event = JSON.parse(received[1].body);
    expect(event.type).toBe("scan.pushed");
    expect(event.id).toBe(JSON.parse(received[0].body).id);
    expect(event.project.label).toBe("e2e/api");
    expect(event.scan.score).toBe(91);

    const row = panel.getByTestId("webhook-delivery").first();
    await expect.poll(async () => {
      await panel.getByRole("button", { name: "Refresh" }).click();
      return row.getAttribute("data-state");
    }, { timeout: 10_000 }).toBe("delivered");
    await expect(row).toContainText("scan.pushed");
    await expect(row).toContainText("204");
    await expect(row.getByRole("cell").nth(6)).toHaveText("2");
    await page.screenshot({ path: "test-results/settings-webhooks.png", fullPage: true });

    await endpoint.getByRole("button", { name: "Send a test event" }).click();
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(3);
    expect(JSON.parse(received[2].body).type).toBe("webhook.test");

    page.once("dialog", (dialog) => void dialog.accept());
    await endpoint.getByRole("button", { name: "Delete" }).click();
    await expect(panel.getByTestId("webhook-endpoint")).toHaveCount(0);
  } finally {
    receiver.close();
  }
});

test("an admin opts in to e-mail alerts in Settings; a push that lowers the score mails them once", async ({ page, request }) => {
  await signIn(page, ADMIN);
  await page.goto("/settings/alerts");
  const panel = page.getByTestId("alerts");
  await expect(panel).toContainText(ADMIN);
  const drops = panel.getByLabel("lowers the project's score");
  await expect(drops).not.toBeChecked();
  await drops.check();
  await panel.getByRole("button", { name: "Save alert settings" }).click();
  await expect(panel.getByTestId("alerts-saved")).toHaveText("Saved.");
  await page.reload();
  await expect(page.getByTestId("alerts").getByLabel("lowers the project's score")).toBeChecked();
  await expect(page.getByTestId("alerts").getByLabel("fails its quality gate")).not.toBeChecked();
  await page.getByTestId("alerts").screenshot({ path: "test-results/settings-alerts.png" });

  // e2e/api was last at 91 (the webhook test): 86 is a drop of 5. Without TIDEMARK_SMTP_URL
  // the server writes each message to an .eml file in its outbox directory.
  const pushed = await push(request, apiKey, scan("e2e/api", 0, 86, []));
  expect(pushed.status(), await pushed.text()).toBe(201);
  const subject = "Subject: e2e/api: score dropped 5.0 points to 86.0";
  const mails = () =>
    fs.readdirSync(OUTBOX)
      .filter((f) => f.endsWith(".eml"))
      .map((f) => fs.readFileSync(path.join(OUTBOX, f), "utf8"))
      .filter((m) => m.includes(subject));
  await expect.poll(() => mails().length, { timeout: 15_000 }).toBe(1);
  const mail = mails()[0].replace(/=\r?\n/g, "");
  expect(mail).toContain(`To: ${ADMIN}`);
  expect(mail).toContain(`/scans/${(await pushed.json()).scan_id}`);
  // One message per push: none arrives later for the same push.
  await page.waitForTimeout(2_500);
  expect(mails().length).toBe(1);
});

test("an admin uploads a custom framework in Settings, reads its controls, and removes one", async ({ page }) => {
  await signIn(page, ADMIN);
  const file = (name: string, text: string) => ({ name, mimeType: "text/plain", buffer: Buffer.from(text) });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/settings/frameworks");
    const form = page.getByTestId("upload-framework");
    // Refused with the API's message, naming the field; what was chosen is still there.
    const bad = `id: e2e-bad-${width}\ntitle: Bad\ncontrols:\n  - id: AC.1\n    title: No rules\n    rules: []\n`;
    await form.getByLabel("File (YAML or JSON, at most 256 KiB)").setInputFiles(file("bad.yaml", bad));
    await expect(form.getByLabel("Document", { exact: true })).toHaveValue(bad);
    await form.getByRole("button", { name: "Save framework" }).click();
    await expect(page.getByRole("alert")).toContainText("controls[0].rules");
    await expect(page.getByTestId("upload-framework").getByLabel("Document", { exact: true })).toHaveValue(bad);
    // A JSON file whose id is typed in the form.
    const id = `e2e-scratch-${width}`;
    const good = JSON.stringify({ title: `Scratch ${width}`, controls: [
      { id: "S3.1", title: "Buckets are not public", rules: ["cis-aws-2.0-2.1.4", "cis-aws-2.0-2.1.1"] },
      { id: "IAM.1", title: "Root has MFA", rules: ["cis-aws-2.0-1.5"] }] });
    await page.getByTestId("upload-framework").getByLabel("Document", { exact: true }).fill("");
    await page.getByTestId("upload-framework").getByLabel("File (YAML or JSON, at most 256 KiB)").setInputFiles(file("scratch.json", good));
    await page.getByTestId("upload-framework").getByLabel("Id (when the document has none)").fill(id);
    await page.getByTestId("upload-framework").getByRole("button", { name: "Save framework" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Framework saved" })).toBeVisible();
    const row = page.getByTestId("frameworks").getByRole("row").filter({ hasText: `custom:${id}` });
    await expect(row.locator('td[data-label="Controls"]')).toHaveText("2");
    await row.getByRole("link", { name: `Scratch ${width}` }).click();
    const controls = page.locator(`#fw-${id}`);
    await controls.locator("summary").click();
    await expect(controls.getByRole("row").filter({ hasText: "S3.1" })).toContainText("cis-aws-2.0-2.1.1");
    await page.screenshot({ path: `test-results/settings-frameworks-${width}.png`, fullPage: true });
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: `Remove framework ${id}` }).click();
    await expect(page.getByRole("status").filter({ hasText: "Framework removed" })).toBeVisible();
    await expect(page.getByTestId("frameworks").getByRole("row").filter({ hasText: `custom:${id}` })).toHaveCount(0);
  }
  // One kept, for the member's read-only view below.
  await page.setViewportSize({ width: 1280, height: 900 });
  const kept = "id: e2e-baseline\ntitle: E2E baseline\ncontrols:\n  - id: AC.1\n    title: No public buckets\n    rules: [cis-aws-2.0-2.1.4]\n";
  await page.getByTestId("upload-framework").getByLabel("Document", { exact: true }).fill(kept);
  await page.getByTestId("upload-framework").getByRole("button", { name: "Save framework" }).click();
  await expect(page.getByTestId("frameworks")).toContainText("custom:e2e-baseline");
});

test("a member reads Settings but cannot rotate or archive", async ({ page, browser }) => {
  const reader = `reader-${Date.now()}@e2e.example`;
  await signIn(page, ADMIN);
  await page.goto("/settings/members");
  // Refused (already a member): the page says why, and what was typed is still there to correct.
  await page.getByLabel("E-mail", { exact: true }).fill(ADMIN);
  await page.getByLabel("admin", { exact: true }).check();
  await page.getByRole("button", { name: "Add member" }).click();
  await expect(page.getByRole("alert")).toContainText(`${ADMIN} is already a member of this account`);
  await expect(page.getByLabel("E-mail", { exact: true })).toHaveValue(ADMIN);
  await expect(page.getByLabel("admin", { exact: true })).toBeChecked();
  await page.getByLabel("admin", { exact: true }).uncheck();
  await page.getByLabel("E-mail", { exact: true }).fill(reader);
  await page.getByRole("button", { name: "Add member" }).click();
  await expect(page.getByTestId("members")).toContainText(reader);
  // Saved: the form is empty again, ready for the next colleague.
  await expect(page.getByLabel("E-mail", { exact: true })).toHaveValue("");

  const context = await browser.newContext();
  const otherCsp = await watchCsp(context, new URL(page.url()).origin);
  const other = await context.newPage();
  await signIn(other, reader);
  await other.goto("/settings");
  await expect(other.getByTestId("keys")).toBeVisible();
  await expect(other.getByRole("button", { name: "Rotate Key" })).toHaveCount(0);
  // Custom frameworks: read, not changed.
  await other.goto("/settings/frameworks");
  await expect(other.getByTestId("frameworks")).toContainText("custom:e2e-baseline");
  await expect(other.getByTestId("upload-framework")).toHaveCount(0);
  await expect(other.getByRole("button", { name: /^Remove framework/ })).toHaveCount(0);
  // Admin-only sections are not offered to members, and refused if asked for.
  await expect(other.getByTestId("settings-nav").getByRole("link")).toHaveText(["API keys", "License", "Machines", "Members",
    "Single sign-on", "Projects", "Frameworks", "Storage", "Alerts", "Badges"]);
  // Every member sees what each project's data takes, and how long scans keep their findings.
  await other.goto("/settings/storage");
  await expect(other.getByTestId("storage-total")).toHaveText(/^[\d.]+ (B|KiB|MiB)$/);
  await expect(other.getByTestId("storage-row").first()).toContainText(/[\d.]+ (B|KiB|MiB)/);
  await expect(other.getByTestId("housekeeping-policy")).toContainText("Every scan keeps its findings for a day.");
  expect((await other.goto("/settings/webhooks"))?.status()).toBe(403);
  await other.goto("/settings/projects");
  await expect(other.getByTestId("archive-list")).toBeVisible();
  await expect(other.getByRole("button", { name: /^Archive / })).toHaveCount(0);
  await other.goto("/settings/license");
  await expect(other.getByTestId("license")).toBeVisible();
  await expect(other.getByTestId("offline-file")).toHaveCount(0);
  await other.screenshot({ path: "test-results/settings-member.png", fullPage: true });
  // The server refuses it too, whatever the page shows.
  const status = await other.evaluate(async () => (await fetch("/api/rotate_keys", { method: "POST" })).status);
  expect(status).toBe(403);
  const fileStatus = await other.evaluate(async () => (await fetch("/settings/license/offline-file", {
    method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "days=30",
  })).status);
  expect(fileStatus).toBe(403);
  await context.close();
  expect(otherCsp).toEqual([]);

  // The admin promotes the reader, demotes them again, then removes them.
  const row = page.getByTestId("members").getByRole("row").filter({ hasText: reader });
  await row.getByRole("button", { name: "Make admin" }).click();
  await expect(row.getByRole("cell").nth(1)).toHaveText("admin");
  await row.getByRole("button", { name: "Make member" }).click();
  await expect(row.getByRole("cell").nth(1)).toHaveText("member");
  page.once("dialog", (dialog) => void dialog.accept());
  await row.getByRole("button", { name: "Remove" }).click();
  await expect(page.getByTestId("members")).not.toContainText(reader);

  // All of it is in the audit log, newest first, with who did it and from where.
  await page.getByTestId("settings-nav").getByRole("link", { name: "Audit log" }).click();
  await expect(page).toHaveURL(/\/settings\/audit$/);
  const log = page.getByTestId("audit-log");
  const removed = log.getByTestId("audit-row").first();
  await expect(removed).toHaveAttribute("data-action", "member.removed");
  await expect(removed).toContainText(reader);
  await expect(removed).toContainText(ADMIN);
  await expect(removed).toContainText("127.0.0.1");
  await page.getByLabel("What").selectOption("member.role_changed");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/action=member\.role_changed/);
  await expect(log.getByTestId("audit-row")).toHaveCount(2);
  await expect(log.getByTestId("audit-row").first()).toContainText("admin");
  await page.screenshot({ path: "test-results/settings-audit.png", fullPage: true });
});

test("an admin adds a trusted publisher in Settings; a keyless CI push shows its provenance", async ({ page, request }) => {
  // A GitHub-shaped token issuer (Enterprise Server form) on loopback, signing RS256 with its
  // own key through node:crypto; the server runs with TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS=1.
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "e2e-1", alg: "RS256", use: "sig" };
  const b64url = (data: Buffer | string) => Buffer.from(data).toString("base64url");
  const signJwt = (claims: object) => {
    const input = `${b64url(JSON.stringify({ alg: "RS256", kid: "e2e-1", typ: "JWT" }))}.${b64url(JSON.stringify(claims))}`;
    return `${input}.${b64url(cryptoSign("sha256", Buffer.from(input), privateKey))}`;
  };
  let issuer = "";
  const server = http.createServer((req, res) => {
    res.setHeader("Content-Type", "application/json");
    if (req.url === "/_services/token/.well-known/openid-configuration") {
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/.well-known/jwks` }));
    } else if (req.url === "/_services/token/.well-known/jwks") {
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", () => ready()));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/_services/token`;
  try {
    await signIn(page, ADMIN);
    await page.goto("/settings/publishers");
    const panel = page.getByTestId("publishers");
    await expect(panel).toContainText("No trusted publishers yet");
    await panel.getByText("Add a trusted publisher").click();
    await panel.locator('select[name="provider"]').selectOption("github");
    await panel.locator('input[name="issuer"]').fill(issuer);
    await panel.locator('input[name="repository"]').fill("acme/api");
    await panel.locator('input[name="workflow"]').fill("ci.yml");
    await panel.locator('input[name="project"]').fill("e2e/api");
    await panel.getByRole("button", { name: "Add publisher" }).click();
    const row = panel.getByTestId("publisher");
    await expect(row).toHaveCount(1);
    await expect(row).toContainText("acme/api");
    await expect(row).toContainText("ids pinned by the first job");
    const audience = (await panel.getByTestId("oidc-audience").textContent()) ?? "";

    // The job's token, as GitHub documents its claims, exchanged for a push token.
    const now = Math.floor(Date.now() / 1000);
    const token = signJwt({
      iss: issuer, aud: audience, sub: "repo:acme/api:ref:refs/heads/main",
      jti: `e2e-${now}-${Math.random()}`, iat: now, nbf: now, exp: now + 300,
      ref: "refs/heads/main", sha: "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4",
      repository: "acme/api", repository_owner: "acme", repository_owner_id: "1001",
      repository_id: "2002", run_id: "9000000001", run_attempt: "1", event_name: "push",
      workflow_ref: "acme/api/.github/workflows/ci.yml@refs/heads/main", ref_type: "branch",
    });
    const exchanged = await request.post("/v1/auth/oidc/exchange", { data: { token } });
    expect(exchanged.status(), await exchanged.text()).toBe(201);
    const pushToken = (await exchanged.json()).token;
    const pushed = await request.post("/v1/dashboard/push", {
      headers: { Authorization: `Bearer ${pushToken}` },
      data: scan("e2e/api", 0, 88, []),
    });
    expect(pushed.status(), await pushed.text()).toBe(201);
    const answer = await pushed.json();
    expect(answer.branch).toBe("main");

    await page.goto(new URL(answer.dashboard_url).pathname);
    const provenance = page.getByTestId("scan-pushed-by");
    await expect(provenance).toContainText("Keyless CI · GitHub Actions acme/api");
    await expect(provenance).toContainText(".github/workflows/ci.yml");
    await expect(provenance.getByRole("link", { name: "run 9000000001" })).toHaveAttribute(
      "href", `${issuer.replace("/_services/token", "")}/acme/api/actions/runs/9000000001`);
    await page.screenshot({ path: "test-results/scan-keyless.png", fullPage: true });

    // The first token pinned the repository's ids; removing the publisher ends its tokens.
    await page.goto("/settings/publishers");
    const pinned = page.getByTestId("publishers").getByTestId("publisher");
    await expect(pinned).toContainText("ids 1001 / 2002");
    await page.getByTestId("publishers").screenshot({ path: "test-results/settings-publishers.png" });
    page.once("dialog", (dialog) => void dialog.accept());
    await pinned.getByRole("button", { name: "Remove" }).click();
    await expect(page.getByTestId("publishers").getByTestId("publisher")).toHaveCount(0);
    const after = await request.post("/v1/dashboard/push", {
      headers: { Authorization: `Bearer ${pushToken}` },
      data: scan("e2e/api", 0, 89, []),
    });
    expect(after.status()).toBe(401);
  } finally {
    server.close();
  }
});

test("an admin downloads a signed offline licence file in Settings", async ({ page, request }) => {
  await signIn(page, ADMIN);
  await page.goto("/settings/license");
  // Features in words, not the API's snake_case names.
  await expect(page.getByText("Hosted dashboard, Drift detection")).toBeVisible();
  const form = page.getByTestId("offline-file");
  await form.getByLabel("Days").fill("14");
  await form.getByLabel("Machine fingerprint (optional)").fill("sha256:e2e-air-gapped");
  await form.screenshot({ path: "test-results/settings-offline-licence.png" });
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    form.getByRole("button", { name: "Download offline license file" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("tidemark-offline-licence.json");
  const file = JSON.parse(fs.readFileSync(await download.path(), "utf8"));
  expect(file.format).toBe("tidemark-offline-licence");

  // Its verdict verifies with the published key (node:crypto's Ed25519, not our code).
  const [head, body, signature] = file.verdict.split(".");
  const header = JSON.parse(Buffer.from(head, "base64url").toString());
  expect(header).toMatchObject({ alg: "EdDSA", typ: "tidemark-offline-licence+jwt" });
  const published = await (await request.get("/v1/keys")).json();
  const jwk = published.keys.find((k: any) => k.kid === header.kid);
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  expect(cryptoVerify(null, Buffer.from(`${head}.${body}`), key, Buffer.from(signature, "base64url"))).toBe(true);
  const claims = JSON.parse(Buffer.from(body, "base64url").toString());
  expect(claims.machine).toBe("sha256:e2e-air-gapped");
  expect(claims.exp - claims.iat).toBe(14 * 86_400);
  expect(claims.sub).toBe(`sha256:${createHash("sha256").update(createHash("sha256").update(LICENSE_KEY).digest("hex")).digest("hex")}`);

  // Issuing it is in the audit log.
  await page.goto("/settings/audit");
  await expect(page.getByTestId("audit-log").getByTestId("audit-row").first()).toHaveAttribute("data-action", "license.offline_file_issued");
  // The licence's own events say what they were made to in words, not by the licence's id.
  await page.goto("/settings/audit?action=license.created");
  const created = page.getByTestId("audit-log").getByTestId("audit-row").first();
  await expect(created).toHaveAttribute("data-action", "license.created");
  await expect(created).toContainText("this account's license");
  await expect(created).not.toContainText("lcn_");
});

test("the findings inbox: filters, a saved view, the sticky bar's count, a triage across projects, the CSV", async ({ page, request }) => {
  test.setTimeout(60_000);
  // The live project (e2e/web was archived above) finds what the web app's last scan found.
  const pushed = await push(request, apiKey, scan("e2e/api", 0, 64, latest));
  expect(pushed.status(), await pushed.text()).toBe(201);
  await signIn(page, ADMIN);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto("/findings");
    await expect(page.getByRole("link", { name: "Findings" }).first()).toBeVisible();
    const rows = page.getByTestId("inbox-table").locator("tbody tr");
    await expect(rows.first()).toBeVisible();
    const bar = page.getByTestId("bulk-bar");
    const submit = bar.getByRole("button", { name: "Set aside" });
    // Nothing ticked: the count says so and the button cannot be pressed.
    await expect(bar).toContainText("0 selected");
    await expect(submit).toBeDisabled();
    await rows.first().getByRole("checkbox").check();
    await expect(bar).toContainText("1 selected");
    await expect(submit).toBeEnabled();
    if (width === 1280) {
      // The header's box (a phone reads the table as cards, without its header row).
      await page.getByRole("checkbox", { name: "Select every finding on this page" }).check();
      await expect(bar).toContainText(`${await rows.count()} selected`);
      await page.getByRole("checkbox", { name: "Select every finding on this page" }).uncheck();
    } else {
      await rows.first().getByRole("checkbox").uncheck();
    }
    await expect(bar).toContainText("0 selected");
    await expect(submit).toBeDisabled();
    await page.screenshot({ path: `test-results/inbox-${width}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  // A filter, then the view saved by name and opened again from its link.
  const filters = page.getByTestId("inbox-filters");
  await filters.getByLabel("Severity").selectOption("critical");
  await filters.getByRole("button", { name: "Apply" }).click();
  await expect(page).toHaveURL(/\/findings\?.*severity=critical/);
  const rows = page.getByTestId("inbox-table").locator("tbody tr");
  await expect(rows.filter({ hasText: "vpc.main" })).toHaveCount(1);
  await expect(rows.filter({ hasText: "bucket.logs" })).toHaveCount(0);
  const save = page.getByTestId("save-view");
  await save.getByLabel("Name").fill("E2E criticals");
  await save.getByRole("button", { name: "Save this view" }).click();
  await expect(page.getByTestId("saved-views").getByRole("link", { name: "E2E criticals" })).toBeVisible();
  await page.goto("/findings");
  await page.getByTestId("saved-views").getByRole("link", { name: "E2E criticals" }).click();
  await expect(page).toHaveURL(/severity=critical/);
  // The CSV of the view.
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download this view as CSV" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("findings.csv");
  // Set aside from the bar: won't fix keeps it failing (posture unchanged for the tests after).
  await rows.filter({ hasText: "vpc.main" }).getByRole("checkbox").check();
  const bar = page.getByTestId("bulk-bar");
  await bar.getByLabel("Set aside as").selectOption("wont_fix");
  await bar.getByLabel("Reason").fill("Legacy VPC, replaced next quarter");
  await bar.getByRole("button", { name: "Set aside" }).click();
  await expect(page.getByTestId("inbox-triage-notice")).toContainText("1 finding set aside.");
  await expect(page).toHaveURL(/severity=critical&triaged=saved&count=1/);
  await expect(rows.filter({ hasText: "vpc.main" })).toContainText("won't fix (still failing) by");
});

test("every page passes axe, light and dark, and fits a 390 px phone as well as a 1280 px screen", async ({ page, browser }) => {
  // Once, in the last phase (as deployed, behind the proxy): Playwright empties test-results/
  // at the start of each run, so the screenshots of the last one are the ones kept.
  test.skip(process.env.TIDEMARK_E2E_DEPLOYED !== "1", "pages are audited once, in the deployed phase");
  // Some 30 pages, each loaded, audited and photographed at two widths, and audited dark.
  test.setTimeout(180_000);
  // Signed out first: the landing and sign-in pages.
  const guestContext = await browser.newContext();
  const guest = await guestContext.newPage();
  const shots: [string, string][] = [["landing", "/"], ["signin", "/signin"]];
  for (const width of [1280, 390]) {
    await guest.setViewportSize({ width, height: 900 });
    for (const [name, url] of shots) {
      await guest.goto(url);
      await expectAccessible(guest, `${url} at ${width}px`);
      await expectNoSidewaysScroll(guest, `${url} at ${width}px`);
      await guest.screenshot({ path: `test-results/pages/${name}-${width}.png`, fullPage: true });
    }
  }
  await guest.emulateMedia({ colorScheme: "dark" });
  for (const [, url] of shots) {
    await guest.goto(url);
    await expectAccessible(guest, `${url} in the dark scheme`);
  }
  await guestContext.close();

  await signIn(page, ADMIN);
  await page.goto(projectUrl);
  const scanUrl = new URL((await page.getByTestId("history-chart").locator("a").last().getAttribute("href")) ?? "", page.url()).pathname;
  await page.goto(`${scanUrl}?view=all`);
  const findingUrl = (await page.getByTestId("findings-table").locator('a[href*="/findings/"]').first().getAttribute("href")) ?? "";
  expect(findingUrl).toMatch(/\/findings\/fnd_/);
  await page.goto(projectUrl);
  // The chart's text alternative says what the picture shows.
  await expect(page.getByTestId("history-chart")).toHaveAttribute("aria-label", /^Score history: \d+ scans?; from [\d.]+ on \d{4}-\d{2}-\d{2} to [\d.]+ on /);
  const pages: [string, string][] = [
    ["projects", "/projects"],
    ["project", new URL(projectUrl, page.url()).pathname],
    ["pull-request", `${new URL(projectUrl, page.url()).pathname}?pr=7`],
    ["pull-requests", `${new URL(projectUrl, page.url()).pathname}?tab=pulls`],
    ["framework", `${new URL(projectUrl, page.url()).pathname}/frameworks/cis-aws-2.0`],
    ["scan", scanUrl],
    ["scan-all", `${scanUrl}?view=all`],
    ["scan-triaged", `${scanUrl}?view=triaged`],
    ["finding", findingUrl],
    ["requirement", "/requirements/cis-aws-2.0-3.4"],
    ["inbox", "/findings"],
    ...["keys", "license", "machines", "members", "sso", "projects", "frameworks", "storage", "alerts", "badges", "webhooks", "publishers", "provisioning", "audit"]
      .map((s): [string, string] => [`settings-${s}`, `/settings/${s}`]),
    ["not-found", "/no-such-page"],
  ];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [name, url] of pages) {
      await page.goto(url);
      await expectAccessible(page, `${url} at ${width}px`);
      await expectNoSidewaysScroll(page, `${url} at ${width}px`);
      if (width === 390) await expectTablesReadOnPhones(page, `${url} at ${width}px`);
      else await expectTablesFit(page, `${url} at ${width}px`);
      await page.screenshot({ path: `test-results/pages/${name}-${width}.png`, fullPage: true });
    }
  }
  // The dark colour scheme too (axe at the desktop width; the layout is the same).
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: "dark" });
  for (const [name, url] of pages) {
    await page.goto(url);
    await expectAccessible(page, `${url} in the dark scheme`);
    if (name === "project" || name === "scan" || name === "settings-keys") {
      await page.screenshot({ path: `test-results/pages/${name}-dark.png`, fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  // Keyboard focus is visible: a focused link draws an outline.
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto("/projects");
  await page.keyboard.press("Tab");
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
  expect(outline).not.toBe("none");
});
