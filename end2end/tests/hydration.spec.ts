import { test as unguarded, type ConsoleMessage } from "@playwright/test";
import { expect, test, watchCsp } from "./support";

test("the landing page is server-rendered, then hydrated and interactive", async ({ page }) => {
  const problems: string[] = [];
  page.on("console", (msg: ConsoleMessage) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(msg.text());
  });
  page.on("pageerror", (err) => problems.push(err.message));

  const wasm = page.waitForResponse((r) => r.url().endsWith(".wasm") && r.ok());
  await page.goto("/");
  await wasm;

  // Server-rendered content is there before any script runs.
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(
    "Compliance scores, tracked over time.",
  );
  const snippet = page.getByTestId("push-snippet");
  await expect(snippet).toContainText("curl");

  // A marker on window survives only if the page is not reloaded.
  await page.evaluate(() => ((window as unknown as { tidemarkMarker: number }).tidemarkMarker = 42));

  // Clicking a tab re-renders the snippet: only hydrated WASM can do that.
  const github = page.getByRole("tab", { name: "GitHub Actions" });
  await expect(async () => {
    await github.click();
    await expect(github).toHaveAttribute("aria-selected", "true", { timeout: 500 });
  }).toPass({ timeout: 15_000 });
  await expect(snippet).toContainText("secrets.TIDEMARK_API_KEY");
  await expect(snippet).not.toContainText("curl -sS");

  await page.getByRole("tab", { name: "GitLab CI" }).click();
  await expect(snippet).toContainText("CI_PROJECT_PATH");

  const marker = await page.evaluate(
    () => (window as unknown as { tidemarkMarker?: number }).tidemarkMarker,
  );
  expect(marker).toBe(42);

  await page.screenshot({ path: "test-results/landing.png", fullPage: true });
  expect(problems, problems.join("\n")).toEqual([]);
});

test("an unknown page is a 404 with a way back", async ({ page }) => {
  const res = await page.goto("/no/such/page");
  expect(res?.status()).toBe(404);
  await expect(page.getByRole("link", { name: "Back to the start page" })).toBeVisible();
});

unguarded("the page policy stops an injected inline script, and the guard sees it", async ({ browser, baseURL }) => {
  const context = await browser.newContext();
  const violations = await watchCsp(context, new URL(baseURL ?? "").origin);
  const page = await context.newPage();
  await page.goto("/signin");
  const ran = await page.evaluate(() => {
    const injected = document.createElement("script");
    injected.textContent = "window.__injected = true";
    document.body.append(injected);
    return (window as unknown as { __injected?: boolean }).__injected === true;
  });
  expect(ran).toBe(false);
  await expect.poll(() => violations.length).toBeGreaterThan(0);
  expect(violations.join("\n")).toContain("script-src");
  await context.close();
});
