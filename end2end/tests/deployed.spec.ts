import { expect, test, signInWithOidc } from "./support";

// Only in scripts/e2e.sh's second phase: nginx terminating TLS (deploy/nginx/tidemark.conf) in
// front of two replicas on one PostgreSQL. REPLICAS are their own plain-http addresses.
const REPLICAS = (process.env.TIDEMARK_E2E_REPLICAS ?? "").split(" ").filter(Boolean);
const HTTP_PORT = process.env.TIDEMARK_E2E_HTTP_PORT ?? "";
const ADMIN = process.env.TIDEMARK_E2E_ADMIN ?? "";

test.skip(REPLICAS.length === 0, "runs behind the proxy only (scripts/e2e.sh, phase 2)");

test("a session made through the proxy works on each replica", async ({ page, context, playwright, baseURL }) => {
  expect(baseURL).toMatch(/^https:\/\//);
  expect(REPLICAS).toHaveLength(2);
  await signInWithOidc(page, ADMIN);
  const session = (await context.cookies()).find((c) => c.name === "__Host-tidemark_session");
  expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: "Strict" });

  // Straight to each replica, past the proxy: the session lives in the database, not in
  // either process.
  // A client of its own for each request: no cookie jar carries anything over.
  const direct = async (url: string, headers: Record<string, string> = {}) => {
    const client = await playwright.request.newContext();
    const res = await client.get(url, { headers, maxRedirects: 0 });
    const answer = { status: res.status(), text: await res.text() };
    await client.dispose();
    return answer;
  };
  for (const replica of REPLICAS) {
    const res = await direct(`${replica}/projects`, {
      cookie: `${session!.name}=${session!.value}`,
    });
    expect(res.status, replica).toBe(200);
    expect(res.text).toContain(ADMIN);
  }
  // Without the cookie, the same replica sends the visitor to sign in.
  const anonymous = await direct(`${REPLICAS[1]}/projects`);
  expect(anonymous.status).toBe(303);

  // Through the proxy, many page loads land on both replicas and all stay signed in.
  for (let i = 0; i < 6; i++) {
    await page.goto("/projects");
    await expect(page.getByTestId("signed-in-as")).toContainText(ADMIN);
  }
});

test("plain http is redirected to https by the proxy", async ({ request }) => {
  const res = await request.get(`http://127.0.0.1:${HTTP_PORT}/projects?x=1`, { maxRedirects: 0 });
  expect(res.status()).toBe(308);
  expect(res.headers()["location"]).toBe("https://127.0.0.1/projects?x=1");
});

test("the app's redirects and links name the public https address", async ({ request, baseURL }) => {
  const res = await request.get("/projects", { maxRedirects: 0 });
  expect(res.status()).toBe(303);
  const location = res.headers()["location"] ?? "";
  // Relative, or absolute on the public origin: never a replica's own address.
  expect(location.startsWith("/") || location.startsWith(baseURL ?? "-")).toBe(true);
  for (const replica of REPLICAS) expect(location).not.toContain(new URL(replica).host);
  const page = await request.get("/signin");
  expect(page.headers()["strict-transport-security"] ?? "").not.toBe("");
});
