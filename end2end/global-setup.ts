// cargo-leptos starts the server and the test command at the same time: wait until the
// server answers its readiness probe before any test runs.
export default async function globalSetup(): Promise<void> {
  const base = process.env.TIDEMARK_E2E_URL ?? "http://127.0.0.1:3000";
  const deadline = Date.now() + 180_000;
  let last = "no answer yet";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`server at ${base} never became ready: ${last}`);
}
