import fs from "node:fs";
import { type Page } from "@playwright/test";
import { expect, test, signInWithOidc } from "./support";

// scripts/e2e.sh: the victim's enterprise account (admin ADMIN, at e2e.example), a second
// enterprise account (ATTACKER), a real samlify IdP, and a real DNS server on loopback that
// answers from DNS_RECORDS (the server resolves through it: TIDEMARK_DNS_RESOLVER).
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";
const ATTACKER = process.env.TIDEMARK_E2E_ATTACKER ?? "";
const SAML = process.env.TIDEMARK_E2E_SAML ?? "";
const DNS_RECORDS = process.env.TIDEMARK_E2E_DNS_RECORDS ?? "";
const VICTIM_DOMAIN = ADMIN.split("@")[1] ?? "";

test.describe.configure({ mode: "serial" });

function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(msg.text());
  });
  page.on("pageerror", (err) => problems.push(err.message));
  return problems;
}

async function signOut(page: Page) {
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/signin\?signed_out=1$/);
}

async function claimDomain(page: Page, domain: string, enforce: boolean) {
  const metadata = await (await page.request.get(`${SAML}/metadata`)).text();
  await page.goto("/settings/sso");
  await page.getByLabel("E-mail domain").fill(domain);
  await page.getByLabel("IdP metadata (SAML 2.0 XML; it must name a signing certificate)").fill(metadata);
  if (enforce) await page.getByLabel(/Enforce: once verified/).check();
  await page.getByRole("button", { name: "Save SSO" }).click();
  const claim = page.locator(`[data-domain="${domain}"]`);
  await expect(claim).toHaveAttribute("data-state", "pending verification");
  return claim;
}

function publish(records: Record<string, string[]>) {
  fs.writeFileSync(`${DNS_RECORDS}.tmp`, JSON.stringify(records));
  fs.renameSync(`${DNS_RECORDS}.tmp`, DNS_RECORDS);
}

test.beforeAll(() => {
  expect(ATTACKER, "TIDEMARK_E2E_ATTACKER is set by scripts/e2e.sh").not.toBe("");
  expect(DNS_RECORDS).not.toBe("");
  publish({});
});

test("another account's claim of the victim's domain routes nobody and enforces nothing", async ({ page, context }) => {
  const problems = watchConsole(page);
  // The attacker, admin of their own enterprise account, types the victim's domain into
  // Settings, pastes the metadata of an IdP they control, ticks Enforce and saves.
  await signInWithOidc(page, ATTACKER);
  const claim = await claimDomain(page, VICTIM_DOMAIN, true);
  await expect(claim).toContainText("enforcement starts once verified");
  await expect(claim.getByTestId("dns-record-name")).toHaveText(`_tidemark-challenge.${VICTIM_DOMAIN}`);
  await expect(claim.getByTestId("dns-record-value")).toHaveText(/^tidemark-domain-verification=[0-9a-f]{32}$/);
  // Without the victim's DNS, the claim cannot be verified.
  await claim.getByRole("button", { name: "Verify now" }).click();
  await expect(claim.getByTestId("sso-check")).toContainText("does not exist in DNS yet (NXDOMAIN)");
  await expect(claim).toHaveAttribute("data-state", "pending verification");
  await page.screenshot({ path: "test-results/sso-pending-claim.png", fullPage: true });
  await signOut(page);
  await context.clearCookies();

  // The victim still signs in with OpenID Connect (not routed to the attacker's IdP, not
  // refused as "SAML required"), into their own account.
  await signInWithOidc(page, ADMIN);
  await expect(page.getByTestId("signed-in-as")).toContainText("admin");
  await expect(page).toHaveURL(/\/projects$/);
  expect(page.url().startsWith(SAML)).toBe(false);
  expect(problems, problems.join("\n")).toEqual([]);
});

test("the domain's owner proves it with a DNS record and the other claim ends", async ({ page, context }) => {
  const problems = watchConsole(page);
  await signInWithOidc(page, ADMIN);
  const claim = await claimDomain(page, VICTIM_DOMAIN, false);
  const name = (await claim.getByTestId("dns-record-name").textContent()) ?? "";
  const value = (await claim.getByTestId("dns-record-value").textContent()) ?? "";
  // A wrong token first: still pending, and Settings says what was found.
  publish({ [name]: ["tidemark-domain-verification=00000000000000000000000000000000"] });
  await claim.getByRole("button", { name: "Verify now" }).click();
  await expect(claim.getByTestId("sso-check")).toContainText("different token");
  // The right record verifies it.
  publish({ [name]: [value] });
  await claim.getByRole("button", { name: "Verify now" }).click();
  await expect(claim).toHaveAttribute("data-state", "verified");
  await page.screenshot({ path: "test-results/sso-verified-claim.png", fullPage: true });
  await signOut(page);
  await context.clearCookies();

  // The attacker's Settings says their claim ended, and why.
  await signInWithOidc(page, ATTACKER);
  await page.goto("/settings/sso");
  const ended = page.locator(`[data-domain="${VICTIM_DOMAIN}"]`);
  await expect(ended).toHaveAttribute("data-state", "ended");
  await expect(ended.getByTestId("sso-ended")).toContainText("Another account proved that it owns this domain first.");
  await ended.getByRole("button", { name: `Remove SSO for ${VICTIM_DOMAIN}` }).click();
  await expect(page.locator(`[data-domain="${VICTIM_DOMAIN}"]`)).toHaveCount(0);
  await signOut(page);
  await context.clearCookies();

  // Now the domain routes to its owner's IdP: the victim's address goes to SAML. The owner
  // removes the claim again so that the other suites' OpenID sign-ins are unaffected.
  await page.goto("/signin");
  await page.getByLabel("E-mail address").fill(ADMIN);
  await page.getByRole("button", { name: "Continue" }).click();
  await expect(page).toHaveURL(new RegExp(`^${SAML}/sso\\?SAMLRequest=`));
  await page.getByLabel("Work e-mail").fill(ADMIN);
  await page.getByRole("button", { name: "Sign in with SSO" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText(ADMIN);
  await page.goto("/settings/sso");
  expect(problems, problems.join("\n")).toEqual([]);
  // Removing a verified domain ends its people's sessions, the admin's own included: the
  // page the form goes back to asks them to sign in again, and back to where they were.
  await page.getByRole("button", { name: `Remove SSO for ${VICTIM_DOMAIN}` }).click();
  await expect(page).toHaveURL(/\/signin\?next=.*settings.*sso/);
  expect(problems, problems.join("\n")).toEqual([]);
  await page.goto("/settings");
  await expect(page).toHaveURL(/\/signin\?next=/);
  publish({});
});
