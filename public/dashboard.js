// What the server-rendered pages do in the browser, without WASM. Filter forms (`form[data-auto-apply]`) apply as soon as a choice changes, and put only the
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

// The score chart is one Tab stop (roving tabindex): the newest point takes the focus, and the
// arrow keys, Home and End move it between points; each point hovered or focused shows its
// scan in the line below the chart (the server writes the newest; each point carries its own).
// Plain script, not an island: the chart is drawn on the server, and this is all it needs in
// the browser; as WASM it cost the project page 136 KB (docs/benchmarks.md).
// A chart's points: a scan is a link; a day of the overview's chart is a `[data-tip]` group.
const POINT = "a, [data-tip]";
function rove(group) {
  const points = Array.from(group.querySelectorAll(POINT));
  if (points.length === 0 || points.some((p) => p.hasAttribute("tabindex"))) return;
  points.forEach((p, i) => p.setAttribute("tabindex", i === points.length - 1 ? "0" : "-1"));
}
function roveAll() {
  for (const group of document.querySelectorAll('svg.chart-overlay[role="group"]')) rove(group);
}
document.addEventListener("keydown", (event) => {
  const point = chartPoint(event.target);
  if (!point) return;
  const points = Array.from(point.closest("svg").querySelectorAll(POINT));
  let i = points.indexOf(point);
  switch (event.key) {
    case "ArrowRight": case "ArrowUp": i += 1; break;
    case "ArrowLeft": case "ArrowDown": i -= 1; break;
    case "Home": i = 0; break;
    case "End": i = points.length - 1; break;
    default: return;
  }
  event.preventDefault();
  i = Math.max(0, Math.min(points.length - 1, i));
  points.forEach((p, j) => p.setAttribute("tabindex", j === i ? "0" : "-1"));
  points[i].focus();
});
// The scan line under the chart, filled in from the point hovered or focused.
function scanLine(figure, point) {
  const line = figure.querySelector(".chart-tip .scan-line");
  if (!line) return;
  const link = line.querySelector("a");
  link.href = point.getAttribute("href");
  link.textContent = link.pathname.split("/").pop();
  line.querySelector("strong").textContent = point.dataset.score;
  line.querySelector("[data-gate]").hidden = point.dataset.gate !== "failed";
  const counts = (point.dataset.sev ?? "").split(",");
  line.querySelectorAll(".sev-chips li").forEach((chip, i) => {
    if (counts[i] !== undefined) chip.firstChild.textContent = counts[i];
  });
}
// The tooltip at a point: what the point says (its accessible name, one part a line), with its
// time in the viewer's zone. Shown on hover and on focus, placed above the point (below it
// near the top), kept inside the chart. Hidden from screen readers: they read the name itself.
function pointTip(point) {
  const figure = point.closest("figure.chart");
  if (figure) scanLine(figure, point);
  const dot = point.querySelector(".dot");
  if (!figure || !dot) return;
  let tip = figure.querySelector(".chart-float");
  if (!tip) {
    tip = document.createElement("div");
    tip.className = "chart-float";
    tip.setAttribute("aria-hidden", "true");
    tip.dataset.testid = "chart-float";
    figure.append(tip);
  }
  const parts = (point.getAttribute("aria-label") ?? "").split(" · ");
  const at = new Date(Number(point.dataset.at));
  if (!Number.isNaN(at.getTime())) {
    parts[0] = at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }
  tip.replaceChildren(...parts.map((text, i) => {
    const line = document.createElement(i === 0 ? "strong" : "span");
    line.textContent = text;
    return line;
  }));
  tip.classList.add("shown");
  const box = figure.getBoundingClientRect();
  const spot = dot.getBoundingClientRect();
  const x = spot.left + spot.width / 2 - box.left;
  const y = spot.top + spot.height / 2 - box.top;
  const left = Math.max(0, Math.min(box.width - tip.offsetWidth, x - tip.offsetWidth / 2));
  const above = y - tip.offsetHeight - 14;
  tip.style.left = `${left}px`;
  tip.style.top = `${above >= 0 ? above : y + 14}px`;
}
function hideTip(figure) {
  const tip = figure && figure.querySelector(".chart-float");
  if (tip) tip.classList.remove("shown");
}
function chartPoint(target) {
  return target && target.closest ? target.closest('svg.chart-overlay[role="group"] :is(a, [data-tip])') : null;
}
document.addEventListener("mouseover", (event) => {
  const point = chartPoint(event.target);
  if (point) pointTip(point);
});
document.addEventListener("focusin", (event) => {
  const point = chartPoint(event.target);
  if (point) pointTip(point);
});
document.addEventListener("mouseout", (event) => {
  const point = chartPoint(event.target);
  if (point && !point.contains(event.relatedTarget) && document.activeElement !== point) {
    hideTip(point.closest("figure.chart"));
  }
});
document.addEventListener("focusout", (event) => {
  const point = chartPoint(event.target);
  if (point && !chartPoint(event.relatedTarget ?? document.body)) hideTip(point.closest("figure.chart"));
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") for (const figure of document.querySelectorAll("figure.chart")) hideTip(figure);
});

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", roveAll);
} else {
  roveAll();
}

