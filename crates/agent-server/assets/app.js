// The openmanus page: sessions on the left, the selected session's run live on the right.
// Everything the model or a tool wrote is inserted as text, except thoughts and answers, whose
// HTML the server rendered from markdown and sanitised.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  sessions: [], current: null, source: null, seen: new Set(), order: [], repeats: 0, steps: new Map(),
  calls: new Map(), runs: new Map(), currentStep: null, usage: { prompt: 0, completion: 0, cost: null },
  workspace: "", filesTimer: null, agent: "", titled: false, statusVersion: -1, questionShown: null,
};
// For tests and curious readers: what the page has rendered.
window.openmanus = state;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "html") node.innerHTML = value; // server-sanitised only
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    credentials: "same-origin",
    headers: options.body ? { "Content-Type": "application/json" } : {},
    ...options,
  });
  if (response.status === 401) {
    await login();
    return api(path, options);
  }
  if (!response.ok) {
    let message = response.statusText;
    try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response.status === 204 ? null : response.json();
}

function login() {
  return new Promise((resolve) => {
    const dialog = $("login");
    $("login-form").onsubmit = async (event) => {
      event.preventDefault();
      const response = await fetch("/api/login", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token: $("token").value }),
      });
      if (response.ok) { dialog.close(); resolve(); } else { $("token").value = ""; }
    };
    if (!dialog.open) dialog.showModal();
  });
}

// Tokens in and out, and the cost when the model's price is known.
function tokens(usage) {
  const text = `${usage.prompt.toLocaleString()} in · ${usage.completion.toLocaleString()} out`;
  return usage.cost == null ? text : `${text} · ${money(usage.cost)}`;
}

function money(usd) {
  return `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

// ---- sessions ----

async function loadSessions() {
  const { sessions } = await api("/api/sessions");
  state.sessions = sessions;
  const list = $("sessions");
  list.replaceChildren(...sessions.map((s) => {
    const queued = s.status.queue_position ? ` · queued #${s.status.queue_position}` : "";
    const button = el("button", { type: "button", "data-id": s.id },
      el("span", { text: s.title || "(no task yet)" }),
      el("span", { class: "meta", text: `${s.agent} · ${s.status.busy ? "running" : s.state}${queued}` }));
    if (s.id === state.current) button.setAttribute("aria-current", "true");
    button.onclick = () => select(s.id);
    return el("li", {}, button);
  }));
}

async function select(id) {
  if (state.source) state.source.close();
  Object.assign(state, {
    current: id, seen: new Set(), order: [], repeats: 0, steps: new Map(), calls: new Map(), runs: new Map(),
    currentStep: null, usage: { prompt: 0, completion: 0, cost: null }, statusVersion: -1,
  });
  history.replaceState(null, "", `#${id}`);
  $("empty").hidden = true;
  $("session").hidden = false;
  $("feed").replaceChildren();
  $("plan").hidden = true;
  $("plan-steps").replaceChildren();
  $("usage").textContent = "";
  const session = await api(`/api/sessions/${id}`);
  state.workspace = session.workspace;
  state.agent = session.agent;
  state.titled = Boolean(session.title);
  $("session-title").textContent = session.title || "(no task yet)";
  showState(session.state);
  showStatus(session.status);
  await loadSessions();
  loadFiles();
  const source = new EventSource(`/api/sessions/${id}/events`);
  state.source = source;
  for (const kind of ["agent", "flow", "run_started", "run_finished"]) {
    source.addEventListener(kind, (message) => onStored(kind, message));
  }
  source.addEventListener("status", (message) => showStatus(JSON.parse(message.data)));
}

// ---- events ----

function onStored(kind, message) {
  const event = JSON.parse(message.data);
  if (state.seen.has(event.id)) { state.repeats += 1; return; } // never twice
  state.seen.add(event.id);
  state.order.push(event.id);
  document.body.dataset.lastEventId = event.id;
  const data = event.data;
  if (kind === "run_started") runStarted(data);
  else if (kind === "run_finished") runFinished(data, event.html);
  else if (kind === "flow") flowEvent(data);
  else agentEvent(data, event.html);
}

function showState(text) {
  $("session-state").textContent = `${state.agent} · ${text}`;
}

function runStarted(data) {
  $("feed").append(el("div", { class: "run-head", text: `▶ ${data.task}` }));
  if (!state.titled) {
    state.titled = true;
    $("session-title").textContent = data.task;
    loadSessions().catch(() => {});
  }
  showState("running");
}

