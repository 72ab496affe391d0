// sharpdp's web pages: the analyst's page (data-page="analyst") and the privacy calculator
// (data-page="calculator"). Vanilla JavaScript, no dependencies, nothing fetched from elsewhere.
// Every value from the server is written with textContent (never parsed as HTML).
"use strict";

const SVG = "http://www.w3.org/2000/svg";

// -- printing bounds: sharpdp._format.upper / lower, the same digits ------------------------------
// A double's exact decimal value (BigInt digits × 10^exp), then directed rounding on it: the text
// printed is never below an upper bound (nor above a lower one), as in Python.
function exactDecimal(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp2;
  if (biased === 0) {
    exp2 = -1074;
  } else {
    mantissa |= 1n << 52n;
    exp2 = biased - 1075;
  }
  if (exp2 >= 0) return { digits: (mantissa << BigInt(exp2)).toString(), exp: 0 };
  return { digits: (mantissa * 5n ** BigInt(-exp2)).toString(), exp: exp2 };
}

function directed(x, digits, up) {
  if (typeof x === "string") return x; // "inf" / "-inf" from the API
  if (x === null || x === undefined) return "n/a";
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const negative = x < 0;
  const d = exactDecimal(x);
  const text = d.digits.replace(/^0+/, "");
  const adjusted = text.length - 1 + d.exp;
  let kept = text.slice(0, digits);
  const rest = text.slice(digits);
  let power = adjusted - kept.length + 1; // the place of kept's last digit
  // away from zero when rounding up a positive number or down a negative one
  const away = up !== negative;
  if (/[1-9]/.test(rest) && away) kept = (BigInt(kept) + 1n).toString();
  let k = kept.replace(/0+$/, "");
  power += kept.length - k.length;
  if (k === "") return "0";
  const adj = k.length - 1 + power;
  let out;
  if (adj >= digits + 4 || adj <= -5) {
    out = k[0] + (k.length > 1 ? "." + k.slice(1) : "") + "e" + adj;
  } else if (power >= 0) {
    out = k + "0".repeat(power);
  } else if (k.length > -power) {
    out = k.slice(0, k.length + power) + "." + k.slice(k.length + power);
  } else {
    out = "0." + "0".repeat(-power - k.length) + k;
  }
  return (negative ? "-" : "") + out;
}

const upper = (x, digits = 6) => directed(x, digits, true);
const lower = (x, digits = 6) => directed(x, digits, false);

// -- small DOM helpers ---------------------------------------------------------------------------
const $ = (id) => document.getElementById(id);

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function say(message, isError) {
  const node = $("message");
  node.textContent = message;
  node.className = isError ? "error" : "";
}

async function api(method, path, body, token) {
  const headers = {};
  if (token) headers.Authorization = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const reason = data && data.error ? data.error : response.statusText;
    const err = new Error(reason + " (HTTP " + response.status + ")");
    err.status = response.status;
    throw err;
  }
  return data;
}

const num = (v) => (v === "inf" ? Infinity : v === "-inf" ? -Infinity : Number(v));

