import { type ConsoleMessage } from "@playwright/test";
import { expect, test } from "./support";

// Started by scripts/e2e.sh: a real OpenID provider (npm oidc-provider) on http://localhost,
// a different site from the app on http://127.0.0.1, and an account whose admin is ADMIN.
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";
const OIDC = process.env.TIDEMARK_E2E_OIDC ?? "";

test.beforeAll(() => {
  expect(ADMIN, "TIDEMARK_E2E_ADMIN is set by scripts/e2e.sh").not.toBe("");
  expect(OIDC).toMatch(/^http:\/\/localhost:\d+$/);
});

test("a member signs in with OpenID Connect across sites and reaches the dashboard", async ({ page, context }) => {
  const problems: string[] = [];
  page.on("console", (msg: ConsoleMessage) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(msg.text());
  });
  page.on("pageerror", (err) => problems.push(err.message));

  await page.goto("/projects");
  await expect(page).toHaveURL(/\/signin\?next=/);
  await page.getByLabel("E-mail address").fill(ADMIN);
  await page.getByRole("button", { name: "Continue" }).click();

  // At the provider: another site.
  await expect(page).toHaveURL(new RegExp(`^${OIDC}/interaction/`));
  await expect(page.getByRole("note")).toContainText("Test identity provider");
  await expect(page.getByLabel("E-mail address")).toHaveValue(ADMIN);
  await page.getByRole("button", { name: "Sign in" }).click();

  // Back, signed in, on the page we first asked for.
  await expect(page).toHaveURL(/127\.0\.0\.1:\d+\/projects$/);
  await expect(page.getByTestId("signed-in-as")).toContainText(ADMIN);
  await expect(page.getByTestId("signed-in-as")).toContainText("admin");

  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "__Host-tidemark_session");
  expect(session, JSON.stringify(cookies)).toBeDefined();
  expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict", path: "/" });
  expect(session?.domain).toBe("127.0.0.1"); // host-only: no Domain attribute
  expect(cookies.find((c) => c.name === "__Host-tidemark_login")).toBeUndefined();
  await page.screenshot({ path: "test-results/signed-in.png", fullPage: true });

  // A reload keeps the session (the Strict cookie is sent on same-site navigations).
  await page.reload();
  await expect(page.getByTestId("signed-in-as")).toContainText(ADMIN);

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/signin\?signed_out=1$/);
  await expect(page.getByRole("status")).toHaveText("You are signed out.");
  await page.goto("/projects");
  await expect(page).toHaveURL(/\/signin\?next=/);
  expect(problems, problems.join("\n")).toEqual([]);
});

test("someone who is not a member gets a clear no-access page", async ({ page }) => {
  await page.goto("/signin");
  await page.getByLabel("E-mail address").fill("stranger@e2e.example");
  await page.getByRole("button", { name: "Continue" }).click();
  await expect(page).toHaveURL(new RegExp(`^${OIDC}/interaction/`));
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/signin\?error=no_access/);
  await expect(page.getByRole("alert")).toContainText("not a member of any Tidemark account");
  await page.screenshot({ path: "test-results/no-access.png", fullPage: true });
  const cookies = await page.context().cookies();
  expect(cookies.find((c) => c.name === "__Host-tidemark_session")).toBeUndefined();
});

const SAML_MEMBER = process.env.TIDEMARK_E2E_SAML_MEMBER ?? "";
const SAML = process.env.TIDEMARK_E2E_SAML ?? "";

test("a member of a SAML domain signs in through the company IdP", async ({ page, context }) => {
  expect(SAML).toMatch(/^http:\/\/localhost:\d+$/);
  const problems: string[] = [];
  page.on("console", (msg: ConsoleMessage) => {
    if (msg.type() === "error" || msg.type() === "warning") problems.push(msg.text());
  });

  await page.goto("/signin");
  await page.getByLabel("E-mail address").fill(SAML_MEMBER);
  await page.getByRole("button", { name: "Continue" }).click();

  // The domain is routed to its SAML IdP (another site), not to OpenID Connect.
  await expect(page).toHaveURL(new RegExp(`^${SAML}/sso\\?SAMLRequest=`));
  await expect(page.getByRole("note")).toHaveText("Test SAML identity provider");
  await page.getByLabel("Work e-mail").fill(SAML_MEMBER);
  await page.screenshot({ path: "test-results/saml-idp.png", fullPage: true });
  // The IdP answers with a cross-site POST to /saml/acs.
  await page.getByRole("button", { name: "Sign in with SSO" }).click();

  await expect(page).toHaveURL(/127\.0\.0\.1:\d+\/projects$/);
  await expect(page.getByTestId("signed-in-as")).toContainText(SAML_MEMBER);
  await expect(page.getByTestId("signed-in-as")).toContainText("member");
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "__Host-tidemark_session");
  expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict", path: "/" });
  expect(session?.domain).toBe("127.0.0.1");
  expect(cookies.find((c) => c.name === "__Host-tidemark_login")).toBeUndefined();
  expect(problems, problems.join("\n")).toEqual([]);
});

test("every page has a title of its own, and the first Tab stop skips to the content", async ({ page }) => {
  for (const [url, title] of [
    ["/", "Tidemark · compliance scores, tracked over time"],
    ["/signin", "Sign in · Tidemark"],
    ["/no-such-page", "Page not found · Tidemark"],
  ]) {
    await page.goto(url);
    await expect(page).toHaveTitle(title);
  }
  await page.goto("/signin");
  await page.keyboard.press("Tab");
  const skip = page.getByRole("link", { name: "Skip to content" });
  await expect(skip).toBeFocused();
  await expect(skip).toBeInViewport();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/#main$/);
  await expect(page.locator("main#main")).toBeFocused();
});
