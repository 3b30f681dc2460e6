// The rating page: submit unlocks when every block has an answer; keyboard shortcuts; time on task.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form) return;
  const started = Date.now();
  const pairs = Array.from(form.querySelectorAll("fieldset.pair"));
  const button = document.getElementById("submit-ratings");
  const remaining = document.getElementById("remaining");
  let current = 0;

  function unanswered() {
    return pairs.filter((p) => !p.querySelector("input[type=radio]:checked"));
  }
  function refresh() {
    const left = unanswered();
    pairs.forEach((p) => p.classList.toggle("answered", !!p.querySelector("input[type=radio]:checked")));
    if (button) button.disabled = left.length > 0;
    if (remaining) remaining.textContent = left.length ? `${left.length} block(s) still to answer` : "";
  }
  function focusPair(index) {
    current = Math.max(0, Math.min(pairs.length - 1, index));
    pairs.forEach((p, i) => p.classList.toggle("current", i === current));
    pairs[current].focus({ preventScroll: true });
    pairs[current].scrollIntoView({ block: "nearest", behavior: "smooth" });
  }
  form.addEventListener("change", refresh);
  pairs.forEach((p, i) => p.addEventListener("click", () => { current = i; pairs.forEach((q, j) => q.classList.toggle("current", j === i)); }));
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target instanceof HTMLTextAreaElement) return; // typing a reason, not a shortcut
    if (event.key === "j") { focusPair(current + 1); return; }
    if (event.key === "k") { focusPair(current - 1); return; }
    const radios = pairs[current]?.querySelectorAll("input[type=radio]");
    const n = Number(event.key);
    if (radios && n >= 1 && n <= radios.length && !radios[n - 1].disabled) {
      radios[n - 1].checked = true;
      refresh();
      const next = pairs.findIndex((p, i) => i > current && !p.querySelector("input[type=radio]:checked"));
      if (next >= 0) focusPair(next);
    }
  });
  form.addEventListener("submit", (event) => {
    if (unanswered().length) { event.preventDefault(); focusPair(pairs.indexOf(unanswered()[0])); return; }
    form.elements.namedItem("elapsed_ms").value = String(Date.now() - started);
    if (button) button.disabled = true; // one click, one submission (the server is idempotent anyway)
  });
  refresh();
  if (pairs.length) pairs[0].classList.add("current");
})();