function runFinished(data, html) {
  const failed = data.state !== "finished";
  showState(data.state);
  const card = el("div", { class: `answer${failed ? " failed" : ""}` },
    el("div", { class: "step-head" },
      el("span", { text: data.status || data.state }),
      data.usage ? el("span", { class: "run-usage", text: tokens({ prompt: data.usage.prompt_tokens, completion: data.usage.completion_tokens, cost: data.usage.cost_usd }) }) : null));
  if (html) card.append(el("div", { class: "answer-text", html }));
  const changes = data.changes || {};
  const files = [...(changes.created || []), ...(changes.modified || [])];
  if (files.length) {
    const list = el("ul", { class: "changes" });
    for (const path of files) list.append(el("li", {}, fileLink(relative(path))));
    card.append(el("div", { text: "Files created or changed:" }), list);
  }
  $("feed").append(card);
  loadFiles();
  loadSessions();
}

function flowEvent(data) {
  if (data.type === "plan_created") {
    $("plan").hidden = false;
    $("plan-steps").replaceChildren(...(data.plan.steps || []).map((step, index) =>
      el("li", { "data-index": index, "data-status": "not_started" }, el("span", { text: step.text ?? step }),
        el("span", { class: "step-status", text: "not started" }))));
  } else if (data.type === "step_started" || data.type === "step_finished") {
    const item = $("plan-steps").querySelector(`[data-index="${data.index}"]`);
    if (!item) return;
    const status = data.type === "step_started" ? "in_progress" : data.status;
    item.dataset.status = status;
    item.querySelector(".step-status").textContent = status.replace("_", " ");
  }
}

function agentEvent(data, html) {
  switch (data.type) {
    case "step_started": {
      const head = el("div", { class: "step-head" }, el("span", { text: `Step ${data.step} of ${data.max_steps}` }), el("span", { class: "step-usage" }));
      const step = el("article", { class: "step", "data-step": data.step }, head);
      state.currentStep = step;
      $("feed").append(step);
      break;
    }
    case "thought": {
      const step = state.currentStep || $("feed").appendChild(el("article", { class: "step" }));
      if (data.content) step.append(el("div", { class: "thought", html: html || "" }));
      for (const call of data.tool_calls || []) step.append(callCard(call));
      break;
    }
    case "tool_call_started":
      if (!state.calls.has(data.call.id)) (state.currentStep || $("feed")).append(callCard(data.call));
      state.calls.get(data.call.id).classList.add("running");
      break;
    case "tool_progress": {
      // A running call's progress (another agent's status over a2a_call): the latest line.
      const card = state.calls.get(data.call_id);
      if (card) {
        let line = card.querySelector(".progress");
        if (!line) line = card.appendChild(el("div", { class: "progress" }));
        line.textContent = data.message;
      }
      break;
    }
    case "tool_call_finished": {
      const card = state.calls.get(data.call_id) || (state.currentStep || $("feed")).appendChild(callCard({ id: data.call_id, function: { name: data.name, arguments: "" } }));
      card.classList.remove("running");
      if (!data.success) card.classList.add("failed");
      card.append(observation(data.observation));
      scheduleFiles();
      break;
    }
    case "token_usage": {
      state.usage.prompt += data.prompt_tokens;
      state.usage.completion += data.completion_tokens;
      if (data.cost_usd != null) state.usage.cost = (state.usage.cost || 0) + data.cost_usd;
      $("usage").textContent = tokens(state.usage);
      const slot = state.currentStep && state.currentStep.querySelector(".step-usage");
      if (slot) slot.textContent = tokens({ prompt: data.prompt_tokens, completion: data.completion_tokens, cost: data.cost_usd });
      break;
    }
    case "image":
      (state.currentStep || $("feed")).append(el("figure", { class: "shot" },
        el("img", { src: `data:${imageType(data.image)};base64,${data.image}`, alt: data.caption || "image" }),
        data.caption ? el("figcaption", { text: data.caption }) : null));
      break;
    case "permission": {
      // The audit: who decided what about a call that needed more than the sandbox allows.
      const card = state.calls.get(data.call_id);
      const line = el("div", {
        class: `permission ${data.decision}`,
        text: `${data.decision === "allowed" ? "✓ allowed" : "✗ denied"} by ${data.by} (${data.request}): ${data.detail}`,
      });
      if (card) card.append(line);
      else (state.currentStep || $("feed")).append(line);
      break;
    }
    case "retry":
      (state.currentStep || $("feed")).append(el("div", { class: "meta", text: `↻ retry ${data.attempt}: ${data.reason}` }));
      break;
    default:
      break;
  }
}

// The type of a base64 image from its first bytes (raster types only).
function imageType(base64) {
  if (base64.startsWith("/9j/")) return "image/jpeg";
  if (base64.startsWith("R0lGOD")) return "image/gif";
  if (base64.startsWith("UklGR")) return "image/webp";
  return "image/png";
}

