// toolsift console: everything shown comes from the admin API (same origin), rendered as text nodes only,
// since tool names and descriptions come from MCP servers and queries from models. The admin key, when the
// gateway asks for one, lives in this tab's sessionStorage and travels only as a Bearer header.
"use strict";

const KEY = "toolsift.adminKey";
const REFRESH_MS = 5000;
const $ = (id) => document.getElementById(id);

class NeedKey extends Error {}

async function api(path) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = "Bearer " + key;
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  let body = null;
  try { body = await response.json(); } catch (_) { /* not JSON: reported below */ }
  const message = body && body.error ? body.error.message : response.statusText;
  if (response.status === 401 || response.status === 403) {
    askForKey(message);
    throw new NeedKey(message);
  }
  if (!response.ok) throw new Error(message || `HTTP ${response.status}`);
  return body;
}

function askForKey(message) {
  sessionStorage.removeItem(KEY);
  $("loading").hidden = true;
  $("key-message").textContent = message;
  $("key-form").hidden = false;
  $("console").hidden = true;
  $("forget-key").hidden = true;
  $("key").focus();
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function row(cells, className) {
  const tr = el("tr", null, className);
  for (const cell of cells) {
    const td = cell instanceof Node ? cell : el("td", cell);
    if (cell instanceof Node && cell.tagName !== "TD") { const wrap = el("td"); wrap.append(cell); tr.append(wrap); }
    else tr.append(td);
  }
  return tr;
}

function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(...rows);
}

const num = (value) => { const td = el("td", value === null || value === undefined ? "-" : value, "num"); return td; };
const fixed = (value) => num(value === null || value === undefined ? null : Number(value).toFixed(2));
const short = (text, limit = 110) => { const line = (text || "").trim().split("\n")[0]; return line.length > limit ? line.slice(0, limit - 1) + "…" : line; };

