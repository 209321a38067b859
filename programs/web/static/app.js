// text2sql page: post a question, follow its progress (server-sent events), insert the answer the server rendered,
// draw its chart with the packaged Plotly, and teach (Right / Wrong -> edit -> run read-only -> save).
"use strict";

const MAX_DROPS = 3; // a question's progress stream may drop this many times in a row before the page gives up

const STAGES = {
  queued: (d) => (d.ahead ? `waiting: ${d.ahead} question(s) ahead` : "starting"),
  loading: () => "loading the model",
  drafting: (d) => (d.redraft ? "redrafting the SQL" : d.sample ? `drafting another candidate (${d.sample})` : "drafting the SQL"),
  checking: () => "checking the query against the schema",
  running: () => "running it read-only",
  judging: () => "the judge is reading the result",
  showing: () => "preparing the answer",
};

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "same-origin",
  });
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { data = text; }
  return { response, data };
}

function detailOf(data, response) {
  if (data && typeof data === "object" && data.detail !== undefined) {
    const d = data.detail;
    return typeof d === "string" ? d : d.map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ");
  }
  return `the server answered ${response.status}`;
}

async function ask(event) {
  event.preventDefault();
  const status = document.getElementById("ask-status");
  const box = document.getElementById("question");
  const question = box.value;
  const db = document.getElementById("db").value;
  const program = document.getElementById("program").value;
  status.textContent = "";
  box.value = ""; // at once: what is typed while this one is sent is the next question
  const { response, data } = await postJSON("/jobs", { question, db, program });
  if (response.status !== 202) {
    if (!box.value) box.value = question; // refused: back in the box to mend, unless a new one is being typed
    const retry = response.headers.get("Retry-After");
    status.textContent = detailOf(data, response) + (retry ? ` (Retry-After: ${retry} s)` : "");
    return;
  }
  const thread = el("section", "thread");
  thread.dataset.conversation = data.conversation;
  document.getElementById("answers").prepend(thread);
  follow(data, question, thread);
}

async function followUp(event, article) {
  event.preventDefault();
  const form = event.target;
  const input = form.querySelector(".follow-up-question");
  const status = form.querySelector(".follow-status");
  const question = input.value;
  status.textContent = "";
  const { response, data } = await postJSON("/jobs", {
    question, db: article.dataset.db, program: article.dataset.program, conversation: article.dataset.conversation,
  });
  if (response.status !== 202) {
    status.textContent = detailOf(data, response);
    return;
  }
  form.hidden = true; // the conversation goes on under the next answer
  follow(data, question, article.closest(".thread") || document.getElementById("answers"));
}

// a conversation's answers, oldest first, in its thread
function follow(job, question, thread) {
  const card = el("article", "answer pending");
  card.append(el("h3", "question", question));
  const progress = el("ol", "progress");
  card.append(progress);
  thread.append(card);
  const source = new EventSource(job.events);
  // A dropped stream is reopened by the browser, and the server sends the job's stages again from the first:
  // those already shown are skipped. Only after MAX_DROPS drops in a row does the page give up.
  let shown = 0, sent = 0, drops = 0;
  source.onopen = () => { sent = 0; };
  source.addEventListener("stage", (e) => {
    drops = 0;
    if (sent++ < shown) return;
    shown++;
    const d = JSON.parse(e.data);
    const label = (STAGES[d.stage] || (() => d.stage))(d);
    const last = progress.lastElementChild;
    if (last) last.classList.add("done");
    if (!last || last.textContent !== label) progress.append(el("li", "", label));
  });
  source.addEventListener("answer", (e) => {
    source.close();
    card.className = "answer";
    card.innerHTML = e.data; // rendered and escaped by the server's templates
    const article = card.querySelector("article.answer");
    if (article) card.replaceWith(article);
    wire(article || card);
    refreshHistory();
  });
  source.addEventListener("failure", (e) => {
    source.close();
    card.className = "answer failed";
    card.append(el("p", "error", e.data));
    refreshHistory();
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) return;
    if (++drops < MAX_DROPS) return; // the browser reconnects
    source.close();
    card.append(el("p", "error", "Lost the connection to the server while waiting; reload the page to see the history."));
  };
}

