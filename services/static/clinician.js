"use strict";

let current = null; // the answer on screen
let conversation = null; // the last answer of the conversation: a follow-up is read with it
const opened = new Map(); // documents fetched for the answer on screen: each view is audited once

function describe(span) {
  const parts = [span.title];
  if (span.heading_path.length) parts.push(span.heading_path.join(" > "));
  if (span.page) parts.push(`page ${span.page}`);
  parts.push(`version ${span.version}`, `effective ${span.effective_from}`);
  if (span.scan_confidence !== undefined) parts.push(scanNote(span));
  return parts.join(" | ");
}

// A page read from a scan is only as good as the recogniser's reading of it.
function scanNote(span) {
  const read = `read from a scan (OCR confidence ${Math.round(span.scan_confidence)}%)`;
  return span.scan_check ? `${read}: check against the original` : read;
}

const SOURCE_HINT = "Choose a citation to see its source.";

// Nothing of an earlier question stays on screen (or on paper) beside a new one.
function clearAnswer(busyText) {
  opened.clear();
  current = null;
  const box = document.getElementById("answer");
  box.classList.remove("refusal", "failed");
  box.replaceChildren(element("p", busyText, "busy"));
  document.getElementById("source").replaceChildren(element("p", SOURCE_HINT, "meta"));
}

function renderError(message) {
  const box = document.getElementById("answer");
  box.classList.add("failed");
  box.replaceChildren(element("h2", "No answer: the question could not be asked"), element("p", message, "error"));
  box.setAttribute("role", "alert");
}

function renderAnswer(answer, asOf) {
  opened.clear();
  const box = document.getElementById("answer");
  box.removeAttribute("role");
  box.replaceChildren();
  box.classList.toggle("refusal", answer.refused);
  if (answer.asked_at) {
    box.append(element("p", `Asked ${localTime(answer.asked_at)}: "${answer.question}". Reopened from your history as it was answered then, not asked again.`, "reopened"));
    if (answer.withheld_sentences) {
      box.append(element("p", `${answer.withheld_sentences} sentence(s) not shown again: you may no longer read their sources.`, "unanswered"));
    }
  }
  if (asOf) box.append(element("p", `As of ${asOf}: the documents in force on that day.`, "scope"));
  // How the question was read comes first: the answer is to that question.
  if (answer.follows) {
    box.append(element("p", `Read as a follow-up to "${answer.follows}": ${answer.read_as}`, "follow-up-read"));
  } else if (answer.read_as) {
    box.append(element("p", `Read as: ${answer.read_as}`, "meta"));
  }
  if (answer.refused) {
    box.append(element("h2", "The documents do not answer this question"));
    box.append(element("p", `Why: ${answer.refusal}.`, "reason"));
    if (answer.closest_sources.length) {
      box.append(element("p", "Closest sources (open one to read it):"));
      const list = element("ul");
      answer.closest_sources.forEach((source, index) => {
        // The heading path starts with the document's own title: it is said once.
        const sections = source.heading_path.filter((heading, n) => n > 0 || heading !== source.title);
        const label = sections.length ? `${source.title}: ${sections.join(" > ")}` : source.title;
        const open = element("button", label, "source-link");
        open.type = "button";
        open.addEventListener("click", () => showSource(source, index + 1, answer.request_id));
        const item = element("li");
        item.append(open);
        list.append(item);
      });
      box.append(list);
    }
  } else {
    if (answer.scope) box.append(element("p", `${answer.scope}:`, "scope"));
    if (answer.decision) {
      const short = element("p", `In short: ${answer.decision}`, "decision");
      short.title = "The generator's reading of the cited sentences below";
      box.append(short);
    }
    let number = 0;
    const citeButtons = (sentence, into) => {
      for (const span of sentence.citations) {
        number += 1;
        const cited = number; // each button keeps its own number
        const button = element("button", String(cited), "cite");
        button.type = "button";
        button.title = describe(span);
        button.setAttribute("aria-label", `Citation ${cited}: ${describe(span)}`);
        button.addEventListener("click", () => showSource(span, cited, answer.request_id));
        button.addEventListener("mouseenter", () => showSource(span, cited, answer.request_id));
        into.append(button);
        if (span.scan_check) into.append(element("span", `scan: ${scanNote(span)}`, "scan-check"));
      }
    };
    // Rows of a table quoted one after another are shown as one table, each row with
    // its citations in a last column.
    let rows = [];
    const flushRows = () => {
      if (rows.length) box.append(answerTable(rows, citeButtons));
      rows = [];
    };
    for (const sentence of answer.sentences) {
      if (tableCells(sentence.text)) {
        rows.push(sentence);
        continue;
      }
      flushRows();
      const line = element("p", sentence.text, "sentence");
      citeButtons(sentence, line);
      box.append(line);
    }
    flushRows();
  }
  for (const conflict of answer.conflicts || []) box.append(renderConflict(conflict, answer.request_id));
  if (answer.unanswered_parts && answer.unanswered_parts.length) {
    box.append(element("p", `The documents found do not answer: ${answer.unanswered_parts.join("; ")}.`, "unanswered"));
  }
  box.append(feedbackForm(answer));
  if (!answer.refused) {
    box.append(answerTools(answer));
    const printed = element("ol", null, "print-only printed-sources");
    answer.sentences.flatMap((sentence) => sentence.citations)
      .forEach((span) => printed.append(element("li", describe(span))));
    box.append(printed);
  }
  const details = element("details", null, "meta");
  details.append(element("summary", "How this answer was made"),
                 element("p", `Written by ${answer.generator}; each sentence checked against its source by ${answer.verifier}; audit entry ${answer.audit_entry}.`));
  box.append(details);
}

