"use strict";

const DETAILS = ["doc_id", "title", "version", "doc_type", "effective_from", "effective_to",
                 "departments", "sensitivity", "owner"];

function cells(row, values) {
  for (const value of values) row.append(element("td", value));
  return row;
}

function outcomeText(outcome) {
  const told = outcome.error || outcome.warning || "";
  return `${outcome.file}: ${outcome.status}${outcome.chunks ? ` (${outcome.chunks} passages)` : ""}${told ? ` - ${told}` : ""}`;
}

async function loadJobs() {
  const jobs = await api("GET", "/api/admin/jobs");
  const body = document.getElementById("jobs");
  body.replaceChildren();
  for (const job of jobs) {
    const row = cells(element("tr"), [job.user_id, job.state, `${job.done} of ${job.total}`]);
    const files = element("td");
    for (const outcome of job.outcomes) {
      files.append(element("div", outcomeText(outcome), outcome.error ? "bad" : outcome.warning ? "warning" : ""));
    }
    row.append(files);
    body.append(row);
  }
  if (!jobs.length) body.append(cells(element("tr"), ["No uploads yet.", "", "", ""]));
  return jobs;
}

async function loadDocuments() {
  const documents = await api("GET", "/api/admin/documents");
  const body = document.getElementById("documents");
  body.replaceChildren();
  for (const doc of documents) {
    const row = element("tr");
    const name = element("td");
    name.append(element("strong", doc.title), element("div", doc.doc_id, "meta"));
    row.append(name);
    cells(row, [doc.version, `${doc.effective_from} - ${doc.effective_to || ""}`, doc.sensitivity,
                doc.departments.join(", ") || "none", doc.owner || "", String(doc.chunks)]);
    const actions = element("td");
    const replace = element("button", "Replace", "small");
    replace.type = "button";
    replace.addEventListener("click", () => {
      document.getElementById("doc_id").value = doc.doc_id;
      document.getElementById("files").focus();
    });
    const remove = element("button", "Remove", "small remove");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove ${doc.doc_id}`);
    remove.addEventListener("click", async () => {
      if (!window.confirm(`Remove ${doc.doc_id} from every store? Answers will no longer cite it.`)) return;
      try {
        await api("DELETE", `/api/admin/documents/${encodeURIComponent(doc.doc_id)}`);
        document.getElementById("documents-note").textContent = `Removed ${doc.doc_id}.`;
      } catch (problem) {
        document.getElementById("documents-note").textContent = `Not removed: ${problem.message}`;
      }
      await loadDocuments();
    });
    actions.append(replace, " ", remove);
    row.append(actions);
    body.append(row);
  }
  document.getElementById("documents-note").textContent ||= `${documents.length} documents.`;
}

async function loadUsers() {
  let users;
  try { users = await api("GET", "/api/admin/users"); }
  catch { return; } // not the administrator's to see: the section stays hidden
  document.getElementById("users-panel").classList.remove("hidden");
  const body = document.getElementById("users");
  body.replaceChildren();
  for (const user of users) {
    body.append(cells(element("tr"), [user.user, user.roles.join(", "), user.departments.join(", "),
                                      user.care_team.join(", "), user.has_password ? "set" : "none"]));
  }
}

// Until every job is done, the jobs table and the documents follow it.
async function follow() {
  const jobs = await loadJobs();
  if (jobs.some((job) => job.state === "queued" || job.state === "running")) {
    setTimeout(follow, 1000);
  } else {
    await loadDocuments();
  }
}

async function upload(event) {
  event.preventDefault();
  const error = document.getElementById("upload-error");
  error.textContent = "";
  const form = new FormData();
  for (const file of document.getElementById("files").files) form.append("data", file);
  for (const name of DETAILS) {
    const value = document.getElementById(name).value.trim();
    if (value) form.append(name, value);
  }
  const button = document.getElementById("upload-button");
  button.disabled = true;
  try {
    const response = await fetch("/api/documents", {
      method: "POST", body: form, credentials: "same-origin", headers: { "x-csrftoken": csrfToken() },
    });
    const data = await response.json();
    if (!response.ok) throw new Error(data.detail || response.statusText);
    document.getElementById("upload").reset();
    await follow();
  } catch (problem) {
    error.textContent = problem.message;
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  await primeCsrf();
  document.getElementById("sign-out").addEventListener("click", signOut);
  const me = await api("GET", "/api/me");
  document.getElementById("who").textContent = `${me.user_id} (${me.roles.join(", ")})`;
  document.getElementById("upload").addEventListener("submit", upload);
  await Promise.all([loadJobs(), loadDocuments(), loadUsers()]);
});
