// The chat page of an interactive study: the active branch of the conversation, the system's reply streaming in,
// annotation icons under each turn, post-editing the latest reply, going back to an earlier turn, the tree of all
// branches, images for vision systems and, where the browser offers them, speech input and output.
import { getJson, postJson, putJson, setCsrfToken } from "./chat_api.js";
import { annotationForm, annotationIcons, draftButton } from "./chat_annotations.js";
import { el } from "./chat_dom.js";
import { setUpImages } from "./chat_images.js";
import { closePanel, openPanel, reasonField, wireForm } from "./chat_panels.js";
import { setUpSending } from "./chat_sending.js";
import { branchNumbering, branchWords, pathTo, renderTree } from "./chat_tree.js";
import { setUpSpeech } from "./chat_speech.js";

const config = JSON.parse(document.getElementById("chat-config").textContent);
setCsrfToken(config.csrf_token);
const $ = (id) => document.getElementById(id);
const turnsList = $("turns");
const composer = $("composer");
const input = $("message");
const sendButton = $("send");
const statusLine = $("chat-status");
const failureBox = $("chat-failure");
const banner = $("view-banner");

const state = { data: null, byId: new Map(), answers: new Map(), suggestions: new Map(), viewLeaf: null, busy: false };
let speech = { speak: () => {} };

function announce(words) {
  statusLine.textContent = words;
}

function showFailure(words, retry) {
  failureBox.replaceChildren();
  failureBox.hidden = !words;
  if (!words) return;
  failureBox.append(el("p", { class: "error", text: words }));
  if (retry) {
    const button = el("button", { type: "button", class: "primary", id: "retry-failed", text: "Retry" });
    button.addEventListener("click", retry);
    failureBox.append(button);
    button.focus();
  }
}

// ---- loading and drawing ----------------------------------------------------------------------------------------

async function reload() {
  const data = await getJson(config.conversation_url);
  state.data = data;
  state.byId = new Map(data.messages.map((m) => [m.id, m]));
  state.answers = new Map((data.annotations || []).map((a) => [`${a.message_id}:${a.question_id}`, a]));
  state.suggestions = new Map((data.suggestions || []).map((s) => [`${s.message_id}:${s.question_id}`, s]));
  if (state.viewLeaf !== null && !state.byId.has(state.viewLeaf)) state.viewLeaf = null;
  render();
}

function currentLeaf() {
  return state.data ? state.data.current_leaf_id : null;
}

function viewedLeaf() {
  return state.viewLeaf === null ? currentLeaf() : state.viewLeaf;
}

function realtimeArm() {
  return !!(state.data && state.data.conversation && state.data.conversation.arm === "realtime");
}

function finished() {
  return !!(state.data && state.data.conversation && state.data.conversation.status === "finished");
}

function studyClosed() {
  return (config.study_status !== "open" && !config.admin) || config.someone_elses;
}

function latestReply() {
  const leaf = state.byId.get(currentLeaf());
  return leaf && leaf.role === "assistant" && leaf.status === "ok" ? leaf : null;
}

function render() {
  const viewing = viewedLeaf();
  const onActive = viewing === currentLeaf();
  const path = pathTo(state.byId, viewing);
  turnsList.replaceChildren(...path.map((m) => turnItem(m, onActive)));
  renderBanner(onActive);
  renderTree({
    container: $("tree"),
    messages: state.data.messages,
    branches: state.data.branches || [],
    currentLeafId: currentLeaf(),
    viewedLeafId: viewing,
    onView: (leafId) => {
      state.viewLeaf = leafId === currentLeaf() ? null : leafId;
      render();
      turnsList.focus();
    },
    onOutcome: config.reviewing ? null : markOutcome,
    reviewing: !!config.reviewing,
  });
  const leaf = state.byId.get(currentLeaf());
  const blocked = !onActive || state.busy || finished() || studyClosed() || (leaf && leaf.status === "error");
  input.disabled = sendButton.disabled = !!blocked;
  $("finish-chat").hidden = finished() || studyClosed();
  $("composer-note").textContent = config.reviewing
    ? "You are reviewing another participant's conversation: answer the questions about its turns (only you see your answers)."
    : finished()
    ? "This conversation is finished: you can still read it and answer the questions about its turns."
    : config.someone_elses
    ? "This is a participant's conversation: you can read it; only its participant continues it."
    : studyClosed()
    ? `The study is ${config.study_status}: you can read this conversation and answer its questions, not continue it.`
    : !onActive
    ? "You are looking at another branch; go back to the active one to write."
    : leaf && leaf.status === "error"
      ? "The last reply failed: retry it, or go back to an earlier turn."
      : "";
  if (!path.length) turnsList.append(el("li", { class: "turn-empty muted", text: "Write the first message below." }));
}

