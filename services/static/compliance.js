"use strict";

function query() {
  const params = new URLSearchParams();
  const since = document.getElementById("since").value;
  const until = document.getElementById("until").value;
  if (since) params.set("since", dayStart(since));
  if (until) params.set("until", dayStart(until, 1));
  for (const [name, id] of [["user", "user"], ["event_type", "event-type"], ["document", "doc"]]) {
    const value = document.getElementById(id).value.trim();
    if (value) params.set(name, value);
  }
  return params;
}

const PAGE_SIZE = 50;
let shownFrom = 0;

async function search(from = 0) {
  const error = document.getElementById("search-error");
  error.textContent = "";
  const params = query();
  params.set("offset", String(from));
  params.set("limit", String(PAGE_SIZE));
  let page;
  try { page = await api("GET", `/api/audit/records?${params}`); }
  catch (problem) { error.textContent = problem.message; return; }
  shownFrom = page.offset;
  const body = document.getElementById("records");
  body.replaceChildren();
  for (const row of page.rows) {
    const line = element("tr");
    const open = element("button", String(row.entry), "link");
    open.type = "button";
    open.addEventListener("click", () => showRecord(row.entry));
    const cell = element("td");
    cell.append(open);
    line.append(cell, element("td", localTime(row.time)), element("td", row.type),
                element("td", row.user), element("td", row.summary));
    body.append(line);
  }
  const last = page.offset + page.rows.length;
  document.getElementById("page-note").textContent = page.total
    ? `Showing ${page.offset + 1}-${last} of ${page.total} entries, newest first`
    : "No entries match.";
  document.getElementById("newer").disabled = page.offset === 0;
  document.getElementById("older").disabled = last >= page.total;
}

const RETRIEVERS = {
  lexical: "keyword search (BM25)",
  dense: "meaning search (vectors)",
  graph: "knowledge graph",
};

// What each score says, in words: the numbers stay, beside what they measure.
function whyFound(c) {
  const found = Object.entries(c.retrievers || {})
    .map(([name, hit]) => `${RETRIEVERS[name] || name} ranked it ${hit.rank}`);
  const parts = found.length ? [`${found.join(" and ")}.`] : [];
  if (c.fused !== undefined) {
    parts.push(`Reciprocal rank fusion ${Number(c.fused).toFixed(4)} (higher when more searches rank it near the top).`);
  }
  const stages = c.stages || {};
  if ("cross_encoder" in stages) {
    parts.push(`Cross-encoder ${Number(stages.cross_encoder).toFixed(3)} (how well the passage answers the question).`);
  }
  if ("cage" in stages) {
    parts.push(`Coherence reranker ${Number(stages.cage).toFixed(3)} (how well it fits with the other passages).`);
  }
  if ("cosine" in stages) {
    parts.push(`Of which: closeness in meaning to the question ${Number(stages.cosine).toFixed(3)}`);
    if ("cage_coherence" in stages) parts.push(`and agreement with the other passages ${Number(stages.cage_coherence).toFixed(3)}.`);
  }
  if ("chain" in stages) parts.push(`Place ${Number(stages.chain) + 1} in the title-and-entity chain.`);
  const explained = ["cross_encoder", "cage", "chain", "cosine", "cage_coherence"];
  for (const [name, value] of Object.entries(stages)) {
    if (!explained.includes(name)) parts.push(`${name} ${Number(value).toFixed(3)}.`);
  }
  return parts.join(" ");
}

// A passage as the officer needs it: its document, section and words, with its hash.
function passageCell(chunkId, passages) {
  const cell = element("td");
  const passage = passages[chunkId];
  if (!passage) {
    cell.append(element("span", "no longer in the index", "meta"));
  } else {
    cell.append(element("strong", `${passage.title} v${passage.version}`));
    if (passage.section) cell.append(element("div", passage.section, "meta"));
    const words = element("details", null, "passage");
    words.append(element("summary", "Text"), element("p", passage.text));
    cell.append(words);
  }
  cell.append(element("div", chunkId, "meta hash"));
  return cell;
}

function candidatesTable(candidates, passages) {
  const table = element("table", null, "candidates");
  const head = element("tr");
  for (const title of ["Rank", "Passage", "Access", "Why it was found"]) head.append(element("th", title));
  table.append(head);
  candidates.forEach((c, n) => {
    const row = element("tr");
    row.append(element("td", String(n + 1)), passageCell(c.chunk_id, passages),
               element("td", c.access || ""), element("td", whyFound(c)));
    table.append(row);
  });
  return table;
}

// A citation check as what it is: the sentence is the passage's own words (quoted), or
// the verifier found the passage implies it (entailed), or it failed.
function checkText(check) {
  const support = check.support
    || ((check.reasons || []).some((r) => r.includes("verbatim")) ? "quoted" : check.verdict === "supported" ? "entailed" : "none");
  if (support === "quoted") return "quoted: the sentence is the passage's own words";
  if (support === "entailed") return `entailed: the verifier found the passage implies it (score ${check.score})`;
  return `not kept: ${check.verdict}${check.scope ? ` (${check.scope})` : ""}`;
}

