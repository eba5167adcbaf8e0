import { expect, test, signInWithOidc, OIDC } from "./support";

// SCIM deprovisioning as a person lives it: the IdP deactivates them, and their next page load
// is the sign-in page. In the deployed phase the same session cookie is then refused by both
// replicas behind the proxy at once: sessions live in the database, not in either process.
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";
const TOKEN = process.env.TIDEMARK_E2E_SCIM_TOKEN ?? "";
const REPLICAS = (process.env.TIDEMARK_E2E_REPLICAS ?? "").split(" ").filter(Boolean);

const scimHeaders = {
  authorization: `Bearer ${TOKEN}`,
  "content-type": "application/scim+json",
};

test("a person the IdP deactivates is signed out at once, and back with their role when reactivated", async ({ page, browser, playwright, request }) => {
  expect(TOKEN).toMatch(/^tmk_scim_/);
  const email = `scim-${Date.now()}@e2e.example`;
  // Okta's create.
  const created = await request.post("/scim/v2/Users", {
    headers: scimHeaders,
    data: {
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
      userName: email,
      name: { givenName: "Sam", familyName: "Provisioned" },
      emails: [{ primary: true, value: email, type: "work" }],
      active: true,
    },
  });
  expect(created.status()).toBe(201);
  const id = (await created.json()).id as string;

  await signInWithOidc(page, email);
  await page.goto("/projects");
  await expect(page.getByTestId("signed-in-as")).toContainText(email);
  const session = (await page.context().cookies()).find((c) => c.name.endsWith("tidemark_session"));
  expect(session).toBeTruthy();

  // The admin sees them marked as provisioned, with no hand edits offered.
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await signInWithOidc(admin, ADMIN);
  await admin.goto("/settings/members");
  const row = admin.getByTestId("members").locator('tr[data-managed="scim"]', { hasText: email });
  await expect(row).toContainText(`${email} · SCIM`);
  await expect(row).toContainText("Change in your identity provider");
  await expect(row.getByRole("button")).toHaveCount(0);
  await admin.goto("/settings/provisioning");
  await expect(admin.getByTestId("scim-token")).toContainText("tmk_scim_");
  await expect(admin.getByTestId("scim-url")).toContainText("/scim/v2");
  await admin.screenshot({ path: "test-results/settings-provisioning.png", fullPage: true });

  // Okta's deactivation.
  const deactivated = await request.patch(`/scim/v2/Users/${id}`, {
    headers: scimHeaders,
    data: {
      schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
      Operations: [{ op: "replace", value: { active: false } }],
    },
  });
  expect(deactivated.status()).toBe(200);

  // The very next page load is the sign-in page.
  await page.goto("/projects");
  await expect(page).toHaveURL(/\/signin/);
  // Behind the proxy, each replica refuses the old session straight away.
  for (const replica of REPLICAS) {
    const client = await playwright.request.newContext();
    const res = await client.get(`${replica}/projects`, {
      headers: { cookie: `${session!.name}=${session!.value}` },
      maxRedirects: 0,
    });
    expect(res.status(), replica).toBe(303);
    await client.dispose();
  }
  // Signing in again is refused: no membership in any account any more.
  const againContext = await browser.newContext();
  const again = await againContext.newPage();
  await again.goto("/signin");
  await again.getByLabel("E-mail address").fill(email);
  await again.getByRole("button", { name: "Continue" }).click();
  await expect(again).toHaveURL(new RegExp(`^${OIDC}/interaction/`));
  await again.getByRole("button", { name: "Sign in" }).click();
  await expect(again).toHaveURL(/\/signin\?error=no_access/);
  await againContext.close();

  // Entra's reactivation: they are a member again.
  const reactivated = await request.patch(`/scim/v2/Users/${id}`, {
    headers: scimHeaders,
    data: {
      schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
      Operations: [{ op: "Replace", path: "active", value: "True" }],
    },
  });
  expect(reactivated.status()).toBe(200);
  const backContext = await browser.newContext();
  await signInWithOidc(await backContext.newPage(), email);
  await backContext.close();
  await admin.goto("/settings/members");
  await expect(admin.getByTestId("members").getByRole("row").filter({ hasText: email })).toContainText("member");

  // Rotating the token in Settings shows the new one once; the old one stops at once.
  await admin.goto("/settings/provisioning");
  await admin.getByRole("button", { name: "Rotate token" }).click();
  const fresh = (await admin.getByTestId("new-scim-token").textContent()) ?? "";
  expect(fresh).toMatch(/^tmk_scim_/);
  await admin.screenshot({ path: "test-results/scim-new-token.png", fullPage: true });
  const withOld = await request.get("/scim/v2/Users", { headers: scimHeaders });
  expect(withOld.status()).toBe(401);
  const withNew = await request.get("/scim/v2/Users", { headers: { authorization: `Bearer ${fresh}` } });
  expect(withNew.status()).toBe(200);
  // On the section itself, whose address a reload repeats nothing at: the token is shown no more.
  await expect(admin).toHaveURL(/\/settings\/provisioning\?shown=/);
  await expect(admin.getByTestId("scim-token")).toContainText(fresh.slice(0, 15));
  await admin.reload();
  await expect(admin.getByTestId("shown-already")).toBeVisible();
  await expect(admin.getByTestId("new-scim-token")).toHaveCount(0);
  expect((await request.get("/scim/v2/Users", { headers: { authorization: `Bearer ${fresh}` } })).status()).toBe(200);
  await adminContext.close();
});
