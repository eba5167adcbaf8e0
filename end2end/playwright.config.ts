import { defineConfig } from "@playwright/test";

// The server under test (scripts/e2e.sh starts it; behind nginx over https in its phase 2).
const baseURL = process.env.TIDEMARK_E2E_URL ?? "http://127.0.0.1:3000";

export default defineConfig({
  testDir: "./tests",
  globalSetup: "./global-setup.ts",
  timeout: 30_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: true,
  reporter: [["list"]],
  outputDir: "test-results",
  use: {
    baseURL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      // Debian's Chromium: the machine has no network for a Playwright browser download.
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        // Behind the test proxy (scripts/e2e.sh, phase 2): trust exactly its certificate's key,
        // not every certificate error.
        ...(process.env.TIDEMARK_E2E_SPKI
          ? [`--ignore-certificate-errors-spki-list=${process.env.TIDEMARK_E2E_SPKI}`]
          : []),
      ],
    },
  },
});
