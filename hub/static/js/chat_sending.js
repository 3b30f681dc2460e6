// Sending a turn and streaming the system's reply: the composer (Enter sends, Shift+Enter breaks the line), the
// bubble the reply streams into, and what a failed or refused reply leaves on the page. chat.js owns the page's
// state and drawing; it hands in what this needs.
import { ApiError, postStream } from "./chat_api.js";
import { el } from "./chat_dom.js";

export function setUpSending({
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
  speak,
}) {
  function streamingBubble() {
    const li = el("li", { class: "turn turn-assistant streaming", "aria-busy": "true" });
    li.append(el("span", { class: "role", text: `${config.system_label} · answering…` }));
    const content = el("div", { class: "content" });
    li.append(content);
    turnsList.append(li);
    return content;
  }

  async function streamReply(url, body, onRefused) {
    state.busy = true;
    input.disabled = sendButton.disabled = true;
    showFailure("");
    announce("The system is answering…");
    const content = streamingBubble();
    let finished = null;
    let failure = null;
    try {
      const last = await postStream(url, body, (name, data) => {
        if (name === "delta" && data && typeof data.text === "string") {
          content.textContent += data.text;
          content.scrollIntoView({ block: "end" });
        } else if (name === "done") {
          finished = data && data.message ? data.message : data;
        } else if (name === "error") {
          const m = data && data.message;
          failure = typeof m === "string" ? m : (m && m.error) || (data && data.error) || "The system did not answer.";
        }
      });
      if (!finished && !failure && last !== "done") failure = "The reply stopped before it was complete.";
    } catch (error) {
      if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429 && onRefused) {
        onRefused(error);
      } else {
        failure = `The system did not answer: ${error.message}.`;
      }
    }
    state.busy = false;
    try {
      await reload();
    } catch (error) {
      failure = failure || `The conversation could not be reloaded: ${error.message}.`;
    }
    const leaf = state.byId.get(currentLeaf());
    if (failure) {
      // An errored reply kept in the tree has its own Retry button; otherwise retry the whole request.
      const kept = leaf && leaf.status === "error";
      announce(failure);
      if (!kept) showFailure(failure, () => streamReply(url, body, onRefused));
      else document.querySelector(".turn-error .retry")?.focus();
    } else if (finished) {
      announce("The reply is complete.");
      speak(leaf && leaf.role === "assistant" ? leaf.content : content.textContent);
      if (!input.disabled) input.focus();
    }
  }

  async function send() {
    const text = input.value.trim();
    if (!text || state.busy) return;
    if (images.pending().some((p) => !p.id)) {
      announce("Wait for the images to finish uploading, or remove the ones that failed.");
      return;
    }
    const ids = images.pending().map((p) => p.id);
    input.value = "";
    const shown = el("li", { class: "turn turn-user pending" }, el("span", { class: "role", text: "You" }), el("div", { class: "content", text }));
    turnsList.append(shown);
    const kept = images.pending();
    images.clear();
    await streamReply(config.messages_url, { content: text, images: ids }, (refusal) => {
      input.value = text; // refused (e.g. an image the system cannot take): nothing was sent, the text stays
      images.restore(kept);
      showFailure(`Not sent: ${refusal.message}`);
    });
  }

  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });

  return { streamReply };
}
