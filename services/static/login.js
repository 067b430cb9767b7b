"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  await primeCsrf();
  document.getElementById("login").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("login-error");
    error.textContent = "";
    try {
      await api("POST", "/api/login", {
        user_id: document.getElementById("user").value,
        password: document.getElementById("password").value,
      });
      window.location.assign("/ask");
    } catch (problem) {
      error.textContent = problem.message;
    }
  });
});
