import { test, expect, expectAccessible, expectNoSidewaysScroll, signInWithOidc } from "./support";
import type { Page } from "@playwright/test";
import { readFileSync } from "node:fs";

// The vendor's console, signed in through the staff's own OpenID provider (npm
// oidc-provider, started by scripts/e2e.sh with --staff) as each role; its groups are ticked
// on its sign-in form and changed through its /groups endpoint, as an admin there would.
const STAFF_OIDC = process.env.TIDEMARK_E2E_STAFF_OIDC ?? "";
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";

const ROLES: Array<[string, string]> = [
  ["vendor-admins", "admin"],
  ["sellers", "sales"],
  ["helpdesk", "support"],
  ["everyone", "read"],
];

async function staffSignIn(page: Page, email: string, groups: string[]) {
  await page.goto("/console");
  await expect(page).toHaveURL(/\/console\/sign-in\?next=/);
  await page.getByRole("button", { name: "Sign in with the staff identity provider" }).click();
  await expect(page).toHaveURL(new RegExp(`^${STAFF_OIDC}/interaction/`));
  await page.getByLabel("E-mail address").fill(email);
  for (const group of groups) await page.getByLabel(group).check();
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Find a customer" })).toBeVisible();
}

for (const [group, role] of ROLES) {
  test(`staff in ${group} open the console as ${role}, find a customer and read the licence`, async ({ page }) => {
    const email = `${role}-staff@vendor-e2e.example`;
    await staffSignIn(page, email, [group]);
    await expect(page.locator("header")).toContainText(`${email} · ${role}`);
    await page.getByLabel("E-mail, licence, account, API key or machine").fill(ADMIN.toUpperCase());
    await page.getByRole("button", { name: "Search" }).click();
    const row = page.getByRole("row").filter({ hasText: ADMIN });
    await expect(row).toContainText("licence e-mail");
    await expect(row).toContainText("enterprise");
    await row.getByRole("link").click();
    await expect(page.getByRole("heading", { name: /^Licence lcn_/ })).toBeVisible();
    await expect(page.getByRole("heading", { name: "Seats" })).toBeVisible();
    await expect(page.getByRole("heading", { name: "Use over 90 days" })).toBeVisible();
    await expect(page.getByRole("heading", { name: "Audit trail" })).toBeVisible();
    // No script runs in the console: no WASM, no JS.
    const scripts = await page.locator("script").count();
    expect(scripts).toBe(0);
  });
}

test("the console is accessible and light in light, dark and at 390 px", async ({ page, browser }) => {
  await staffSignIn(page, "looker@vendor-e2e.example", ["everyone"]);
  await page.getByLabel("E-mail, licence, account, API key or machine").fill(ADMIN);
  await page.getByRole("button", { name: "Search" }).click();
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await expectAccessible(page, `the search (${scheme})`);
  }
  await page.getByRole("row").filter({ hasText: ADMIN }).getByRole("link").click();
  const licence = page.url();
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await expectAccessible(page, `a licence (${scheme})`);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(page, "a licence at 390 px");
  await expectNoSidewaysScroll(page, "a licence at 390 px");

  // A first visit (nothing cached) of a licence page, everything it loads: within the
  // dashboard's budget of 120 KiB, and no script at all.
  const fresh = await browser.newContext({ baseURL: new URL(licence).origin, ignoreHTTPSErrors: false });
  await fresh.addCookies(await page.context().cookies());
  const first = await fresh.newPage();
  const loaded: Array<[string, number]> = [];
  first.on("response", async (res) => loaded.push([res.url(), (await res.body().catch(() => Buffer.alloc(0))).length]));
  await first.goto(licence);
  await expect(first.getByRole("heading", { name: "Seats" })).toBeVisible();
  await first.waitForLoadState("networkidle");
  const total = loaded.reduce((sum, [, n]) => sum + n, 0);
  console.log(`console licence page: ${total} bytes in ${loaded.length} responses`);
  expect(total, JSON.stringify(loaded)).toBeLessThanOrEqual(120 * 1024);
  expect(loaded.filter(([url]) => /\.(js|wasm)(\?|$)/.test(url))).toEqual([]);
  await fresh.close();
});