// Times the server wrote in UTC (`<time class="utc">`) read in the viewer's own time zone,
// with how long ago; the UTC text stays as the tooltip. "How long ago" counts as the server's
// `app/src/time.rs::ago` does (whole units elapsed, months from 60 days, years from two), so
// a page the server wrote and a time the script rewrote never disagree about one scan.
const since = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
function ago(at) {
  // A time to come (a key's expiry) counts forward the same way: "in 30 days".
  const signed = (Date.now() - at.getTime()) / 1000;
  const seconds = Math.abs(signed);
  const units = [["year", 63072000, 31536000], ["month", 5184000, 2592000], ["day", 86400, 86400],
    ["hour", 3600, 3600], ["minute", 60, 60]];
  for (const [unit, from, size] of units) {
    if (seconds >= from) return since.format(Math.sign(-signed) * Math.floor(seconds / size), unit);
  }
  return "just now";
}
function localTimes() {
  for (const time of document.querySelectorAll("time.utc:not([data-local])")) {
    const at = new Date(time.getAttribute("datetime") ?? "");
    if (Number.isNaN(at.getTime())) continue;
    time.title = time.textContent;
    time.textContent = `${at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })} (${ago(at)})`;
    time.dataset.local = "true";
  }
}
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", localTimes);
} else {
  localTimes();
}
new MutationObserver(localTimes).observe(document.documentElement, { childList: true, subtree: true });

// Settings' plain forms. A destructive button asks first (`data-confirm`); "Cancel" sends
// nothing. Without JavaScript the form is sent without asking.
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button[data-confirm]");
  if (button && !window.confirm(button.dataset.confirm)) event.preventDefault();
});
// "Copy" beside a secret shown once (`data-copy` names the element holding it); the button
// stays hidden where there is no script to answer it.
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button[data-copy]");
  const source = button && document.getElementById(button.dataset.copy);
  if (!source) return;
  navigator.clipboard.writeText(source.textContent).then(() => { button.textContent = "Copied"; }, () => {});
});
// A form the server refused comes back empty (the server sends the browser back to the page
// with why, never with what was typed): `form[data-keep]` keeps what was typed in this tab's
// session storage while it is sent, and puts it back only when the page says the form was
// refused. A form that saved starts empty, ready for the next entry.
const keptKey = (form) => `tidemark-kept:${new URL(form.action, location.href).pathname}`;
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.matches("form[data-keep]")) return;
  const kept = {};
  for (const field of form.elements) {
    if (!field.name || field.type === "hidden" || field.type === "password") continue;
    kept[field.name] = field.type === "checkbox" ? field.checked : field.value;
  }
  try { sessionStorage.setItem(keptKey(form), JSON.stringify(kept)); } catch { /* storage off */ }
});
function restoreKept() {
  const query = new URLSearchParams(location.search);
  for (const form of document.querySelectorAll("form[data-keep]")) {
    let kept = null;
    try {
      kept = JSON.parse(sessionStorage.getItem(keptKey(form)) ?? "null");
      sessionStorage.removeItem(keptKey(form));
    } catch { /* storage off */ }
    const refused = query.has("__err") && query.get("__path") === new URL(form.action, location.href).pathname;
    if (!kept || !refused) continue;
    for (const field of form.elements) {
      if (!(field.name in kept) || field.type === "hidden") continue;
      if (field.type === "checkbox") field.checked = kept[field.name] === true;
      else field.value = kept[field.name];
    }
  }
  for (const button of document.querySelectorAll("button[data-copy][hidden]")) {
    if (navigator.clipboard) button.hidden = false;
  }
}
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", restoreKept);
} else {
  restoreKept();
}