function callCard(call) {
  let args = call.function.arguments;
  try { args = JSON.stringify(JSON.parse(args), null, 2); } catch (_) { /* shown as sent */ }
  const card = el("div", { class: "call", "data-call": call.id },
    el("span", { class: "call-name", text: call.function.name }),
    args ? el("pre", { class: "args", text: args }) : null);
  state.calls.set(call.id, card);
  return card;
}

function observation(text) {
  const long = text.length > 600 || text.split("\n").length > 12;
  if (!long) return el("pre", { class: "observation", text });
  const first = text.split("\n")[0].slice(0, 120);
  return el("details", { class: "observation" }, el("summary", { text: `${first} … (${text.length.toLocaleString()} characters)` }), el("pre", { text }));
}

// ---- status, question, files ----

function showStatus(status) {
  // Statuses reach the page both on the event stream and in HTTP answers, which can arrive
  // later than a newer one: an older status never replaces a newer one.
  if (status.version < state.statusVersion) return;
  state.statusVersion = status.version;
  $("cancel").hidden = !status.busy;
  $("send").disabled = status.busy;
  $("queue").hidden = !status.queue_position;
  $("queue").textContent = status.queue_position ? `waiting: #${status.queue_position} in line` : "";
  $("question").hidden = !status.question;
  if (status.question) {
    const choices = status.choices || [];
    const key = JSON.stringify([status.question, choices]);
    if (state.questionShown !== key) {
      state.questionShown = key;
      $("question-text").textContent = status.question;
      // A question with choices (an approval) is answered by its buttons; a free one by text.
      $("free-answer").hidden = choices.length > 0;
      $("choices").replaceChildren(...choices.map((choice) => {
        const button = el("button", {
          type: "button",
          id: `choice-${choice.answer}`,
          class: choice.answer === "deny" ? "danger" : "",
          text: choice.label,
        });
        button.onclick = () => sendAnswer(choice.answer);
        return button;
      }));
      $("answer").value = "";
      if (choices.length === 0) $("answer").focus();
      else $("choices").firstChild.focus();
    }
  } else {
    state.questionShown = null;
  }
  $("error").hidden = !status.error;
  $("error").textContent = status.error || "";
}

function relative(path) {
  const root = state.workspace.endsWith("/") ? state.workspace : `${state.workspace}/`;
  return path.startsWith(root) ? path.slice(root.length) : path;
}

function fileUrl(path) {
  return `/api/sessions/${state.current}/files/${path.split("/").map(encodeURIComponent).join("/")}`;
}

function fileLink(path) {
  const link = el("a", { href: fileUrl(path), target: "_blank", rel: "noopener", text: path });
  if (/\.(png|jpe?g|gif|webp)$/i.test(path)) {
    return el("span", {}, link, el("img", { src: fileUrl(path), alt: path, loading: "lazy" }));
  }
  return link;
}

function scheduleFiles() {
  clearTimeout(state.filesTimer);
  state.filesTimer = setTimeout(loadFiles, 500);
}

async function loadFiles() {
  if (!state.current) return;
  const { files, truncated } = await api(`/api/sessions/${state.current}/files`);
  $("files").replaceChildren(...files.map((f) =>
    el("li", { "data-path": f.path }, fileLink(f.path), el("span", { class: "size", text: `${f.size.toLocaleString()} B` }))));
  if (truncated) $("files").append(el("li", { text: "(more files not listed)" }));
}

// ---- forms ----

$("new-session").onsubmit = async (event) => {
  event.preventDefault();
  try {
    const session = await api("/api/sessions", { method: "POST", body: JSON.stringify({ agent: $("new-agent").value }) });
    await select(session.id);
    $("task-text").focus();
  } catch (error) { alert(error.message); }
};

$("task").onsubmit = async (event) => {
  event.preventDefault();
  const task = $("task-text").value.trim();
  if (!task || !state.current) return;
  try {
    const { status } = await api(`/api/sessions/${state.current}/tasks`, { method: "POST", body: JSON.stringify({ task }) });
    $("task-text").value = "";
    showStatus(status);
  } catch (error) {
    $("error").hidden = false;
    $("error").textContent = error.message;
  }
};

$("task-text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("task").requestSubmit();
});

$("cancel").onclick = () => api(`/api/sessions/${state.current}/cancel`, { method: "POST" }).catch(() => {});

async function sendAnswer(answer) {
  try {
    await api(`/api/sessions/${state.current}/answer`, { method: "POST", body: JSON.stringify({ answer }) });
    $("question").hidden = true;
  } catch (error) {
    $("error").hidden = false;
    $("error").textContent = error.message;
  }
}

$("question").onsubmit = (event) => {
  event.preventDefault();
  sendAnswer($("answer").value);
};

// ---- start ----

loadSessions().then(() => {
  const id = location.hash.slice(1);
  if (id) select(id).catch(() => {});
}).catch((error) => { $("empty").textContent = error.message; });
setInterval(() => loadSessions().catch(() => {}), 5000);
