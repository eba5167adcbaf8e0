import { test as base, expect, type BrowserContext, type Page } from "@playwright/test";

export { expect };

/**
 * Collects every Content-Security-Policy violation on the app's own pages in `context`
 * (identity providers' pages are not ours). Chromium reports each as a console message; the
 * `securitypolicyviolation` event catches the ones it would not print.
 */
export async function watchCsp(context: BrowserContext, appOrigin: string): Promise<string[]> {
  const violations: string[] = [];
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  context.on("console", (msg) => {
    const from = msg.location().url || msg.page()?.url() || "";
    if (/Content Security Policy/i.test(msg.text()) && from.startsWith(appOrigin)) {
      violations.push(`${from}: ${msg.text()}`);
    }
  });
  return violations;
}

/** Playwright's `test`, failing any test during which one of the app's pages broke its CSP. */
export const test = base.extend<{ cspGuard: void }>({
  cspGuard: [
    async ({ context, baseURL }, use) => {
      const violations = await watchCsp(context, new URL(baseURL ?? "").origin);
      await use();
      expect(violations, "Content-Security-Policy violations").toEqual([]);
    },
    { auto: true },
  ],
});

// The OpenID provider scripts/e2e.sh starts on http://localhost (another site than the app).
export const OIDC = process.env.TIDEMARK_E2E_OIDC ?? "";

/** Signs in through the development OpenID provider as `email` (never a SAML IdP). */
export async function signInWithOidc(page: Page, email: string) {
  await page.goto("/signin");
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Continue" }).click();
  await expect(page).toHaveURL(new RegExp(`^${OIDC}/interaction/`));
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText(email);
}

/**
 * Runs axe-core on the page as it is and fails on any moderate, serious or critical violation
 * (a link given a list item's role is only moderate), naming each rule and the elements it found.
 */
export async function expectAccessible(page: Page, what: string) {
  const { default: AxeBuilder } = await import("@axe-core/playwright");
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === "moderate" || v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).slice(0, 5).join("; ")}`);
  expect.soft(bad, `axe on ${what}`).toEqual([]);
}

/** Whether the page as a whole scrolls sideways (a table inside its own scroller may). */
export async function expectNoSidewaysScroll(page: Page, what: string) {
  const [scroll, client] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    document.documentElement.clientWidth,
  ]);
  expect.soft(scroll, `${what} is ${scroll}px wide in a ${client}px window`).toBeLessThanOrEqual(client);
}

/**
 * On a phone every table reads as cards: its headings are hidden (kept for screen readers) and
 * each cell with something in it shows the label of its own column (`data-label`), never the
 * heading of another.
 */
export async function expectTablesReadOnPhones(page: Page, what: string) {
  const wrong = await page.evaluate(() => {
    const bad: string[] = [];
    for (const table of Array.from(document.querySelectorAll("main table"))) {
      const name = (table as HTMLElement).dataset.testid ?? table.className ?? "table";
      const heads = Array.from(table.querySelectorAll("thead th")).map((th) => (th.textContent ?? "").trim());
      const head = table.querySelector("thead");
      if (head && head.getBoundingClientRect().height > 1) bad.push(`${name}: its headings show above the cards`);
      for (const row of Array.from(table.querySelectorAll("tbody tr"))) {
        Array.from(row.children).forEach((cell, i) => {
          const shown = (cell as HTMLElement).offsetParent !== null && (cell.textContent ?? "").trim() !== "";
          if (cell.tagName !== "TD" || !shown) return;
          const label = cell.getAttribute("data-label");
          // A row's actions (its buttons) say what they do themselves.
          if (label === null && cell.querySelector("button, form")) return;
          if (label === null) bad.push(`${name}: cell ${i + 1} has no label`);
          else if (heads[i] && !heads[i].startsWith(label)) bad.push(`${name}: "${label}" in the column of "${heads[i]}"`);
        });
      }
    }
    return bad;
  });
  expect.soft(wrong, `tables on ${what}`).toEqual([]);
}

/**
 * What a phone shows is usable: a box to tick is a box, a caption reads as a line (not a
 * word a line), a tab holds its text, the chart's dates do not overlap, and every field looks
 * like the others (a number, a date or a list as a text field does).
 */
export async function expectPhoneLayout(page: Page, what: string) {
  const wrong = await page.evaluate(() => {
    const bad: string[] = [];
    const visible = (e: Element) => (e as HTMLElement).offsetParent !== null;
    for (const box of Array.from(document.querySelectorAll('main input[type="checkbox"]')).filter(visible)) {
      const r = box.getBoundingClientRect();
      if (r.width < 12 || r.height < 12) bad.push(`a checkbox is ${r.width}x${r.height}px`);
    }
    for (const caption of Array.from(document.querySelectorAll("main caption")).filter(visible)) {
      const words = (caption.textContent ?? "").trim().split(/\s+/).length;
      const lineHeight = parseFloat(getComputedStyle(caption).lineHeight) || 20;
      if (words > 1 && caption.getBoundingClientRect().height > 2.5 * lineHeight) bad.push(`caption "${caption.textContent}" wraps a word a line`);
    }
    for (const tab of Array.from(document.querySelectorAll(".tabs a")).filter(visible)) {
      if (tab.scrollWidth > tab.clientWidth + 1) bad.push(`tab "${tab.textContent}" overflows`);
    }
    for (const axis of Array.from(document.querySelectorAll("figure.chart svg"))) {
      const dates = Array.from(axis.querySelectorAll("text.date")).map((t) => t.getBoundingClientRect()).filter((r) => r.width > 0);
      for (let i = 1; i < dates.length; i++) {
        if (dates[i].left < dates[i - 1].right) bad.push(`chart dates ${i} and ${i + 1} overlap`);
      }
    }
    const look = (e: Element) => {
      const s = getComputedStyle(e);
      return `${s.borderTopWidth} ${s.borderTopStyle} ${s.borderRadius} ${s.paddingLeft}`;
    };
    const fields = Array.from(document.querySelectorAll('main input[type="text"], main input[type="number"], main input[type="email"], main input[type="url"], main input[type="date"], main select')).filter(visible);
    const looks = new Set(fields.map(look));
    if (looks.size > 1) bad.push(`fields look different: ${[...looks].join(" | ")}`);
    return bad;
  });
  expect.soft(wrong, `the phone layout of ${what}`).toEqual([]);
}

/** On a wide screen no table is cut off inside its scroller: it has the width it needs. */
export async function expectTablesFit(page: Page, what: string) {
  const clipped = await page.evaluate(() =>
    Array.from(document.querySelectorAll("main .table-wrap"))
      .filter((w) => w.scrollWidth > w.clientWidth + 1)
      .map((w) => `${(w.querySelector("table") as HTMLElement | null)?.dataset.testid ?? "a table"}: ${w.scrollWidth}px in ${w.clientWidth}px`),
  );
  expect.soft(clipped, `tables on ${what}`).toEqual([]);
}