function renderBanner(onActive) {
  banner.replaceChildren();
  banner.hidden = onActive;
  if (onActive) return;
  const branch = (state.data.branches || []).find((b) => b.leaf_id === state.viewLeaf);
  const number = branch ? branchNumbering(state.data.branches).get(branch.id) : null;
  banner.append(
    el("p", {}, el("strong", { text: `Viewing branch ${number || ""}` }), ` (${branch ? branchWords(branch) : "not active"}).`),
  );
  const back = el("button", { type: "button", class: "primary", id: "back-to-active", text: "Back to the active conversation" });
  back.addEventListener("click", () => {
    state.viewLeaf = null;
    render();
    input.focus();
  });
  banner.append(back);
}

function imageList(message) {
  if (!message.images || !message.images.length) return null;
  const list = el("div", { class: "turn-images" });
  for (const ref of message.images) {
    list.append(el("img", { src: config.images_url + encodeURIComponent(ref.key), alt: "An image you sent" }));
  }
  return list;
}

function turnItem(m, onActive) {
  const li = el("li", { class: `turn turn-${m.role}`, id: `turn-${m.id}`, "data-message": String(m.id) });
  const who = m.role === "user" ? (config.reviewing ? "Participant" : "You") : config.system_label;
  const editor = config.reviewing ? "the participant" : "you"; // a reviewer reads someone else's conversation
  li.append(el("span", { class: "role", text: m.edit_of_id ? `${who} · edited by ${editor}` : who }));
  if (m.status === "error") {
    li.classList.add("turn-error");
    if (m.content) li.append(el("div", { class: "content partial", text: m.content, title: "What had arrived before the reply failed" }));
    li.append(el("p", { class: "error", text: m.error || "The system did not answer." }));
    if (onActive && m.id === currentLeaf()) {
      const retry = el("button", { type: "button", class: "primary retry", text: "Retry", "aria-label": "Retry this reply" });
      retry.addEventListener("click", () => sending.streamReply(`${config.messages_url}/${m.id}/retry`, {}));
      li.append(retry);
    }
    return li;
  }
  li.append(el("div", { class: "content", text: m.content }));
  li.append(imageList(m) || "");
  if (m.status === "streaming") {
    li.classList.add("streaming");
    li.append(el("p", { class: "muted", text: "This reply is still arriving (in another tab?); reload the page in a moment." }));
    return li;
  }
  if (m.edit_of_id && state.byId.has(m.edit_of_id)) {
    const original = state.byId.get(m.edit_of_id);
    const details = el("details", { class: "original" }, el("summary", { text: "The system's original reply" }));
    details.append(el("div", { class: "content", text: original.content }));
    if (m.edit_reason) details.append(el("p", { class: "muted", text: `Why edited: ${m.edit_reason}` }));
    li.append(details);
  }
  const tools = el("div", { class: "turn-tools" });
  tools.append(
    annotationIcons({
      questions: config.questions,
      message: m,
      answers: state.answers,
      onOpen: (q, button) => toggleAnnotation(li, m, q, button),
    }),
  );
  const actions = el("div", { class: "turn-actions" });
  const latest = finished() || studyClosed() ? null : latestReply();
  if (onActive && latest && latest.id === m.id) {
    const edit = el("button", { type: "button", class: "plain edit-reply", text: "✎ Edit reply", "aria-label": "Edit the system's latest reply" });
    edit.addEventListener("click", () => openEdit(li, m, edit));
    actions.append(edit);
  }
  if (onActive && !finished() && !studyClosed() && m.role === "assistant" && m.status === "ok" && m.id !== currentLeaf()) {
    const back = el("button", {
      type: "button",
      class: "plain go-back",
      text: "↶ Go back to here",
      "aria-label": `Go back to turn ${m.depth + 1} and continue from there`,
    });
    back.addEventListener("click", () => openRevert(li, m, back));
    actions.append(back);
  }
  tools.append(actions);
  li.append(tools);
  return li;
}

// ---- per-turn forms ---------------------------------------------------------------------------------------------

function toggleAnnotation(li, m, q, button) {
  button.dataset.panelKey = `q:${q.id}`;
  const key = `${m.id}:${q.id}`;
  const form = annotationForm({
    q,
    message: m,
    answer: state.answers.get(key),
    suggestion: state.suggestions.get(key),
    close: () => closePanel(li, button),
    askDraft: realtimeArm() ? (body) => postJson(config.drafts_url, body) : null,
    save: async (answer) => {
      await putJson(`${config.messages_url}/${m.id}/annotations`, { answers: [answer] });
      state.answers.set(key, { message_id: m.id, ...answer });
      announce(`Saved your answer to “${q.question}”.`);
      const fresh = turnItem(m, viewedLeaf() === currentLeaf());
      li.replaceWith(fresh);
      const again = fresh.querySelector(`.annot-icon[data-question="${CSS.escape(q.id)}"]`);
      if (again) again.focus();
    },
  });
  openPanel(li, form, button);
}