// -- the analyst's page ----------------------------------------------------------------------------
function analystPage() {
  let token = sessionStorage.getItem("sharpdp-token");
  let datasets = [];

  async function signIn(candidate) {
    try {
      const budget = await api("GET", "/budget", undefined, candidate);
      token = candidate;
      sessionStorage.setItem("sharpdp-token", token);
      $("signin-panel").hidden = true;
      $("workspace").hidden = false;
      showBudget(budget);
      datasets = await api("GET", "/datasets", undefined, token);
      fillDatasets();
      say("");
    } catch (err) {
      sessionStorage.removeItem("sharpdp-token");
      $("signin-panel").hidden = false;
      $("workspace").hidden = true;
      const node = $("signin-panel").querySelector(".hint");
      node.textContent = "Sign-in refused: " + err.message;
      node.className = "hint error";
    }
  }

  function fillDatasets() {
    const select = $("dataset");
    clear(select);
    for (const d of datasets) select.appendChild(el("option", d.name, { value: d.name }));
    fillColumns();
  }

  function fillColumns() {
    const d = datasets.find((x) => x.name === $("dataset").value);
    const select = $("column");
    clear(select);
    if (!d) return;
    for (const [name, type] of Object.entries(d.columns || {})) {
      if (name === d.privacy_unit) continue;
      select.appendChild(el("option", name + " (" + type + ")", { value: name }));
    }
    if (d.max_groups) $("max-groups").value = d.max_groups;
    if (d.max_rows) $("max-rows").value = d.max_rows;
  }

  // Which fields each kind of query takes (the API's bodies: sharpdp.service.queries).
  const KINDS = {
    count: { column: false, keys: false, groups: false },
    count_by: { keys: "Keys (comma-separated; empty: found privately)" },
    sum: { bounds: true },
    mean: { bounds: true },
    quantile: { bounds: true, q: true },
    top_k: { keys: "Candidates (comma-separated; empty: found privately)", k: true },
    select_best: { keys: "Candidates (comma-separated; empty: found privately)", rows: false },
  };

  function kindOf() {
    const name = $("query").value;
    return { name, column: true, keys: false, groups: true, rows: true, ...KINDS[name] };
  }

  // A hidden field is also disabled: the browser's own checks skip it, so a value left in a
  // field the query does not take (q = 1.5, then count) cannot block Run without a word.
  function showFields(selector, shown) {
    for (const node of document.querySelectorAll(selector)) {
      node.hidden = !shown;
      for (const field of node.querySelectorAll("input, select")) field.disabled = !shown;
    }
  }

  function showKind() {
    const kind = kindOf();
    showFields(".for-keys", kind.keys);
    if (kind.keys) $("keys-label").textContent = kind.keys;
    showFields(".for-bounds", kind.bounds);
    showFields(".for-q", kind.q);
    showFields(".for-k", kind.k);
    $("column").disabled = !kind.column;
    $("max-groups").disabled = !kind.groups;
    $("max-rows").disabled = !kind.rows;
  }

  // A key is typed by its column (from /datasets): digits stay text in a text column ("007"),
  // and become a number only in a numeric one.
  function columnType() {
    const d = datasets.find((x) => x.name === $("dataset").value);
    return String(((d && d.columns) || {})[$("column").value] || "");
  }

  function parseKey(text) {
    const t = text.trim();
    const numeric = /^!?(u?int|float|decimal)/.test(columnType());
    return numeric && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t) ? Number(t) : t;
  }

  function body() {
    const kind = kindOf();
    const out = {
      dataset: $("dataset").value,
      query: kind.name,
      privacy: $("privacy").value.trim(),
      level: Number($("level").value),
    };
    const maxRows = Number($("max-rows").value);
    if (kind.rows && maxRows) out.max_rows = maxRows;
    if (!kind.column) return out;
    out.column = $("column").value;
    const maxGroups = Number($("max-groups").value);
    if (kind.groups && maxGroups) out.max_groups = maxGroups;
    if (kind.keys) {
      const keys = $("keys").value.split(",").map((k) => k.trim()).filter((k) => k !== "");
      if (keys.length) out.keys = keys.map(parseKey);
    }
    if (kind.k) out.k = Number($("k").value);
    if (kind.bounds) out.bounds = $("bounds").value.split(",").map((b) => Number(b.trim()));
    if (kind.q) {
      out.q = Number($("q").value);
      if ($("support").value !== "cells") out.support = $("support").value;
    }
    return out;
  }

  function showBudget(b) {
    $("who").textContent = b.analyst;
    $("period").textContent = b.period;
    $("budget-text").textContent = b.budget;
    $("measure").textContent = b.measure === "rho" ? "ρ (zCDP)" : "ε at δ = " + b.at_delta;
    $("spent").textContent = upper(b.spent);
    $("remaining").textContent = lower(b.remaining);
    const bar = $("budget-bar");
    clear(bar);
    const spent = num(b.spent);
    const total = spent + Math.max(0, num(b.remaining));
    const share = total > 0 && Number.isFinite(total) ? Math.min(1, spent / total) : 1;
    bar.appendChild(svgEl("rect", { x: 0, y: 2, width: 480, height: 18, class: "bar-total" }));
    bar.appendChild(svgEl("rect", { x: 0, y: 2, width: 480 * share, height: 18, class: "bar-spent" }));
    const inside = share > 0.5;
    const label = svgEl(
      "text",
      { x: inside ? 6 : 480 * share + 6, y: 16, class: inside ? "bar-label inside" : "bar-label" },
      (100 * share).toFixed(1) + "% spent"
    );
    bar.appendChild(label);
    const tbody = $("history").querySelector("tbody");
    clear(tbody);
    for (const h of b.history) {
      const tr = el("tr");
      tr.appendChild(el("td", h.time.replace("T", " ").slice(0, 19)));
      tr.appendChild(el("td", h.item));
      tr.appendChild(el("td", h.count, { class: "num" }));
      tr.appendChild(el("td", upper(h.cost), { class: "num cost" }));
      tr.appendChild(el("td", h.analysis, { title: h.theorem }));
      const cell = el("td");
      if (h.release) {
        const link = el("a", h.release.slice(0, 8) + "…", { href: "#release-" + h.release });
        link.addEventListener("click", (ev) => {
          ev.preventDefault();
          loadRelease(h.release);
        });
        cell.appendChild(link);
      }
      tr.appendChild(cell);
      tbody.appendChild(tr);
    }
  }

  async function refreshBudget() {
    showBudget(await api("GET", "/budget", undefined, token));
  }

  async function loadRelease(id) {
    try {
      showRelease(await api("GET", "/releases/" + encodeURIComponent(id), undefined, token));
    } catch (err) {
      say(err.message, true);
    }
  }

  function showRelease(r) {
    $("release-panel").hidden = false;
    $("release-id").textContent = r.id || "";
    $("release-description").textContent = r.description || "";
    const rows = r.rows || [];
    const columns = rows.length ? Object.keys(rows[0]) : [];
    const keys = r.keys || [];
    const value = columns.find((c) => !keys.includes(c) && c !== "lower" && c !== "upper");
    const thead = $("release-rows").querySelector("thead");
    const tbody = $("release-rows").querySelector("tbody");
    clear(thead);
    clear(tbody);
    const head = el("tr");
    for (const c of columns) head.appendChild(el("th", c));
    thead.appendChild(head);
    if (!rows.length) {
      // e.g. keys found privately, none above the threshold: an empty release, not an error
      const tr = el("tr", undefined, { class: "empty" });
      tr.appendChild(el("td", "nothing released (no key passed the release threshold)"));
      tbody.appendChild(tr);
    }
    for (const row of rows) {
      const tr = el("tr");
      for (const c of columns) {
        const v = row[c];
        const text = v === null ? "NULL" : Array.isArray(v) ? v.join(", ") : String(v);
        tr.appendChild(el("td", text, { "data-col": c, class: typeof v === "number" ? "num" : "" }));
      }
      tbody.appendChild(tr);
    }
    const noise = Object.entries(r.noise || {});
    $("release-noise").textContent = noise.length
      ? noise.map(([k, v]) => k + ": noise " + v).join("; ") +
        (r.level ? " — intervals at level " + r.level : "")
      : "chosen by a private selection (exponential mechanism): no additive noise";
    drawBars(rows, keys, value);
  }

  function drawBars(rows, keys, value) {
    const chart = $("release-chart");
    clear(chart);
    // bars for noisy values with their intervals; a selection's ranks or a quantile's rank error
    // are not quantities to draw as bars
    const usable = rows.filter(
      (r) => typeof r[value] === "number" && r.lower !== undefined && r.upper !== undefined
    );
    if (!value || !usable.length) {
      chart.setAttribute("height", 0);
      return;
    }
    const label = (r) => keys.map((k) => String(r[k])).join(" / ") || value;
    const lo = Math.min(0, ...usable.map((r) => num(r.lower ?? r[value])));
    const hi = Math.max(0, ...usable.map((r) => num(r.upper ?? r[value])));
    const width = 640;
    const left = 120;
    const right = 20;
    const rowHeight = 26;
    const height = 30 + rowHeight * usable.length;
    chart.setAttribute("width", width);
    chart.setAttribute("height", height);
    const span = hi - lo || 1;
    const x = (v) => left + ((num(v) - lo) / span) * (width - left - right);
    chart.appendChild(svgEl("line", { x1: x(0), x2: x(0), y1: 0, y2: height - 20, class: "axis" }));
    usable.forEach((r, i) => {
      const y = 14 + i * rowHeight;
      chart.appendChild(svgEl("text", { x: left - 8, y: y + 4, class: "bar-key" }, label(r)));
      chart.appendChild(
        svgEl("rect", {
          x: Math.min(x(0), x(r[value])),
          y: y - 7,
          width: Math.abs(x(r[value]) - x(0)),
          height: 14,
          class: "bar-value",
        })
      );
      if (r.lower !== undefined && r.upper !== undefined) {
        const [a, b] = [x(r.lower), x(r.upper)];
        chart.appendChild(svgEl("line", { x1: a, x2: b, y1: y, y2: y, class: "whisker" }));
        chart.appendChild(svgEl("line", { x1: a, x2: a, y1: y - 6, y2: y + 6, class: "whisker" }));
        chart.appendChild(svgEl("line", { x1: b, x2: b, y1: y - 6, y2: y + 6, class: "whisker" }));
      }
    });
    chart.appendChild(svgEl("text", { x: x(lo), y: height - 4, class: "tick" }, lo));
    chart.appendChild(svgEl("text", { x: x(hi), y: height - 4, class: "tick end" }, hi));
  }

  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    signIn($("token").value.trim());
  });
  // Signing out forgets everything of the analyst's: the token (also in its field), the
  // release shown, the budget and any message (the next analyst on this tab saw them).
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem("sharpdp-token");
    token = null;
    $("token").value = "";
    $("release-panel").hidden = true;
    clear($("release-rows").querySelector("thead"));
    clear($("release-rows").querySelector("tbody"));
    clear($("release-chart"));
    for (const id of ["release-id", "release-description", "release-noise", "who"]) {
      $(id).textContent = "";
    }
    const hint = $("signin-panel").querySelector(".hint");
    hint.textContent = "";
    hint.className = "hint";
    say("");
    $("workspace").hidden = true;
    $("signin-panel").hidden = false;
  });
  $("dataset").addEventListener("change", fillColumns);
  $("query").addEventListener("change", showKind);
  $("price").addEventListener("click", async () => {
    try {
      const e = await api("POST", "/explain", body(), token);
      say(
        "Price: " + upper(e.cost) + " (" + e.measure + ", rounded up) for " + e.charge.count +
          " × " + e.charge.item + "; " + (e.fits ? "fits" : "does not fit") +
          " — remaining after: " + lower(e.remaining_after)
      );
    } catch (err) {
      say(err.message, true);
    }
  });
  $("query-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("run").disabled = true;
    try {
      const r = await api("POST", "/queries", body(), token);
      showRelease(r);
      await refreshBudget();
      say("Released " + r.id + "; remaining " + lower(r.remaining) + " (rounded down)");
    } catch (err) {
      say(err.message, true);
    } finally {
      $("run").disabled = false;
    }
  });
  showKind();
  if (token) signIn(token);
}

