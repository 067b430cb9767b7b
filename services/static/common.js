// Shared by the pages: JSON calls with the CSRF token, and safe text rendering.
"use strict";

function csrfToken() {
  const found = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  return found ? decodeURIComponent(found.split("=")[1]) : "";
}

async function api(method, path, body) {
  const options = { method, headers: { "x-csrftoken": csrfToken() }, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["content-type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    if (response.status === 401 && path !== "/api/login") { window.location.assign("/login"); }
    throw new Error((data && data.detail) || response.statusText);
  }
  return data;
}

// Every piece of document or user text goes through textContent, never innerHTML.
function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

async function signOut() {
  await api("POST", "/api/logout");
  window.location.assign("/login");
}

// Make sure the CSRF cookie exists before the first unsafe request.
async function primeCsrf() { if (!csrfToken()) await fetch("/health", { credentials: "same-origin" }); }

// A time from the server (UTC, ISO) in the reader's own time zone, with the zone named.
function localTime(iso) {
  return new Date(iso).toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
    timeZoneName: "short",
  });
}

// The officer's dates are whole days of their own time zone: "From" its first moment,
// "To" up to the first moment of the next day, so the "To" day is included.
function dayStart(date, daysLater = 0) {
  const moment = new Date(`${date}T00:00:00`);
  moment.setDate(moment.getDate() + daysLater);
  return moment.toISOString();
}

// A file the page made, handed to the browser to save.
function saveAs(text, name, type) {
  const link = element("a");
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
}