test("someone taken out of every staff group loses the console at the next request", async ({ page, request }) => {
  const email = "leaver@vendor-e2e.example";
  await staffSignIn(page, email, ["helpdesk"]);
  const form = new URLSearchParams({ email, groups: "" });
  const changed = await request.post(`${STAFF_OIDC}/groups`, {
    headers: { "content-type": "application/x-www-form-urlencoded" },
    data: form.toString(),
  });
  expect(changed.status()).toBe(204);
  const res = await page.goto("/console");
  expect(res?.status()).toBe(403);
  await expect(page.getByRole("heading", { name: "Your console access has ended" })).toBeVisible();
  await page.goto("/console");
  await expect(page).toHaveURL(/\/console\/sign-in/);
});

test("a customer's session does not open the console, nor a staff session the dashboard", async ({ page }) => {
  await signInWithOidc(page, ADMIN);
  await page.goto("/console");
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await staffSignIn(page, "both@vendor-e2e.example", ["everyone"]);
  // The customer's session is still the customer's: it never became a staff one, and back.
  await page.context().clearCookies({ name: "__Host-tidemark_session" });
  await page.goto("/projects");
  await expect(page).toHaveURL(/\/signin/);
});

// Actions on a licence of its own (scripts/e2e.sh makes it), as each role may take them.
const CUSTOMER = process.env.TIDEMARK_E2E_CONSOLE_CUSTOMER ?? "";

async function openCustomer(page: Page) {
  await page.getByLabel("E-mail, licence, account, API key or machine").fill(CUSTOMER);
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByRole("row").filter({ hasText: CUSTOMER }).getByRole("link").click();
  await expect(page.getByRole("heading", { name: "Actions" })).toBeVisible();
}

const actionsOf = async (page: Page) =>
  (await page.locator("details.action").evaluateAll((all) => all.map((d) => d.getAttribute("data-testid"))))
    .map((id) => (id ?? "").replace(/^action-/, ""));

async function confirmAction(page: Page, summary: string, fill: (page: Page) => Promise<void>, sentence: RegExp) {
  await page.locator("details.action summary", { hasText: summary }).click();
  await fill(page);
  await page.getByRole("button", { name: `${summary}…` }).click();
  // Nothing is done yet: a page says what will change.
  await expect(page.getByTestId("confirm-sentence")).toHaveText(sentence);
  await page.getByRole("button", { name: "Confirm" }).click();
}

test("sales changes the tier, confirmed; the page says so and the audit names them", async ({ page }) => {
  const email = "seller@vendor-e2e.example";
  await staffSignIn(page, email, ["sellers"]);
  await openCustomer(page);
  expect(await actionsOf(page)).toEqual(["extend", "expiry", "tier", "seats", "features", "max-projects"]);
  await confirmAction(
    page,
    "Change the tier",
    (p) => p.locator('select[name="tier"]').selectOption("agency"),
    /from team to agency/,
  );
  await expect(page.getByTestId("done")).toHaveText("The tier is changed.");
  await expect(page.locator("dl.meta")).toContainText("agency");
  await expect(page.getByRole("row").filter({ hasText: `staff:${email}` }).first()).toContainText("entitlements");
  // A reload of the landing page repeats nothing: it is a GET.
  await page.reload();
  await expect(page.locator("dl.meta")).toContainText("agency");
});

test("support extends by two weeks and suspends with a reason, and may not go further", async ({ page }) => {
  await staffSignIn(page, "helper@vendor-e2e.example", ["helpdesk"]);
  await openCustomer(page);
  expect(await actionsOf(page)).toEqual(["extend", "suspend", "resend", "offline-file"]);
  const before = await page.locator("dl.meta dd").nth(2).textContent();
  await confirmAction(page, "Extend", (p) => p.getByLabel("Days").first().fill("14"), /by 14 days/);
  await expect(page.getByTestId("done")).toHaveText("The expiry is moved.");
  expect(await page.locator("dl.meta dd").nth(2).textContent()).not.toBe(before);

  await confirmAction(
    page,
    "Suspend",
    (p) => p.getByLabel("Reason (kept in the audit log)").fill("card declined"),
    /Reason: card declined/,
  );
  await expect(page.getByTestId("done")).toHaveText("The licence is suspended.");
  await expect(page.locator("dl.meta")).toContainText("suspended");
  expect(await actionsOf(page)).toContain("resume");
  await confirmAction(
    page,
    "Resume",
    (p) => p.getByLabel("Reason (kept in the audit log)").fill("paid"),
    /Reason: paid/,
  );
  await expect(page.getByTestId("done")).toHaveText("The licence is resumed.");

  // A hand-made post past support's reach is refused, naming who may.
  const res = await page.request.post(`${new URL(page.url()).pathname}/actions/extend`, {
    form: { days: "90" },
    headers: { Origin: new URL(page.url()).origin },
  });
  expect(res.status()).toBe(403);
  expect(await res.text()).toContain("This needs the admin or sales role");
});