function openEdit(li, m, opener) {
  opener.dataset.panelKey = "edit";
  const form = el("form", { class: "edit-form", "aria-label": "Edit the system's reply" });
  form.dataset.submit = "Save edit";
  const text = el("textarea", { name: "content", rows: "5", maxlength: "20000", required: true, "aria-label": "Edited reply" });
  text.value = m.content;
  form.append(el("p", { class: "muted", text: "Correct the reply as it should have been; the conversation continues from your edit." }), text);
  if (realtimeArm()) form.append(draftButton(text, form, () => postJson(config.drafts_url, { purpose: "post_edit", message_id: m.id })));
  const [label, reason] = reasonField("Why did you edit it?", !!config.edit_reason_required);
  form.append(label);
  wireForm(form, li, opener, async () => {
    const body = { content: text.value };
    if (reason.value.trim()) body.reason = reason.value.trim();
    if (form.dataset.draftId) body.draft_id = Number(form.dataset.draftId);
    await postJson(`${config.messages_url}/${m.id}/edit`, body);
    announce("Your edit replaced the reply; the original is kept in the tree.");
    await reload();
    input.focus();
  });
  openPanel(li, form, opener);
}

function openRevert(li, m, opener) {
  opener.dataset.panelKey = "revert";
  const form = el("form", { class: "revert-form", "aria-label": "Go back to this turn" });
  form.dataset.submit = "Go back";
  form.append(el("p", { class: "muted", text: "The turns after this one are kept as a closed branch; you continue from here." }));
  const [label, reason] = reasonField("What went wrong after this turn?", false);
  form.append(label);
  wireForm(form, li, opener, async () => {
    const body = { message_id: m.id };
    if (reason.value.trim()) body.reason = reason.value.trim();
    await postJson(config.revert_url, body);
    state.viewLeaf = null;
    announce("You went back; the later turns are kept as a closed branch.");
    await reload();
    input.focus();
  });
  openPanel(li, form, opener);
}

async function markOutcome(branch, successful, box) {
  try {
    await postJson(`${config.branches_url}/${branch.id}/outcome`, { successful });
    branch.successful = successful;
    announce(`Branch marked ${successful ? "successful" : "not successful"}.`);
  } catch (error) {
    box.checked = !successful;
    announce(`Not saved: ${error.message}`);
  }
}

// ---- images, sending and streaming ----------------------------------------------------------------------------------

const images = config.vision
  ? setUpImages({ config, previews: $("image-previews"), picker: $("image-input"), attach: $("attach"), input, announce })
  : { pending: () => [], clear: () => {}, restore: () => {} };
const sending = setUpSending({
  config,
  state,
  turnsList,
  composer,
  input,
  sendButton,
  images,
  announce,
  showFailure,
  reload,
  currentLeaf,
  speak: (text) => speech.speak(text),
});

// ---- finishing ----------------------------------------------------------------------------------------------------

$("finish-chat").addEventListener("click", () => {
  const box = $("finish-confirm");
  box.hidden = false;
  box.querySelector("button.primary").focus();
});
$("finish-cancel").addEventListener("click", () => {
  $("finish-confirm").hidden = true;
  $("finish-chat").focus();
});
$("finish-yes").addEventListener("click", async () => {
  try {
    await postJson(config.finish_url);
    $("finish-confirm").hidden = true;
    announce("The conversation is finished.");
    await reload();
  } catch (error) {
    announce(`Not finished: ${error.message}`);
    showFailure(`Not finished: ${error.message}`);
  }
});

// ---- keyboard shortcuts (documented on the page) --------------------------------------------------------------------

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return;
  const last = turnsList.querySelector("li.turn:last-of-type");
  if (event.key === "/") {
    event.preventDefault();
    input.focus();
  } else if (event.key === "e") {
    turnsList.querySelector(".edit-reply")?.click();
  } else if (event.key === "a") {
    last?.querySelector(".annot-icon")?.click();
  } else if (event.key === "t") {
    $("tree-panel").open = true;
    $("tree").querySelector("button")?.focus();
  }
});

speech = setUpSpeech({ input, micButton: $("speak"), readAloud: $("read-aloud"), announce });
reload().catch((error) => showFailure(`The conversation could not be loaded: ${error.message}`, () => location.reload()));