// "Select every finding on this page": ticks (or clears) each finding box of its form.
document.addEventListener("change", (event) => {
  const all = event.target.closest && event.target.closest("input[data-select-all]");
  if (!all) return;
  for (const box of document.querySelectorAll(`input[name="finding"][form="${all.dataset.selectAll}"]`)) {
    box.checked = all.checked;
  }
});
// A bulk form (`form[data-bulk]`) says how many findings are ticked, and its button is off
// while none is: nothing to send, so no round trip to be told so. Without a script the
// server answers an empty selection with a notice.
function bulkState() {
  for (const form of document.querySelectorAll("form[data-bulk]")) {
    const ticked = document.querySelectorAll(`input[name="finding"][form="${form.id}"]:checked`).length;
    const button = form.querySelector('button[type="submit"]');
    if (button) button.disabled = ticked === 0;
    const count = form.querySelector("[data-selected-count]");
    if (count) count.textContent = ticked === 0 ? "Nothing selected yet." : ticked === 1 ? "1 finding selected." : `${ticked} findings selected.`;
  }
}
document.addEventListener("change", (event) => {
  if (event.target.matches && event.target.matches('input[name="finding"], input[data-select-all]')) bulkState();
});
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", bulkState);
} else {
  bulkState();
}

// A file chosen for a form is read into the text area `data-file-into` names (and its name
// into `data-file-name`'s field), so the plain form sends it: Settings → Frameworks' upload.
document.addEventListener("change", (event) => {
  const input = event.target.closest && event.target.closest("input[type=file][data-file-into]");
  const target = input && document.getElementById(input.dataset.fileInto);
  const file = input && input.files && input.files[0];
  if (!target || !file) return;
  const name = document.getElementById(input.dataset.fileName);
  if (name) name.value = file.name;
  file.text().then((text) => { target.value = text; }, () => {});
});

// The inbox's sticky bar (`form[data-bulk-bar]`): how many findings are ticked, and its
// button only while some are, so an empty submit never makes a round trip. Without a
// script the button stays usable and the server says to tick findings first.
function bulkBars() {
  for (const bar of document.querySelectorAll("form[data-bulk-bar]")) {
    const ticked = document.querySelectorAll(`input[name="finding"][form="${bar.id}"]:checked`).length;
    const count = bar.querySelector("[data-bulk-count]");
    // Only when it changes: the observer below would otherwise wake on its own write.
    const text = `${ticked} selected`;
    if (count && count.textContent !== text) count.textContent = text;
    const submit = bar.querySelector("[data-bulk-submit]");
    if (submit) submit.disabled = ticked === 0;
  }
}
document.addEventListener("change", (event) => {
  if (event.target.matches && event.target.matches('input[name="finding"], input[data-select-all]')) bulkBars();
});
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", bulkBars);
} else {
  bulkBars();
}
new MutationObserver(bulkBars).observe(document.documentElement, { childList: true, subtree: true });
