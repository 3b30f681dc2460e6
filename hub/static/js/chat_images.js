// Images for a vision system: chosen files are previewed (a data: URL, which the page's policy allows), uploaded
// at once (the hub checks type and size and says why it refuses one), and their ids sent with the next message.
import { postForm } from "./chat_api.js";
import { el } from "./chat_dom.js";

export function setUpImages({ config, previews, picker, attach, input, announce }) {
  const maxImages = config.max_images || 4;
  let pendingImages = []; // {id|null, file, node}

  function clearImages() {
    pendingImages = [];
    previews.replaceChildren();
  }

  function addPreview(file, knownId) {
    const item = { id: knownId || null, file, node: el("li", { class: "preview" }) };
    const img = el("img", { alt: `Preview of ${file.name}` });
    const reader = new FileReader();
    reader.addEventListener("load", () => img.setAttribute("src", reader.result));
    reader.readAsDataURL(file);
    const note = el("span", { class: "preview-status", text: knownId ? "ready" : "uploading…" });
    const remove = el("button", { type: "button", class: "plain", text: "Remove", "aria-label": `Remove ${file.name}` });
    remove.addEventListener("click", () => {
      pendingImages = pendingImages.filter((p) => p !== item);
      item.node.remove();
      input.focus();
    });
    item.node.append(img, el("span", { class: "preview-name", text: file.name }), note, remove);
    previews.append(item.node);
    pendingImages.push(item);
    if (knownId) return;
    const form = new FormData();
    form.append("image", file, file.name);
    postForm(config.upload_url, form).then(
      (answer) => {
        item.id = answer.id;
        note.textContent = "ready";
      },
      (error) => {
        img.remove(); // not an image the hub takes: its preview would be a broken picture
        note.textContent = `Refused: ${error.message.replace(/^image: /, "")}`;
        note.classList.add("error");
        pendingImages = pendingImages.filter((p) => p !== item);
      },
    );
  }

  attach.hidden = false;
  attach.addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    for (const file of Array.from(picker.files || [])) {
      if (pendingImages.length >= maxImages) {
        announce(`At most ${maxImages} images per message.`);
        break;
      }
      addPreview(file);
    }
    picker.value = "";
  });

  return {
    pending: () => pendingImages,
    clear: clearImages,
    restore: (items) => items.forEach((p) => addPreview(p.file, p.id)),
  };
}
