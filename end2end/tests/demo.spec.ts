import { expect, test, signInWithOidc } from "./support";

// The development demo (scripts/e2e.sh seeds it in its first phase) as a newcomer meets it:
// what it shows must be true and believable, and docs/dashboard.md's pictures are taken from
// it here, at 1,280 and 390 px, into end2end/screens/ (kept across phases:
// scripts/docs-screens.sh copies them into docs/screens/).
const DEMO = "demo@tidemark.localhost";

test.describe.configure({ mode: "serial" });

test("the demo's posture reads as a real account's, and its pictures are taken", async ({ page }) => {
  await signInWithOidc(page, DEMO);
  await page.goto("/projects");
  const href = await page.getByRole("link", { name: "acme/payments-api" }).first().getAttribute("href");
  const project = new URL(href ?? "", page.url()).pathname;

  // Across projects: three frameworks, each mostly passing (none at 0 %), two clouds.
  const frameworks = page.getByTestId("rollup-frameworks");
  await expect(frameworks.locator("tbody tr")).toHaveCount(3);
  for (const figure of await frameworks.locator(".share-figure").allTextContents()) {
    expect(Number(figure.replace("%", "")), figure).toBeGreaterThanOrEqual(50);
  }
  await expect(page.getByTestId("rollup-accounts").locator("tbody tr")).toHaveCount(3);

  // A framework's page: a share a compliance lead would believe, with failing sections and
  // passing ones, and no "nothing passed" note.
  await page.goto(`${project}/frameworks/cis-aws-2.0`);
  const share = await page.getByTestId("framework-headline").locator(".big-score").textContent();
  expect(Number((share ?? "0").replace("%", ""))).toBeGreaterThanOrEqual(50);
  expect(Number((share ?? "0").replace("%", ""))).toBeLessThan(100);
  await expect(page.getByTestId("none-passed")).toHaveCount(0);
  // With the published catalogue: all 64 requirements, titled, those no scan checks too.
  await expect(page.getByRole("heading", { level: 1 })).toHaveText("CIS 2.0 (AWS)");
  await expect(page.getByTestId("catalogue-note")).toContainText("All 64 requirements of the CIS 2.0 (AWS) catalogue");
  await expect(page.getByTestId("requirements-table").locator("tbody tr")).toHaveCount(64);
  await expect(page.getByTestId("requirements-table")).toContainText("Maintain current contact details");
  await expect(page.getByTestId("requirements-table").getByText("manual").first()).toBeVisible();

  // The project: its scans paged, its pull request on an older base, CI and laptop pushes.
  await page.goto(project);
  await expect(page.getByTestId("scans-pager")).toHaveText(/^Scans 1–20 of 45 · page 1 of 3$/);
  await page.goto(`${project}?tab=pulls`);
  await expect(page.locator("main")).toContainText("#42");

  // Every picture, at both widths; on a phone the project page stays short.
  const shots: [string, string][] = [
    ["/projects", "projects"], [project, "project"], [`${project}?pr=42`, "pull-request"],
    [`${project}/frameworks/cis-aws-2.0`, "framework"],
    ["/findings", "inbox"], ["/requirements/cis-aws-2.0-2.1.4", "requirement"],
  ];
  const scanHref = await (async () => {
    await page.goto(project);
    return page.locator("table.scans tbody a").first().getAttribute("href");
  })();
  shots.push([`${scanHref}?view=all`, "scan-all"]);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [url, name] of shots) {
      await page.goto(url);
      await page.waitForLoadState("networkidle");
      await page.screenshot({ path: `screens/${name}-${width}.png`, fullPage: true });
    }
  }
  await page.goto(project);
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  // 14,331 px when 45 scans were cards of a label a line; 7,588 with 20 two-column cards.
  expect(height, "the project page on a phone").toBeLessThan(8000);
  const chart = await page.getByTestId("history-chart").boundingBox();
  expect(chart?.height ?? 0, "the score chart is not squashed").toBeGreaterThan(180);
});