function status(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function loadMetrics() {
  const metrics = await api("/admin/metrics");
  const labels = {
    requests: "requests", rounds: "upstream rounds", search_calls: "searches", tools_discovered: "tools found",
    tools_prefetched: "tools prefetched", tool_tokens_saved: "tool tokens kept out",
    cache_hits_lost: "cache hits lost (est.)", upstream_cached_tokens: "cached tokens read", mcp_calls: "MCP calls",
    mcp_errors: "MCP errors", recent_likely_misses: "likely misses (recent)",
  };
  const items = Object.entries(labels).map(([key, label]) => {
    const box = el("div");
    box.append(el("dt", label), el("dd", (metrics[key] ?? 0).toLocaleString()));
    return box;
  });
  $("metrics").replaceChildren(...items);
}

// A down server's cause, and what it last wrote on stderr (its own words) under it.
function errorCell(server) {
  const td = el("td", server.error || "", server.error ? "error" : "");
  if (server.stderr && server.stderr.length) {
    const box = el("details", null, "stderr");
    box.append(el("summary", `its stderr (last ${server.stderr.length} lines)`), el("pre", server.stderr.join("\n")));
    td.append(box);
  }
  return td;
}

// Whether a server's tools reach the model loaded or deferred; a server that is not up serves neither, and says so
// in the error colour.
function statusCell(server) {
  if (server.state === "up") {
    const status = server.deferred ? "deferred" : "loaded";
    return el("td", status, "status-" + status);
  }
  if (server.state === "disabled") return el("td", "disabled", "status-disabled");
  return el("td", server.state === "connecting" ? "pending" : "down", "status-down");
}

const SEARCH_MODES = {
  hybrid: "keywords and meaning",
  embedding: "keywords only for now",
  keywords: "keywords only",
};

async function loadServers() {
  const data = await api("/admin/servers");
  fill("servers", data.servers.map((s) => row([
    s.name, el("td", s.state, "state-" + s.state), s.transport, num(s.tools), statusCell(s), errorCell(s),
  ], "server")));
  const search = data.search || {};
  const mode = SEARCH_MODES[search.mode] || search.mode || "?";
  $("search-state").textContent = `Search: ${mode}` + (search.reason ? ` (${search.reason})` : "");
  const select = $("search-server");
  const chosen = select.value;
  select.replaceChildren(el("option", "any server"), ...data.servers.map((s) => el("option", s.name)));
  select.options[0].value = "";
  select.value = chosen;
}

let toolSetsFilled = false;
async function loadTools() {
  const toolSet = $("tools-tool-set").value;
  const data = await api("/admin/tools" + (toolSet ? "?tool_set=" + encodeURIComponent(toolSet) : ""));
  if (!toolSetsFilled) {
    for (const select of document.querySelectorAll("select.tool-sets")) {
      select.append(...data.tool_sets.map((name) => el("option", name)));
    }
    toolSetsFilled = true;
  }
  fill("tools", data.tools.map((t) => row([
    t.name, t.server, el("td", t.status, "status-" + t.status), num(t.tokens), short(t.description),
  ], "tool")));
  await loadManifest(toolSet);
}

async function loadManifest(toolSet) {
  const data = await api("/admin/manifest" + (toolSet ? "?tool_set=" + encodeURIComponent(toolSet) : ""));
  if (!data.deferred) {
    $("manifest-tokens").textContent = "Nothing is deferred: every tool is sent as is, without search_tools.";
    $("manifest").textContent = "";
    return;
  }
  const kind = data.exact_tokens ? "o200k_base tokens" : "estimated tokens";
  $("manifest-tokens").textContent =
    `search_tools definition: ${data.tokens.toLocaleString()} ${kind}, standing in for ` +
    `${data.deferred_tools} deferred tools (about ${data.deferred_tool_tokens.toLocaleString()} tokens).`;
  // The description is what the model reads: shown as text, its line breaks as line breaks.
  $("manifest").textContent = data.description;
  $("manifest-json").textContent = JSON.stringify(data.definition, null, 2);
  $("manifest-json-box").hidden = false;
}

function explanation(matched, learned) {
  const box = el("td");
  const fields = Object.entries(matched || {});
  if (learned) box.append(el("span", `learned from ${learned} use${learned === 1 ? "" : "s"}`, "field"));
  if (!fields.length) box.append(el("span", "no word matched (meaning only)", "weak"));
  for (const [field, words] of fields) {
    const part = el("span", null, "field");
    part.append(el("b", field + ": "), document.createTextNode(words.join(", ")));
    box.append(part);
  }
  return box;
}

async function runSearch(event) {
  event.preventDefault();
  const params = new URLSearchParams();
  for (const line of $("query").value.split("\n")) {  // one query per line: several are one call
    if (line.trim()) params.append("query", line.trim());
  }
  for (const [name, id] of [["server", "search-server"], ["tool_set", "search-tool-set"], ["k", "search-k"]]) {
    const value = $(id).value.trim();
    if (value) params.set(name, value);
  }
  try {
    const data = await api("/admin/search?" + params.toString());
    const found = data.results.length;
    const queries = data.queries || [];
    const asked = queries.map((q) => `“${q}”`).join(", ") || `“${params.get("query")}”`;
    $("search-mode").textContent = (found
      ? `${found} result(s) for ${queries.length} quer${queries.length === 1 ? "y" : "ies"}, ${data.mode}`
      : `No tool found for ${asked} (search: ${data.mode}).`) +
      (data.weak ? " — no tool matches these words; closest by meaning (weak matches)" : "");
    $("search-mode").className = found ? "note" : "note empty";
    fill("search-results", data.results.map((r) => row([
      num(r.rank), el("td", r.query), el("td", r.name, r.weak ? "weak" : ""), fixed(r.score), fixed(r.lexical), fixed(r.semantic),
      num(r.match === null ? null : Math.round(r.match * 100) + "%"), explanation(r.matched, r.learned),
    ], "result")));
    $("search-results").hidden = !found;
    const loaded = data.loaded || [];
    $("search-loaded").textContent = loaded.length
      ? "Loaded from the start, so the model has them without a search; among all tools they rank: " +
        loaded.map((r) => `${r.name} (#${r.rank}${r.weak ? ", weak" : ""})`).join(", ")
      : "";
    $("search-loaded").hidden = !loaded.length;
    $("search-text").textContent = data.text;
    $("search-text-box").hidden = false;
  } catch (error) {
    if (!(error instanceof NeedKey)) $("search-mode").textContent = "Search failed: " + error.message;
  }
}

function searchesCell(searches) {
  const td = el("td");
  if (!searches.length) td.append(el("span", "none", "note"));
  for (const search of searches) {
    const line = el("div");
    const query = search.queries ? search.queries.map((text) => `“${text}”`).join(", ")
      : search.query === null ? "(by name or server)" : `“${search.query}”`;
    line.append(document.createTextNode(`${query} → ${search.found.length ? search.found.join(", ") : "nothing"}`));
    for (const reason of search.miss) { line.append(" ", el("span", "likely miss: " + reason, "miss-mark")); }
    td.append(line);
  }
  return td;
}

async function loadRequests() {
  const data = await api("/admin/requests");
  fill("requests", data.requests.map((r) => row([
    new Date(r.time * 1000).toLocaleTimeString(), el("td", r.id), el("td", r.identity || "-"), num(r.status),
    r.model || "-", num(r.rounds),
    searchesCell(r.searches), r.tools_called.join(", ") || "-", num(r.tokens_saved), num(r.cache_hits_lost),
    num(r.cache_read_tokens), num(r.cache_write_tokens), num(r.total_ms),
  ], "request" + (r.likely_miss ? " miss" : ""))));
}

async function refresh() {
  try {
    await Promise.all([loadMetrics(), loadServers(), loadRequests()]);
    status("updated " + new Date().toLocaleTimeString());
    return true;
  } catch (error) {
    if (!(error instanceof NeedKey)) {
      status("cannot reach the admin API: " + error.message, true);
      $("loading").textContent = "Cannot reach the admin API: " + error.message;
    }
    return false;
  }
}

async function start() {
  status("loading…");
  if (await refresh()) {
    $("loading").hidden = true;
    $("key-form").hidden = true;
    $("console").hidden = false;
    $("forget-key").hidden = !sessionStorage.getItem(KEY);
    try { await loadTools(); } catch (error) { if (!(error instanceof NeedKey)) status(error.message, true); }
  }
}

// A link with the key in its fragment (`toolsift demo` prints one beyond loopback): a fragment never leaves the
// browser; the key is kept as a typed one is, and taken out of the address bar.
function keyFromLink() {
  const key = new URLSearchParams(location.hash.slice(1)).get("key");
  if (!key) return;
  sessionStorage.setItem(KEY, key.trim());
  history.replaceState(null, "", location.pathname + location.search);
}

document.addEventListener("DOMContentLoaded", () => {
  keyFromLink();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("key").value.trim());
    $("key").value = "";
    start();
  });
  $("forget-key").addEventListener("click", () => { sessionStorage.removeItem(KEY); location.reload(); });
  $("search-form").addEventListener("submit", runSearch);
  $("tools-tool-set").addEventListener("change", () => loadTools().catch((error) => status(error.message, true)));
  start();
  setInterval(() => { if (!$("console").hidden) refresh(); }, REFRESH_MS);
});
