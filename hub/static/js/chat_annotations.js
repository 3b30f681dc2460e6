// Annotation icons under each turn and the small form each one opens: binary, Likert (custom labels), choice,
// multi-select and free text, each with an optional or required explanation; the judge's suggestion when the study
// shows one. Values sent: binary true/false (labels[0] = false, labels[1] = true: "No", "Yes" by default), Likert the
// point 1..n, choice the option, multi a list of options, text a string.
import { el } from "./chat_dom.js";

const GLYPHS = { binary: "◐", likert: "★", choice: "◉", multi: "☑", text: "✎" };
const KIND_WORDS = {
  binary: "yes or no",
  likert: "scale",
  choice: "one option",
  multi: "any options",
  text: "free text",
};

export function questionsFor(questions, role) {
  const side = role === "assistant" ? "system" : "user";
  return questions.filter((q) => q.applies_to === "both" || q.applies_to === side);
}

function binaryLabels(q) {
  return q.labels && q.labels.length === 2 ? q.labels : ["No", "Yes"];
}

// The answer in words, for the icon's label and title.
export function answerWords(q, answer) {
  if (!answer) return "";
  const v = answer.value;
  if (q.kind === "binary") return binaryLabels(q)[v === true ? 1 : 0];
  if (q.kind === "likert") return `${v} · ${q.labels[v - 1] || ""}`;
  if (q.kind === "multi") return (v || []).join(", ") || "none";
  return String(v);
}

function optionInputs(q, name, current) {
  const group = el("div", { class: "annot-options", role: q.kind === "multi" ? "group" : "radiogroup" });
  group.setAttribute("aria-label", q.question);
  let options;
  if (q.kind === "binary") options = binaryLabels(q).map((label, i) => [label, i === 1]);
  else if (q.kind === "likert") options = q.labels.map((label, i) => [`${i + 1} · ${label}`, i + 1]);
  else options = q.labels.map((label) => [label, label]);
  options.forEach(([label, value], i) => {
    const checked = q.kind === "multi" ? Array.isArray(current) && current.includes(value) : current === value;
    const input = el("input", {
      type: q.kind === "multi" ? "checkbox" : "radio",
      name,
      value: String(i),
      checked,
      required: q.kind !== "multi" && i === 0,
    });
    input.dataset.value = JSON.stringify(value);
    group.append(el("label", { class: "annot-option" }, input, document.createTextNode(" " + label)));
  });
  return group;
}

function readValue(q, form) {
  if (q.kind === "text") return form.elements.namedItem("answer").value.trim();
  const picked = Array.from(form.querySelectorAll("input[name=answer]:checked")).map((i) => JSON.parse(i.dataset.value));
  return q.kind === "multi" ? picked : picked.length ? picked[0] : null;
}

function suggestionNote(suggestion, q) {
  if (!suggestion || suggestion.value === null || suggestion.value === undefined) return null;
  const confidence = typeof suggestion.confidence === "number" ? ` (confidence ${Math.round(suggestion.confidence * 100)}%)` : "";
  const note = el("p", { class: "annot-suggestion" });
  note.append(el("strong", { text: "Suggested by the assistant: " }), `${answerWords(q, suggestion)}${confidence}`);
  if (suggestion.explanation) note.append(el("span", { class: "muted", text: ` — ${suggestion.explanation}` }));
  return note;
}

