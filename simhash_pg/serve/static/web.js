// simhash-pg web page: the search, the add and the text comparison (JSON posts).
// Results come back as server-rendered, escaped HTML fragments; anything from
// the user or the server's JSON errors is set as text, never as HTML.
"use strict";

function $(id) { return document.getElementById(id); }

function headers() {
  const h = { "Content-Type": "application/json" };
  const token = $("token") ? $("token").value.trim() : "";
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  if (r.ok) return r;
  let detail = r.status + " " + r.statusText;
  try {
    const e = await r.json();
    detail = typeof e.detail === "string" ? e.detail
      : (e.detail || []).map((d) => (d.loc || []).join(".") + ": " + d.msg).join("; ");
  } catch (_) { /* not JSON: keep the status */ }
  throw new Error(detail);
}

function showError(el, err) {
  el.replaceChildren();
  const p = document.createElement("p");
  p.className = "error";
  p.textContent = err.message;
  el.append(p);
}

function query() {
  const body = { text: $("text").value };
  const k = $("k").value;
  if (k !== "") body.k = Number(k);
  return body;
}

async function search(event) {
  event.preventDefault();
  const out = $("results");
  $("compare").replaceChildren();
  try {
    const r = await post("/search", query());
    out.innerHTML = await r.text();  // server-rendered, autoescaped
  } catch (err) { showError(out, err); }
}

async function compareText(event) {
  const button = event.target.closest("button.compare-text");
  if (!button) return;
  const out = $("compare");
  try {
    const body = query();  // the search's text and k: the evidence is at that k
    body.b = Number(button.dataset.id);
    const r = await post("/compare-text", body);
    out.innerHTML = await r.text();
    out.scrollIntoView({ behavior: "smooth", block: "start" });
  } catch (err) { showError(out, err); }
}

async function add(event) {
  event.preventDefault();
  const out = $("add-result");
  const body = { text: $("text").value };
  if ($("key").value) body.key = $("key").value;
  try {
    const r = await (await post("/v1/documents", body)).json();
    let msg = r.status + (r.id ? " as #" + r.id : "");
    if (r.duplicate_of) msg += ": a near-duplicate of #" + r.duplicate_of + " at distance " + r.distance;
    if (r.error) msg += ": " + r.error;
    out.className = "";
    out.textContent = msg;
  } catch (err) { out.className = "error"; out.textContent = err.message; }
}

function readFile() {
  const file = $("file").files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => { $("text").value = reader.result; };
  reader.onerror = () => { showError($("results"), new Error("cannot read " + file.name)); };
  reader.readAsText(file);  // UTF-8
}

document.addEventListener("DOMContentLoaded", () => {
  if (!$("search-form")) return;
  $("search-form").addEventListener("submit", search);
  $("add-form").addEventListener("submit", add);
  $("file").addEventListener("change", readFile);
  $("results").addEventListener("click", compareText);
});
