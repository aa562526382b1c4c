// The pages' only script (no framework, no inline handlers: the CSP allows scripts from this
// origin only). The language menu switches on change. Live progress: the dashboard's action
// buttons post in the background, which answers at once (the run goes on in a worker, or in eager
// mode in a background thread of the server); the dashboard then polls the progress fragment (JSON)
// every second while the run works, and reloads when it stops or the next chapter of a batch
// starts, so that counts, buttons and questions are current. Without JavaScript the forms post
// normally.
(function () {
  "use strict";
  // promotion posts: copy a platform version to the clipboard
  document.querySelectorAll("button.copy[data-target]").forEach(function (button) {
    button.addEventListener("click", function () {
      var area = document.getElementById(button.getAttribute("data-target"));
      if (!area) return;
      area.select();
      if (navigator.clipboard) { navigator.clipboard.writeText(area.value); } else { document.execCommand("copy"); }
    });
  });
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();

(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  var timer = null;

  var submitted = false;

  function render(data) {
    var stages = data.stages || [];
    var bar = box.querySelector(".bar span");
    var streaming = data.stream && data.stream.stage;
    if (!data.active && !streaming && submitted) return;  // the run is not visible yet: keep waiting
    var percent = data.active ? (data.percent || 0) : (streaming ? 5 : 100);
    if (data.stream && data.stream.stage && data.active) percent = Math.max(percent, 2);
    bar.style.width = percent + "%";
    box.querySelector(".bar").setAttribute("aria-valuenow", String(percent));
    var label = box.querySelector('[data-field="label"]');
    if (data.active || streaming) {
      var stageLabel = streaming ? (data.stream.stage_label || streaming) : (data.stage_label || data.stage);
      label.textContent = (data.kind_label || data.kind || "") + " · " + stageLabel +
        ((data.chapter || data.stream.chapter) ? " · #" + (data.chapter || data.stream.chapter) : "");
    }
    var chars = box.querySelector('[data-field="chars"]');
    chars.textContent = data.stream && data.stream.chars ? data.stream.chars + " 字" : "";
    var tail = box.querySelector('[data-field="tail"]');
    // the text as it is written; a run that stopped (at a question, say) shows none
    var writing = !data.active || data.status === "running";
    if (tail) tail.textContent = (writing && data.stream && data.stream.tail) || "";
    var list = box.querySelector('[data-field="stages"]');
    if (stages.length) {
      list.innerHTML = "";
      stages.forEach(function (s) {
        var li = document.createElement("li");
        li.className = s.status;
        li.textContent = s.label || s.stage;
        li.title = s.stage;
        li.setAttribute("data-code", s.stage);
        list.appendChild(li);
      });
    }
    box.dataset.state = data.active || streaming ? "running" : "idle";
    if (streaming) box.dataset.seen = "1";
  }

  function working(data) { return data.active && (data.status === "queued" || data.status === "running"); }

  function poll() {
    fetch(box.dataset.url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        render(data);
        var another = box.dataset.run && data.run_id && String(data.run_id) !== box.dataset.run;
        if (box.dataset.poll && (!working(data) || another)) window.location.reload();
      })
      .catch(function () {});
  }

  function start() { if (!timer) { poll(); timer = setInterval(poll, 1000); } }

  document.querySelectorAll("form[data-live]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      document.querySelectorAll("form[data-live] button").forEach(function (b) {
        b.disabled = true;
        if (box.dataset.busy) b.textContent = box.dataset.busy;
      });
      box.dataset.state = "running";
      submitted = true;
      start();
      fetch(form.action, {method: "POST", body: new FormData(form), credentials: "same-origin"})
        .then(function (response) { window.location.assign(response.url || window.location.href); })
        .catch(function () { form.submit(); });
    });
  });
  if (box.dataset.poll) start();
})();
