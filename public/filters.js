// Filter forms (`form[data-auto-apply]`) apply as soon as a choice changes, and put only the
// filters that are set in the address (no `&status=&q=`). Without JavaScript the Apply button
// does the same job. A plain file, not WASM: the pages that filter are server-rendered.
document.addEventListener("change", (event) => {
  const field = event.target;
  const form = field.closest && field.closest("form[data-auto-apply]");
  if (form && field.matches("select")) form.requestSubmit();
});
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.matches("form[data-auto-apply]")) return;
  for (const field of form.elements) {
    if (field.name && field.value === "") field.disabled = true;
  }
});
// Back from the next page (bfcache): the fields work again.
window.addEventListener("pageshow", () => {
  for (const field of document.querySelectorAll("form[data-auto-apply] [disabled]")) field.disabled = false;
});