let plotly = null;
function loadPlotly() {
  if (!plotly) {
    plotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/assets/plotly.min.js";
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("could not load plotly.min.js"));
      document.head.append(script);
    });
  }
  return plotly;
}

async function drawChart(article) {
  const box = article.querySelector(".chart");
  const data = article.querySelector("script.chart-data");
  if (!box || !data) return;
  try {
    const figure = JSON.parse(data.textContent);
    const Plotly = await loadPlotly();
    await Plotly.newPlot(box, figure.data, { ...figure.layout, autosize: true }, { displayModeBar: false, responsive: true });
    Plotly.Plots.resize(box);
    box.classList.add("drawn");
  } catch (err) {
    box.append(el("p", "error", `The chart could not be drawn: ${err.message}`));
  }
}

async function save(article, sql) {
  const status = article.querySelector(".teach-status");
  status.textContent = "saving...";
  const { response, data } = await postJSON("/api/examples", {
    question: article.dataset.question, sql, db: article.dataset.db, job: article.dataset.job,
  });
  if (response.status === 201) {
    const how = { merged: "updated the stored pair for this question", unchanged: "it was already stored" }[data.outcome];
    const asked = data.question !== article.dataset.question ? ` under a question that stands alone: "${data.question}"` : "";
    status.textContent = `Saved as example #${data.id}${asked}${how ? ` (${how})` : ""}: the program will learn from it.`;
    status.className = "teach-status ok";
    article.querySelectorAll(".right, .save").forEach((b) => { b.disabled = true; });
    refreshHistory();
  } else {
    status.textContent = `Not saved: ${detailOf(data, response)}`;
    status.className = "teach-status error";
  }
}

async function runEdited(article) {
  const sql = article.querySelector(".sql-edit").value;
  const target = article.querySelector(".edit-result");
  const saveButton = article.querySelector(".save");
  saveButton.disabled = true;
  target.textContent = "running read-only...";
  const response = await fetch("/check", {
    method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
    body: JSON.stringify({ sql, db: article.dataset.db }),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    target.textContent = detailOf(data, response);
    return;
  }
  target.innerHTML = await response.text(); // rendered and escaped by the server
  const ok = target.querySelector("[data-ok='1']");
  saveButton.disabled = !ok;
  saveButton.dataset.sql = ok ? sql : "";
}

function wire(article) {
  drawChart(article);
  const copy = article.querySelector(".copy");
  if (copy) {
    copy.addEventListener("click", async () => {
      const text = article.querySelector(".sql-text").textContent;
      try { await navigator.clipboard.writeText(text); copy.textContent = "Copied"; } catch (_) {
        const range = document.createRange();
        range.selectNodeContents(article.querySelector(".sql-text"));
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
        copy.textContent = "Selected: press Ctrl+C";
      }
    });
  }
  article.querySelector(".right").addEventListener("click", () => save(article, article.dataset.sql));
  article.querySelectorAll(".reading .pick").forEach((button) => {
    button.addEventListener("click", async () => {
      await save(article, button.closest(".reading").dataset.sql);  // picking a reading confirms it
      article.querySelectorAll(".reading .pick").forEach((b) => { b.disabled = true; });
      button.closest(".reading").classList.add("picked");
    });
  });
  article.querySelector(".wrong").addEventListener("click", () => {
    article.querySelector(".edit").hidden = false;
    article.querySelector(".sql-edit").focus();
  });
  article.querySelector(".run").addEventListener("click", () => runEdited(article));
  const more = article.querySelector("form.follow-up");
  if (more) more.addEventListener("submit", (event) => followUp(event, article));
  const saveButton = article.querySelector(".save");
  saveButton.addEventListener("click", () => save(article, saveButton.dataset.sql));
  article.querySelector(".sql-edit").addEventListener("input", () => { saveButton.disabled = true; });
}

async function refreshHistory() {
  const response = await fetch("/history", { credentials: "same-origin" });
  if (response.ok) document.getElementById("history").innerHTML = await response.text();
}

document.getElementById("ask").addEventListener("submit", ask);
document.getElementById("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("ask").requestSubmit(); }
});
