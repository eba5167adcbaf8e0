import { test, expect, expectAccessible, expectNoSidewaysScroll, signInWithOidc } from "./support";
import type { Page } from "@playwright/test";

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