// -- the calculator --------------------------------------------------------------------------------
function calculatorPage() {
  const tbody = $("items").querySelector("tbody");

  function addRow(item, count) {
    const tr = el("tr", undefined, { class: "item-row" });
    const a = el("td");
    a.appendChild(el("input", undefined, { class: "item", value: item, size: 24, "aria-label": "mechanism" }));
    const b = el("td");
    b.appendChild(
      el("input", undefined, { class: "count", type: "number", min: 1, value: count, "aria-label": "runs" })
    );
    const c = el("td");
    const remove = el("button", "remove", { type: "button", class: "link remove" });
    remove.addEventListener("click", () => tr.remove());
    c.appendChild(remove);
    tr.append(a, b, c);
    tbody.appendChild(tr);
    return tr;
  }

  function body() {
    const items = [...tbody.querySelectorAll(".item-row")]
      .map((tr) => ({
        item: tr.querySelector(".item").value.trim(),
        count: Number(tr.querySelector(".count").value),
      }))
      .filter((x) => x.item !== "");
    // δ as typed: an empty field is the API's default (1e-6), not Number("") = 0, and text that
    // is no number goes as text, for the API to refuse by name
    const deltaText = $("delta").value.trim();
    const out = { items, adaptive: $("adaptive").checked };
    if (deltaText !== "") out.delta = Number.isFinite(Number(deltaText)) ? Number(deltaText) : deltaText;
    // "how many more" is asked by naming a mechanism; without a budget it goes as asked, and
    // the API says what is missing (it was dropped without a word)
    const budget = $("budget").value.trim();
    const next = $("next").value.trim();
    if (next) {
      out.next = next;
      if (budget) out.budget = budget;
    }
    return out;
  }

  function show(a) {
    $("result").hidden = false;
    $("epsilon").textContent = a.epsilon_shown;
    $("at-delta").textContent = String(a.delta);
    $("winner").textContent = a.winner ? a.winner.name : "no analysis applies";
    $("winner-theorem").textContent = a.winner ? a.winner.theorem : "";
    const rows = $("analyses").querySelector("tbody");
    clear(rows);
    for (const r of a.analyses) {
      const tr = el("tr", undefined, { class: r.winner ? "winner" : r.shown === null ? "na" : "" });
      tr.appendChild(el("td", r.name + (r.winner ? " *" : "")));
      tr.appendChild(el("td", r.shown === null ? "n/a" : r.shown, { class: "num" }));
      tr.appendChild(el("td", r.shown === null ? r.note : r.theorem + (r.note ? " (" + r.note + ")" : "")));
      rows.appendChild(tr);
    }
    const fit = $("fit");
    if (a.fit) {
      const more = (a.fit.at_least ? "at least " : "") + a.fit.more.toLocaleString("en");
      const alone = (a.fit.alone_at_least ? "at least " : "") + a.fit.alone.toLocaleString("en");
      fit.textContent =
        "Within " + a.fit.budget + ": " + more + " more × " + a.fit.repr +
        " fit after these (" + alone + " on their own).";
    } else {
      fit.textContent = "";
    }
    drawCurve(a.curve);
  }

  function drawCurve(curve) {
    const svg = $("curve");
    clear(svg);
    const W = 720;
    const H = 360;
    const L = 64;
    const R = 200;
    const T = 12;
    const B = 40;
    const floor = 1e-12;
    const eps = curve.epsilons;
    const xmax = eps[eps.length - 1] || 1;
    const x = (e) => L + (e / xmax) * (W - L - R);
    const y = (d) => T + (Math.log10(1 / Math.max(d, floor)) / 12) * (H - T - B);
    svg.appendChild(svgEl("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "plot-area" }));
    for (let p = 0; p <= 12; p += 2) {
      const yy = y(10 ** -p);
      svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yy, y2: yy, class: "gridline" }));
      svg.appendChild(svgEl("text", { x: L - 6, y: yy + 4, class: "tick end" }, p ? "1e-" + p : "1"));
    }
    for (let i = 0; i <= 4; i++) {
      const e = (xmax * i) / 4;
      svg.appendChild(svgEl("text", { x: x(e), y: H - B + 16, class: "tick mid" }, upper(e, 3)));
    }
    svg.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 6, class: "tick mid" }, "ε (nats)"));
    svg.appendChild(svgEl("text", { x: 12, y: T + 10, class: "tick" }, "δ(ε)"));
    function line(values, cls, label, index) {
      let d = "";
      let pen = false;
      values.forEach((v, i) => {
        if (v === null || typeof v === "string" || num(v) < floor) {
          pen = false;
          return;
        }
        d += (pen ? " L" : " M") + x(eps[i]).toFixed(1) + " " + y(num(v)).toFixed(1);
        pen = true;
      });
      if (d) svg.appendChild(svgEl("path", { d, class: cls, "data-name": label }));
      const ly = T + 14 + index * 18;
      svg.appendChild(svgEl("line", { x1: W - R + 10, x2: W - R + 34, y1: ly - 4, y2: ly - 4, class: cls }));
      svg.appendChild(svgEl("text", { x: W - R + 40, y: ly, class: "tick" }, label));
    }
    if (curve.truncated) {
      svg.appendChild(svgEl("text", { x: W - R - 6, y: T + 16, class: "tick end" }, "curve cut short (time limit)"));
    }
    line(curve.sharpest, "sharpest", "sharpest", 0);
    Object.entries(curve.analyses).forEach(([name, values], i) => line(values, "line c" + (i % 8), name, i + 1));
  }

  async function compute(ev) {
    if (ev) ev.preventDefault();
    $("compute").disabled = true;
    say("Composing…");
    try {
      show(await api("POST", "/calculator/compose", body()));
      say("");
    } catch (err) {
      $("result").hidden = true; // the last result is not this form's: never left under it
      say(err.message, true);
    } finally {
      $("compute").disabled = false;
    }
  }

  $("add").addEventListener("click", () => addRow("", 1).querySelector(".item").focus());
  $("calc-form").addEventListener("submit", compute);
  api("GET", "/calculator/items")
    .then((kinds) => {
      $("spellings").textContent = kinds.map((k) => k.spelling).join(", ");
    })
    .catch(() => {});
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "analyst") analystPage();
  if (page === "calculator") calculatorPage();
});

// exposed for tests and the console
window.sharpdp = { upper, lower };
