import { expect, type Page } from "@playwright/test";

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