// The form for question `q` on message `message`; `save(answer)` returns a promise (rejects with words).
// `askDraft(body)` (the real-time assistant's arm only): resolves with {id, draft} for a free-text answer.
export function annotationForm({ q, message, answer, suggestion, save, close, askDraft }) {
  const opened = performance.now();
  const id = `annot-${message.id}-${q.id}`;
  const form = el("form", { class: "annot-form", id, "aria-label": `Annotate: ${q.question}` });
  form.append(el("p", { class: "annot-question", text: q.question }));
  form.append(suggestionNote(suggestion, q) || document.createTextNode(""));
  if (q.kind === "text") {
    const box = el("textarea", { name: "answer", rows: "2", maxlength: "5000", required: true, "aria-label": q.question });
    box.value = answer ? String(answer.value) : "";
    form.append(box);
    if (askDraft) form.append(draftButton(box, form, () => askDraft({ purpose: "free_text", message_id: message.id, question_id: q.id })));
  } else {
    form.append(optionInputs(q, "answer", answer ? answer.value : undefined));
  }
  if (q.explanation && q.explanation !== "none") {
    const required = q.explanation === "required";
    const why = el("textarea", { name: "explanation", rows: "2", maxlength: "5000", required });
    why.value = answer && answer.explanation ? answer.explanation : "";
    form.append(el("label", { class: "annot-why" }, document.createTextNode(`Why?${required ? " (required)" : " (optional)"}`), why));
  }
  const status = el("span", { class: "annot-status", role: "status", "aria-live": "polite" });
  const saveButton = el("button", { type: "submit", class: "primary", text: answer ? "Update" : "Save" });
  const cancel = el("button", { type: "button", class: "plain", text: "Cancel" });
  form.append(el("p", { class: "annot-actions" }, saveButton, cancel, status));
  cancel.addEventListener("click", close);
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = readValue(q, form);
    if (value === null || value === "") {
      status.textContent = "Choose or write an answer first.";
      return;
    }
    const why = form.elements.namedItem("explanation");
    const explanation = why ? why.value.trim() : "";
    if (q.explanation === "required" && !explanation) {
      status.textContent = "Say why: an explanation is required for this question.";
      why.focus();
      return;
    }
    const payload = { question_id: q.id, value, handling_ms: Math.round(performance.now() - opened) };
    if (explanation) payload.explanation = explanation;
    if (suggestion && suggestion.id) payload.suggestion_id = suggestion.id;
    if (form.dataset.draftId) payload.draft_id = Number(form.dataset.draftId);
    saveButton.disabled = true;
    status.textContent = "Saving…";
    try {
      await save(payload);
    } catch (error) {
      status.textContent = `Not saved: ${error.message}`;
      saveButton.disabled = false;
    }
  });
  return form;
}

// "Ask the assistant for a draft" (MILO's real-time assistant): the draft fills `box`, which stays editable; the
// draft's id travels with the answer, so the hub can tell how much of it was kept.
export function draftButton(box, form, ask) {
  const status = el("span", { class: "draft-status", role: "status", "aria-live": "polite" });
  const button = el("button", { type: "button", class: "plain ask-draft", text: "Ask the assistant for a draft" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "Asking…";
    try {
      const answer = await ask();
      box.value = answer.draft;
      form.dataset.draftId = String(answer.id);
      status.textContent = "Draft filled in: edit it as you see fit.";
      box.focus();
    } catch (error) {
      status.textContent = `No draft: ${error.message}`;
    }
    button.disabled = false;
  });
  return el("p", { class: "draft-row" }, button, status);
}

// The row of icons under a turn: one button per question that applies to the turn's role.
export function annotationIcons({ questions, message, answers, onOpen }) {
  const row = el("div", { class: "annot-icons", role: "group", "aria-label": "Annotations of this turn" });
  for (const q of questionsFor(questions, message.role)) {
    const answer = answers.get(`${message.id}:${q.id}`);
    const words = answerWords(q, answer);
    const button = el("button", {
      type: "button",
      class: answer ? "annot-icon answered" : "annot-icon",
      "aria-expanded": "false",
      "aria-controls": `annot-${message.id}-${q.id}`,
      title: `${q.question} (${KIND_WORDS[q.kind] || q.kind})${words ? ": " + words : ""}`,
    });
    button.dataset.question = q.id;
    button.append(el("span", { class: "glyph", "aria-hidden": "true", text: GLYPHS[q.kind] || "•" }));
    button.append(el("span", { class: "annot-label", text: q.id }));
    if (words) button.append(el("span", { class: "annot-answer", text: words }));
    button.setAttribute("aria-label", `Annotate: ${q.question}${words ? ` (answered: ${words})` : " (not answered)"}`);
    button.addEventListener("click", () => onOpen(q, button));
    row.append(button);
  }
  return row;
}