// The export of the chosen days, with proofs; an empty range is said, not downloaded.
async function exportRange() {
  const note = document.getElementById("export-note");
  note.textContent = "";
  note.className = "meta";
  const params = new URLSearchParams();
  const chosen = query();
  for (const name of ["since", "until"]) if (chosen.get(name)) params.set(name, chosen.get(name));
  const response = await fetch(`/api/audit/export?${params}`, { credentials: "same-origin" });
  if (!response.ok) {
    note.textContent = `Export failed: ${response.statusText}`;
    note.className = "error";
    return;
  }
  const text = await response.text();
  const count = text ? text.trimEnd().split("\n").length : 0;
  if (!count) {
    note.textContent = "No entries in these days: nothing to export.";
    return;
  }
  saveAs(text, "audit-export.jsonl", "application/x-ndjson");
  note.textContent = `Exported ${count} entries with their proofs.`;
}

async function showRecord(position) {
  const data = await api("GET", `/api/audit/records/${position}`);
  const panel = document.getElementById("record");
  panel.classList.remove("hidden");
  const body = document.getElementById("record-body");
  body.replaceChildren();
  const entries = [{ entry: data.entry, ...data.record }, ...data.related];
  document.getElementById("record-title").textContent = `Record ${data.entry} (${data.record.type})`;
  for (const entry of entries) {
    const details = entry.details || {};
    const part = element("section");
    part.append(element("h3", `Entry ${entry.entry}: ${entry.type} by ${entry.actor.user} at ${localTime(entry.time)}`));
    if (details.query) part.append(element("p", `Asked: ${details.query}`));
    if (entry.type === "question") {
      part.append(element("p", `Policy version ${details.policy_version}; models ${JSON.stringify(details.models)}`, "meta"));
      part.append(candidatesTable(details.candidates || [], data.passages));
    }
    if (entry.type === "answer") {
      const short = details.decision ? ` (in short: ${details.decision})` : "";
      const verdict = details.refusal ? `Refused: ${details.refusal}` : `Answered${short}`;
      part.append(element("p", verdict, details.refusal ? "bad" : "ok"));
      part.append(element("p", `Generator ${details.generator}; verifier ${JSON.stringify(details.verifier)}`, "meta"));
      for (const sentence of details.sentences || []) {
        const cited = sentence.citations.map((c) => `${c.doc_id} v${c.version} [${c.start}-${c.end}]`).join("; ");
        part.append(element("p", `"${sentence.text}" cites ${cited}`));
      }
      for (const check of details.checks || []) {
        const passage = data.passages[check.chunk_id];
        const where = passage ? ` (${passage.title} v${passage.version})` : "";
        part.append(element("p", `"${check.sentence}"${where}: ${checkText(check)}`, check.verdict === "supported" ? "ok check" : "bad check"));
      }
    }
    const raw = element("details");
    raw.append(element("summary", "Whole record"), element("pre", JSON.stringify(entry, null, 2)));
    part.append(raw);
    body.append(part);
  }
  body.append(element("p", `Inclusion proof: tree size ${data.proof.tree_size}, root ${data.proof.root}`, "meta"));
  panel.scrollIntoView();
}

async function loadStatus() {
  const status = await api("GET", "/api/audit/status");
  document.getElementById("entries").textContent = String(status.entries);
  const cp = status.latest_checkpoint;
  document.getElementById("checkpoint").textContent = cp ? `size ${cp.size}, signed ${cp.time}` : "none yet";
  const witness = status.witness;
  const seen = witness.last_witnessed;
  const bound = `at most ${witness.checkpoint_every_entries} entries or ${witness.checkpoint_every_seconds} s`;
  const witnessText = !witness.configured
    ? "none configured: cutting the end off the log would not show (see the README)"
    : `${witness.configured}; last witnessed checkpoint ${seen ? `size ${seen.size}, ${seen.time}` : "none yet"}; ` +
      `${witness.unwitnessed_entries} newer entries not yet witnessed (${bound})` +
      (witness.error ? `. FAILING: ${witness.error}` : "");
  const witnessNode = document.getElementById("witness");
  witnessNode.textContent = witnessText;
  witnessNode.classList.toggle("error", Boolean(witness.error) || !witness.configured);
  showVerification(status.last_verification);
}

function showVerification(result) {
  const node = document.getElementById("verification");
  if (!result) return;
  node.className = result.ok ? "ok" : "bad";
  node.textContent = result.ok
    ? `verified: ${result.entries} entries, ${result.checkpoints} checkpoints, at ${result.at}`
    : `FAILED at ${result.at}: ${result.problems.join("; ")}`;
}

document.addEventListener("DOMContentLoaded", async () => {
  await primeCsrf();
  document.getElementById("sign-out").addEventListener("click", signOut);
  const me = await api("GET", "/api/me");
  document.getElementById("who").textContent = `${me.user_id} (${me.roles.join(", ")})`;
  document.getElementById("search").addEventListener("submit", (event) => { event.preventDefault(); search(); });
  document.getElementById("newer").addEventListener("click", () => search(Math.max(0, shownFrom - PAGE_SIZE)));
  document.getElementById("older").addEventListener("click", () => search(shownFrom + PAGE_SIZE));
  document.getElementById("export").addEventListener("click", exportRange);
  document.getElementById("policy-changes").addEventListener("click", () => {
    document.getElementById("event-type").value = "policy_change"; search();
  });
  document.getElementById("break-glass-uses").addEventListener("click", () => {
    document.getElementById("event-type").value = "break_glass_use"; search();
  });
  document.getElementById("feedback-flags").addEventListener("click", () => {
    document.getElementById("event-type").value = "feedback"; search();
  });
  document.getElementById("verify-now").addEventListener("click", async () => {
    document.getElementById("verification").textContent = "verifying...";
    showVerification(await api("POST", "/api/audit/verify"));
    await loadStatus();
  });
  await loadStatus();
  await search();
});