// The cells of a Markdown table row ("| a | b |"), or null for any other text.
function tableCells(text) {
  const row = text.trim();
  if (!row.startsWith("|") || !row.endsWith("|") || row.length < 3) return null;
  return row.slice(1, -1).split("|").map((cell) => cell.trim());
}

function isRule(cells) {
  return cells.every((cell) => /^:?-{3,}:?$/.test(cell));
}

// A run of quoted table rows as a table: a first row with no figures, followed by
// others, is the header the documents gave it.
function answerTable(sentences, citeButtons) {
  const table = element("table", null, "answer-table");
  const width = Math.max(...sentences.map((s) => tableCells(s.text).length));
  const header = sentences.length > 1 && !/\d/.test(sentences[0].text);
  sentences.forEach((sentence, index) => {
    const asHeader = header && index === 0;
    const row = element("tr", null, "sentence");
    const cells = tableCells(sentence.text);
    for (let i = 0; i < width; i += 1) {
      const cell = element(asHeader ? "th" : "td", cells[i] ?? "");
      if (asHeader) cell.scope = "col";
      row.append(cell);
    }
    const sources = element(asHeader ? "th" : "td", asHeader ? "Source" : null, "cites");
    citeButtons(sentence, sources);
    row.append(sources);
    table.append(row);
  });
  return table;
}

// The document's text as the reader sees it: prose as written, Markdown tables as tables;
// what the citation quotes is marked (in a table, the rows it covers).
function documentView(text, span) {
  const view = element("div", null, "document");
  let prose = "";
  let table = null;
  let marked = null;
  const flushProse = (end) => {
    if (!prose) return;
    const start = end - prose.length;
    const from = Math.max(span.start, start);
    const to = Math.min(span.end, end);
    if (from < to || (span.start === span.end && start <= span.start && span.start < end)) {
      view.append(document.createTextNode(prose.slice(0, from - start)));
      const mark = element("mark", prose.slice(from - start, to - start));
      if (!marked) { mark.id = "cited-span"; marked = mark; }
      view.append(mark, document.createTextNode(prose.slice(to - start)));
    } else {
      view.append(document.createTextNode(prose));
    }
    prose = "";
  };
  let offset = 0;
  for (const line of text.split("\n")) {
    const start = offset;
    const end = start + line.length;
    offset = end + 1;
    const cells = tableCells(line);
    if (!cells) {
      table = null;
      prose += `${line}\n`;
      continue;
    }
    flushProse(start);
    if (!table) {
      table = element("table", null, "document-table");
      view.append(table);
    }
    if (isRule(cells)) continue;
    const header = table.rows.length === 0;
    const row = element("tr");
    const cited = start < span.end && span.start < end;
    for (const cell of cells) {
      const box = element(header ? "th" : "td");
      box.append(cited ? element("mark", cell) : document.createTextNode(cell));
      row.append(box);
    }
    if (cited) {
      row.classList.add("cited-row");
      if (!marked) { row.id = "cited-span"; marked = row; }
    }
    table.append(row);
  }
  flushProse(offset);
  return { view, marked };
}

// Documents that disagree about what the answer cites: each side with its standing and
// dates, the one that prevails first, never merged into one figure.
function renderConflict(conflict, requestId) {
  const box = element("section", null, "conflict");
  box.setAttribute("role", "alert");
  box.append(element("h3", `The sources disagree on ${conflict.about}`));
  const list = element("ol");
  conflict.sources.forEach((side, index) => {
    const item = element("li");
    const open = element("button", `${side.title} (version ${side.version}, effective ${side.effective_from}, ${side.authority} document)`, "source-link");
    open.type = "button";
    open.addEventListener("click", () => showSource(side, `${conflict.about}: ${index + 1}`, requestId));
    item.append(open, element("blockquote", side.statement));
    list.append(item);
  });
  box.append(list);
  box.append(element("p", conflict.precedence || "No rule decides which prevails: ask the documents' owners.", "precedence"));
  return box;
}

