// The small forms that open inside a turn (one at a time): opening and closing them (focus goes back to the button
// that opened them), a reason box, and Save/Cancel with the refusal shown in words.
import { el } from "./chat_dom.js";

export function openPanel(li, panel, opener) {
  const old = li.querySelector(".turn-panel");
  if (old) {
    const was = old.dataset.opener;
    old.remove();
    li.querySelectorAll("[aria-expanded=true]").forEach((b) => b.setAttribute("aria-expanded", "false"));
    if (was === opener.dataset.panelKey) {
      opener.focus();
      return false;
    }
  }
  panel.classList.add("turn-panel");
  panel.dataset.opener = opener.dataset.panelKey;
  li.append(panel);
  opener.setAttribute("aria-expanded", "true");
  const first = panel.querySelector("input, textarea, select, button");
  if (first) first.focus();
  return true;
}

export function closePanel(li, opener) {
  const panel = li.querySelector(".turn-panel");
  if (panel) panel.remove();
  opener.setAttribute("aria-expanded", "false");
  opener.focus();
}

export function reasonField(label, required) {
  const box = el("textarea", { name: "reason", rows: "2", maxlength: "2000", required });
  return [el("label", { class: "reason" }, document.createTextNode(`${label}${required ? " (required)" : " (optional)"}`), box), box];
}

function formButtons(submitWords, onCancel) {
  const status = el("span", { class: "form-status", role: "status", "aria-live": "polite" });
  const submit = el("button", { type: "submit", class: "primary", text: submitWords });
  const cancel = el("button", { type: "button", class: "plain", text: "Cancel" });
  cancel.addEventListener("click", onCancel);
  return [el("p", { class: "form-actions" }, submit, cancel, status), submit, status];
}

export function wireForm(form, li, opener, action) {
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      closePanel(li, opener);
    }
  });
  const [row, submit, status] = formButtons(form.dataset.submit, () => closePanel(li, opener));
  form.append(row);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    status.textContent = "Saving…";
    try {
      await action();
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
      submit.disabled = false;
    }
  });
}