test("an admin sees every action, the forms and the confirmation are accessible, and read may do nothing", async ({ page }) => {
  await staffSignIn(page, "boss@vendor-e2e.example", ["vendor-admins"]);
  await openCustomer(page);
  expect(await actionsOf(page)).toEqual([
    "extend", "expiry", "suspend", "tier", "seats", "features", "max-projects", "resend", "offline-file",
  ]);
  // The pictures in docs/console.md (first phase only; scripts/docs-screens.sh copies them).
  const pictures = !process.env.TIDEMARK_E2E_DEPLOYED;
  if (pictures) {
    await page.locator("details.action summary", { hasText: "Extend" }).first().click();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 800 });
      await page.screenshot({ path: `screens/console-licence-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.locator("details.action summary", { hasText: "Extend" }).first().click();
  }
  for (const summary of await page.locator("details.action summary").all()) await summary.click();
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await expectAccessible(page, `the actions (${scheme})`);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoSidewaysScroll(page, "the actions at 390 px");
  await page.setViewportSize({ width: 1280, height: 800 });
  // Every form is open from the checks above.
  await page.getByRole("button", { name: "Download an offline file…" }).click();
  await expect(page.getByTestId("confirm-sentence")).toContainText("running 30 days");
  await expectAccessible(page, "a confirmation");
  if (pictures) await page.screenshot({ path: "screens/console-confirm-1280.png" });
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Confirm" }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/^tidemark-offline-lcn_.*\.json$/);

  const reader = await page.context().browser()!.newContext({ baseURL: new URL(page.url()).origin });
  const readerPage = await reader.newPage();
  await staffSignIn(readerPage, "looker2@vendor-e2e.example", ["everyone"]);
  await openCustomer(readerPage);
  await expect(readerPage.getByTestId("no-actions")).toBeVisible();
  await reader.close();
});

test("the business at a glance: each figure a chart with its table and CSV, accessible and light", async ({ page, browser }) => {
  await staffSignIn(page, "analyst@vendor-e2e.example", ["everyone"]);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Business" }).click();
  await expect(page.getByRole("heading", { name: "The business" })).toBeVisible();
  for (const heading of [
    "Expiring in the next 30 days",
    "Licences in force by tier",
    "Made and ended per month",
    "Validations and active machines per day",
    "Clients in the field",
    "Seat use per tier",
  ]) {
    await expect(page.getByRole("heading", { name: heading, exact: true })).toBeVisible();
  }
  // The e2e accounts (and the console's customer) are in force now.
  await expect(page.getByTestId("in-force").locator("details summary")).toContainText("as a table");
  for (const summary of await page.locator("details.figure-table summary").all()) {
    if (!(await summary.locator("xpath=..").getAttribute("open"))) await summary.click();
  }
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await expectAccessible(page, `the business (${scheme})`);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await expectNoSidewaysScroll(page, "the business at 390 px");
  await page.setViewportSize({ width: 1280, height: 800 });
  if (!process.env.TIDEMARK_E2E_DEPLOYED) {
    await page.emulateMedia({ colorScheme: "light" });
    await page.reload();
    await page.screenshot({ path: "screens/console-business-1280.png", fullPage: true });
  }

  const download = page.waitForEvent("download");
  await page.getByRole("link", { name: "Download seat use per tier (CSV)" }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(/^tidemark-seats-\d{4}-\d{2}-\d{2}\.csv$/);
  const text = readFileSync(await file.path(), "utf8");
  expect(text.split("\n")[0]).toBe("Tier,Licences in force,Seats held,Seat limit");

  // A first visit within the console's budget, with no script.
  const fresh = await browser.newContext({ baseURL: new URL(page.url()).origin });
  await fresh.addCookies(await page.context().cookies());
  const first = await fresh.newPage();
  let total = 0;
  first.on("response", async (res) => (total += (await res.body().catch(() => Buffer.alloc(0))).length));
  await first.goto("/console/business");
  await first.waitForLoadState("networkidle");
  console.log(`console business page: ${total} bytes`);
  expect(total).toBeLessThanOrEqual(120 * 1024);
  expect(await first.locator("script").count()).toBe(0);
  await fresh.close();
});