// A flag on the answer (wrong, unsafe, unhelpful) with a comment: audited with the
// documents it cited, for the compliance office and the documents' owners.
function feedbackForm(answer) {
  const form = element("details", null, "feedback");
  form.append(element("summary", "Flag this answer"));
  const kinds = element("fieldset");
  kinds.append(element("legend", "What is wrong with it?"));
  [["wrong", "Wrong"], ["unsafe", "Unsafe"], ["unhelpful", "Unhelpful"]].forEach(([value, label], index) => {
    const choice = element("label");
    const radio = element("input");
    Object.assign(radio, { type: "radio", name: `feedback-kind-${answer.request_id}`, value, checked: index === 0 });
    choice.append(radio, ` ${label} `);
    kinds.append(choice);
  });
  const comment = element("textarea");
  Object.assign(comment, { rows: 2, cols: 60, maxLength: 2000, className: "feedback-comment" });
  const commentLabel = element("label", "Comment (what should it have said?)");
  commentLabel.append(element("br"), comment);
  const send = element("button", "Send", "send-feedback");
  send.type = "button";
  const said = element("p", "", "meta");
  said.setAttribute("role", "status");
  send.addEventListener("click", async () => {
    const kind = form.querySelector("input[type=radio]:checked").value;
    send.disabled = true;
    try {
      const recorded = await api("POST", "/api/feedback", { request_id: answer.request_id, kind, comment: comment.value });
      said.textContent = `Thank you: recorded for review (audit entry ${recorded.audit_entry}).`;
    } catch (problem) {
      said.textContent = `Not recorded: ${problem.message}`;
      send.disabled = false;
    }
  });
  form.append(kinds, commentLabel, send, said);
  return form;
}

// The answer as text that keeps its sources: each sentence with its numbers, then each
// number's document, version, effective date and section.
function answerAsText(answer) {
  const lines = [`Question: ${answer.question}`, ""];
  const sources = [];
  for (const sentence of answer.sentences) {
    const marks = sentence.citations.map((span) => {
      sources.push(span);
      return `[${sources.length}]`;
    });
    lines.push(`${sentence.text} ${marks.join("")}`.trim());
  }
  lines.push("", "Sources:");
  sources.forEach((span, index) => lines.push(`[${index + 1}] ${describe(span)}`));
  return lines.join("\n");
}

function answerTools(answer) {
  const tools = element("p", null, "answer-tools");
  const copy = element("button", "Copy with sources", "link");
  copy.type = "button";
  const said = element("span", "", "meta");
  said.setAttribute("role", "status");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(answerAsText(answer));
      said.textContent = " Copied, with its sources.";
    } catch (problem) {
      said.textContent = ` Could not copy: ${problem.message}`;
    }
  });
  const print = element("button", "Print", "link");
  print.type = "button";
  print.addEventListener("click", () => window.print());
  tools.append(copy, print, said);
  return tools;
}

// A replaced document names its successor, which opens in the same pane (from its top).
function supersededNote(doc) {
  const note = element("p", "", "superseded");
  const newer = doc.superseded_by_document;
  if (!newer) {
    note.textContent = "Superseded: a newer version has replaced this document.";
    return note;
  }
  note.append("Superseded by ");
  const open = element("button", `${newer.title} (version ${newer.version}, in force from ${newer.effective_from})`, "source-link newer-version");
  open.type = "button";
  open.addEventListener("click", () => showSource(
    { ...newer, heading_path: [], page: null, start: 0, end: 0 }, "newer version", null));
  note.append(open);
  return note;
}

async function showSource(span, number, citedIn) {
  const pane = document.getElementById("source");
  let doc;
  try {
    const key = `${citedIn || ""}:${span.doc_id}`;
    if (!opened.has(key)) {
      const query = citedIn ? `?cited_in=${encodeURIComponent(citedIn)}` : "";
      opened.set(key, await api("GET", `/api/documents/${encodeURIComponent(span.doc_id)}${query}`));
    }
    doc = opened.get(key);
  } catch (problem) {
    pane.replaceChildren(element("p", `Source unavailable: ${problem.message}`, "error"));
    return;
  }
  pane.replaceChildren();
  pane.append(element("h2", `[${number}] ${doc.title}`));
  pane.append(element("p", describe(span), "meta"));
  if (span.scan_check) pane.append(element("p", `This page was ${scanNote(span)}.`, "warning"));
  if (doc.superseded_by) pane.append(supersededNote(doc));
  // Focusable so that a keyboard can scroll it; not live, so that a screen reader says
  // only the highlighted passage (below), never the whole document.
  const { view, marked } = documentView(doc.text, span);
  view.tabIndex = 0;
  view.setAttribute("aria-label", `${doc.title}, whole text`);
  pane.append(view);
  if (marked) marked.scrollIntoView({ block: "center" });
  document.getElementById("source-status").textContent =
    `Source ${number}: ${doc.title}. Highlighted: ${doc.text.slice(span.start, span.end)}`;
}

