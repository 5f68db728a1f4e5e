#!/usr/bin/env node
// A small memory system in plain Node.js (no npm dependency), plugged into membench-gate over
// the adapter protocol: JSON-RPC 2.0, one JSON object per line on stdin/stdout, logs on stderr.
//
// The memory: records are bags of lowercase words (longer than 2 characters). A search scores
// each record of the query's source by cosine similarity of word counts, plus a bonus for shared
// files, ranks by (score desc, id) so equal scores always come back in the same order, and
// abstains when the best cosine is under `tau`. `push` injects the records whose entity or alias
// is mentioned in the turn and was not mentioned in the earlier turns.
"use strict";

const readline = require("node:readline");

let options = { tau: 0.2 };
let records = [];

function words(text) {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter((w) => w.length > 2);
}

function vector(text) {
  const counts = new Map();
  for (const w of words(text)) counts.set(w, (counts.get(w) || 0) + 1);
  let norm = 0;
  for (const c of counts.values()) norm += c * c;
  return { counts, norm: Math.sqrt(norm) };
}

function cosine(a, b) {
  if (!a.norm || !b.norm) return 0;
  let dot = 0;
  for (const [w, c] of a.counts) dot += c * (b.counts.get(w) || 0);
  return dot / (a.norm * b.norm);
}

function byScoreThenId(a, b) {
  return b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function search(query) {
  const q = vector(query.text);
  const files = new Set(query.files);
  const ranked = records
    .filter((r) => r.source === query.source)
    .map((r) => {
      const cos = cosine(q, r.vec);
      const shared = files.size ? r.files.filter((f) => files.has(f)).length / files.size : 0;
      return { id: r.id, score: Math.round((0.7 * cos + 0.3 * Math.min(1, shared)) * 1e9) / 1e9, cos };
    })
    .filter((h) => h.score > 0)
    .sort(byScoreThenId)
    .slice(0, query.k);
  const best = ranked.length ? Math.max(...ranked.map((h) => h.cos)) : 0;
  return { hits: ranked.map(({ id, score }) => ({ id, score })), abstain: best < options.tau };
}

function mentions(text, name) {
  const hay = ` ${words(text).join(" ")} `;
  const needle = words(name).join(" ");
  return needle.length > 0 && hay.includes(` ${needle} `);
}

function push(query) {
  const earlier = query.context.join("\n");
  const ids = [];
  for (const r of records) {
    if (r.source !== query.source || !r.entity) continue;
    const names = [r.entity.replace(/-/g, " "), ...r.aliases];
    const named = names.some((n) => mentions(query.text, n));
    const before = names.some((n) => mentions(earlier, n));
    if (named && !before) ids.push(r.id);
  }
  return { ids: ids.sort().slice(0, query.k) };
}

const methods = {
  initialize(params) {
    options = { ...options, ...params.options };
    return { protocol: 1, name: "node-memory", capabilities: { push: true, write: false } };
  },
  reset() {
    records = [];
    return null;
  },
  ingest(params) {
    for (const r of params.records) records.push({ ...r, vec: vector(r.text) });
    return null;
  },
  search: (params) => search(params.query),
  push: (params) => push(params.query),
  shutdown: () => null,
};

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  let reply;
  try {
    const method = methods[request.method];
    if (!method) throw Object.assign(new Error(`unknown method ${request.method}`), { code: -32601 });
    reply = { jsonrpc: "2.0", id: request.id, result: method(request.params) };
  } catch (err) {
    console.error(err.stack);
    const error = { code: err.code || -32000, message: String(err.message) };
    // An exception of this code: `data` names it, so the gate reports it as the adapter's own.
    if (!err.code) error.data = { exception: { type: err.name, message: String(err.message) }, function: request.method };
    reply = { jsonrpc: "2.0", id: request.id, error };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
