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

let editing = null; // the user whose row is being changed, as listed

function listOf(id) {
  return document.getElementById(id).value.split(",").map((v) => v.trim()).filter(Boolean);
}

function resetUserForm() {
  editing = null;
  document.getElementById("user-form").reset();
  document.getElementById("user-id").readOnly = false;
  document.getElementById("user-save").textContent = "Add user";
  document.getElementById("user-cancel").classList.add("hidden");
}

function editUser(user) {
  editing = user;
  document.getElementById("user-id").value = user.user;
  document.getElementById("user-id").readOnly = true;
  document.getElementById("user-roles").value = user.roles.join(", ");
  document.getElementById("user-departments").value = user.departments.join(", ");
  document.getElementById("user-care-team").value = user.care_team.join(", ");
  document.getElementById("user-save").textContent = `Save ${user.user}`;
  document.getElementById("user-cancel").classList.remove("hidden");
  document.getElementById("user-roles").focus();
}

// What the form now says, against what the user had: granted and revoked.
function difference(before, after) {
  return { added: after.filter((v) => !before.includes(v)), removed: before.filter((v) => !after.includes(v)) };
}

async function saveUser(event) {
  event.preventDefault();
  const error = document.getElementById("user-error");
  error.textContent = "";
  const wanted = { roles: listOf("user-roles"), departments: listOf("user-departments").map((d) => d.toLowerCase()),
                   care_team: listOf("user-care-team") };
  const isNew = document.getElementById("user-new").checked;
  try {
    if (editing) {
      const grant = {}, revoke = {};
      for (const name of ["roles", "departments", "care_team"]) {
        const { added, removed } = difference(editing[name], wanted[name]);
        grant[name] = added;
        revoke[name] = removed;
      }
      await api("PATCH", `/api/admin/users/${encodeURIComponent(editing.user)}`, { grant, revoke, new: isNew });
      document.getElementById("user-note").textContent = `Changed ${editing.user}.`;
    } else {
      const user = document.getElementById("user-id").value.trim();
      await api("POST", "/api/admin/users", { user, ...wanted, new: isNew });
      document.getElementById("user-note").textContent = `Added ${user}; set a password on the appliance.`;
    }
    resetUserForm();
    await loadUsers();
  } catch (problem) {
    error.textContent = problem.message;
  }
}

async function loadUsers() {
  let users;
  try { users = await api("GET", "/api/admin/users"); }
  catch { return; } // not the administrator's to see: the section stays hidden
  document.getElementById("users-panel").classList.remove("hidden");
  const body = document.getElementById("users");
  body.replaceChildren();
  for (const user of users) {
    const row = cells(element("tr"), [user.user, user.roles.join(", "), user.departments.join(", "),
                                      user.care_team.join(", "), user.has_password ? "set" : "none"]);
    const actions = element("td");
    const change = element("button", "Change", "small change");
    change.type = "button";
    change.setAttribute("aria-label", `Change ${user.user}`);
    change.addEventListener("click", () => editUser(user));
    const remove = element("button", "Remove", "small remove");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove ${user.user}`);
    remove.addEventListener("click", async () => {
      if (!window.confirm(`Remove ${user.user}? They are signed out and can no longer sign in.`)) return;
      try {
        await api("DELETE", `/api/admin/users/${encodeURIComponent(user.user)}`);
        document.getElementById("user-note").textContent = `Removed ${user.user}.`;
      } catch (problem) {
        document.getElementById("user-error").textContent = problem.message;
      }
      await loadUsers();
    });
    actions.append(change, " ", remove);
    row.append(actions);
    body.append(row);
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
  document.getElementById("user-form").addEventListener("submit", saveUser);
  document.getElementById("user-cancel").addEventListener("click", resetUserForm);
  await Promise.all([loadJobs(), loadDocuments(), loadUsers()]);
});