// One question at a time: while it is asked the button is disabled (a second press would
// be a second audited question) and the answer area says it is busy.
async function ask() {
  const button = document.getElementById("ask");
  const question = document.getElementById("question").value.trim();
  if (button.disabled || !question) return;
  const asOf = document.getElementById("as-of").value;
  const box = document.getElementById("answer");
  clearAnswer("Searching the documents...");
  button.disabled = true;
  box.setAttribute("aria-busy", "true");
  try {
    const body = { question };
    if (asOf) body.as_of = asOf;
    if (conversation) body.follow_up_of = conversation.request_id;
    current = await api("POST", "/api/ask", body);
    renderAnswer(current, asOf);
    continueConversation(current);
    loadHistory();
  } catch (problem) {
    renderError(problem.message);
  } finally {
    button.disabled = false;
    box.setAttribute("aria-busy", "false");
  }
}

// A conversation: the next question is sent as a follow-up of the last answer, and the
// server reads it with that question's subject when it names none of its own.
function continueConversation(answer) {
  conversation = answer;
  const note = document.getElementById("conversation");
  note.classList.toggle("hidden", !answer);
  document.getElementById("conversation-about").textContent =
    answer ? (answer.read_as || answer.question) : "";
}

// A past question reopens its answer as it was shown (from the audit record), without
// asking again; "Ask again" puts it back in the question box.
async function reopen(item) {
  clearAnswer("Opening your earlier answer...");
  try {
    current = await api("GET", `/api/history/${encodeURIComponent(item.request_id)}`);
    renderAnswer(current, null);
    continueConversation(current);
  } catch (problem) {
    renderError(problem.message);
  }
}

async function loadHistory() {
  const list = document.getElementById("history");
  list.replaceChildren();
  for (const item of await api("GET", "/api/history")) {
    const entry = element("li");
    const open = element("button", item.question, "link");
    open.type = "button";
    open.title = "Show the answer given then";
    open.disabled = !item.request_id;
    open.addEventListener("click", () => reopen(item));
    const again = element("button", "Ask again", "link small");
    again.type = "button";
    again.setAttribute("aria-label", `Ask again: ${item.question}`);
    again.addEventListener("click", () => {
      const box = document.getElementById("question");
      box.value = item.question;
      box.focus();
    });
    entry.append(open, element("span", ` ${localTime(item.time)} `, "meta"), again);
    list.append(entry);
  }
}

async function loadMe() {
  const me = await api("GET", "/api/me");
  document.getElementById("who").textContent = `${me.user_id} (${me.roles.join(", ")})`;
  document.getElementById("compliance-link").classList.toggle("hidden", !me.may["review-audit"]);
  document.getElementById("admin-link").classList.toggle("hidden", !me.may.ingest);
  document.getElementById("break-glass-panel").classList.toggle("hidden", !me.may["request-break-glass"]);
  const banner = document.getElementById("break-glass-banner");
  banner.classList.toggle("hidden", !me.break_glass_until);
  banner.textContent = me.break_glass_until ? `EMERGENCY ACCESS ACTIVE for patient ${me.break_glass_patient} until ${localTime(me.break_glass_until)}: every record you open is reported.` : "";
}

// Paper copies of an answer go out of date: each says when it was printed.
window.addEventListener("beforeprint", () => {
  document.getElementById("print-note").textContent =
    `Printed on ${localTime(new Date().toISOString())}: an uncontrolled copy. Check the current documents before acting on it.`;
});

document.addEventListener("DOMContentLoaded", async () => {
  await primeCsrf();
  document.getElementById("sign-out").addEventListener("click", signOut);
  document.getElementById("new-conversation").addEventListener("click", () => {
    continueConversation(null);
    document.getElementById("question").focus();
  });
  const form = document.getElementById("ask-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await ask();
  });
  document.getElementById("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  document.getElementById("break-glass-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("break-glass-error");
    error.textContent = "";
    try {
      await api("POST", "/api/break-glass", {
        reason: document.getElementById("break-glass-reason").value,
        patient_id: document.getElementById("break-glass-patient").value,
        minutes: Number(document.getElementById("break-glass-minutes").value),
      });
      await loadMe();
    } catch (problem) { error.textContent = problem.message; }
  });
  document.getElementById("break-glass-end").addEventListener("click", async () => {
    await api("DELETE", "/api/break-glass");
    opened.clear();
    await loadMe();
  });
  await loadMe();
  await loadHistory();
});
