"use strict";

function period() {
  const params = new URLSearchParams();
  const since = document.getElementById("since").value;
  const until = document.getElementById("until").value;
  if (since) params.set("since", dayStart(since));
  if (until) params.set("until", dayStart(until, 1));
  return params;
}

function percent(rate) {
  return rate === null ? "none answered" : `${(100 * rate).toFixed(1)}%`;
}

// A horizontal bar per item, its length the item's share of the largest; the number is
// always written beside it, so the chart is never the only place a figure is.
function barChart(container, items) {
  container.replaceChildren();
  const largest = Math.max(1, ...items.map(([, value]) => value));
  for (const [name, value] of items) {
    const row = element("div", null, "bar-row");
    const bar = element("div", null, "bar");
    bar.style.width = `${(100 * value) / largest}%`;
    const track = element("div", null, "bar-track");
    track.append(bar);
    row.append(element("span", name, "bar-name"), track, element("span", String(value), "bar-value"));
    container.append(row);
  }
}

function table(node, columns, rows) {
  node.replaceChildren();
  const head = element("tr");
  for (const [title] of columns) head.append(element("th", title));
  node.append(head);
  for (const row of rows) {
    const line = element("tr");
    for (const [, value] of columns) line.append(element("td", String(value(row))));
    node.append(line);
  }
}

const ACTIVITY = [
  ["Questions", (a) => a.questions], ["Answered", (a) => a.answered], ["Refused", (a) => a.refused],
  ["Flagged", (a) => a.flagged], ["Documents opened", (a) => a.documents_opened],
  ["Emergency accesses", (a) => a.emergency_accesses],
];

function reviewCell(grant) {
  const cell = element("td");
  if (grant.reviewed_at) {
    cell.append(element("span", `reviewed by ${grant.reviewed_by}, ${localTime(grant.reviewed_at)}`, "ok"));
    if (grant.review_note) cell.append(element("div", grant.review_note, "meta"));
    return cell;
  }
  cell.append(element("span", "not reviewed", "bad"));
  const note = element("input", null, "review-note no-print");
  note.setAttribute("aria-label", `Review note for emergency access ${grant.grant_id}`);
  note.placeholder = "note";
  const mark = element("button", "Mark reviewed", "small review no-print");
  mark.type = "button";
  mark.addEventListener("click", async () => {
    mark.disabled = true;
    try {
      await api("POST", `/api/audit/break-glass/${grant.grant_id}/review`, { note: note.value });
      await makeReport();
    } catch (problem) {
      document.getElementById("report-error").textContent = problem.message;
      mark.disabled = false;
    }
  });
  cell.append(" ", note, mark);
  return cell;
}

async function makeReport() {
  const error = document.getElementById("report-error");
  error.textContent = "";
  let report;
  try { report = await api("GET", `/api/audit/report?${period()}`); }
  catch (problem) { error.textContent = problem.message; return; }
  document.getElementById("report").classList.remove("hidden");
  const since = document.getElementById("since").value || "the start of the log";
  const until = document.getElementById("until").value || "today";
  document.getElementById("report-title").textContent = `Audit report: ${since} to ${until}`;
  document.getElementById("report-made").textContent = `Made on ${localTime(new Date().toISOString())} from the audit log.`;
  const alerts = document.getElementById("alerts");
  alerts.replaceChildren(...(report.alerts.length ? report.alerts.map((a) => element("li", a, "bad"))
                                                  : [element("li", "No alerts.", "ok")]));
  document.getElementById("totals").textContent =
    `${report.entries} entries. Refused answers: ${percent(report.refusal_rate)}. ` +
    `Flagged answers: ${percent(report.flag_rate)}. Emergency accesses: ${report.emergency_access.length}.`;
  barChart(document.getElementById("by-type"), Object.entries(report.by_type));
  const emergency = document.getElementById("emergency");
  emergency.replaceChildren();
  for (const grant of report.emergency_access) {
    const row = element("tr");
    row.append(element("td", String(grant.grant_id)), element("td", localTime(grant.opened_at)),
               element("td", grant.user), element("td", grant.patient_id || "none named"),
               element("td", grant.reason), element("td", String(grant.passages_shown)), reviewCell(grant));
    emergency.append(row);
  }
  if (!report.emergency_access.length) {
    const none = element("tr");
    const cell = element("td", "No emergency access in these days.");
    cell.colSpan = 7;
    none.append(cell);
    emergency.append(none);
  }
  const users = Object.entries(report.by_user);
  barChart(document.getElementById("user-chart"), users.map(([user, a]) => [user, a.questions]));
  table(document.getElementById("by-user"), [["User", ([user]) => user], ...ACTIVITY.map(([t, f]) => [t, ([, a]) => f(a)])], users);
  table(document.getElementById("by-department"), [["Department", ([d]) => d], ...ACTIVITY.map(([t, f]) => [t, ([, a]) => f(a)])],
        Object.entries(report.by_department));
  table(document.getElementById("by-document"),
        [["Document", ([id, d]) => `${d.title} (${id})`], ["Cited", ([, d]) => d.cited],
         ["Opened", ([, d]) => d.opened], ["Flagged", ([, d]) => d.flagged]],
        Object.entries(report.by_document));
}

async function downloadCsv() {
  const response = await fetch(`/api/audit/report.csv?${period()}`, { credentials: "same-origin" });
  if (!response.ok) {
    document.getElementById("report-error").textContent = `Download failed: ${response.statusText}`;
    return;
  }
  saveAs(await response.text(), "audit-report.csv", "text/csv");
}

document.addEventListener("DOMContentLoaded", async () => {
  await primeCsrf();
  document.getElementById("sign-out").addEventListener("click", signOut);
  const me = await api("GET", "/api/me");
  document.getElementById("who").textContent = `${me.user_id} (${me.roles.join(", ")})`;
  document.getElementById("period").addEventListener("submit", (event) => { event.preventDefault(); makeReport(); });
  document.getElementById("download-csv").addEventListener("click", downloadCsv);
  document.getElementById("print").addEventListener("click", () => window.print());
  const today = new Date();
  const monthAgo = new Date(today.getTime() - 30 * 86400000);
  document.getElementById("until").value = today.toLocaleDateString("en-CA");
  document.getElementById("since").value = monthAgo.toLocaleDateString("en-CA");
  await makeReport();
});
