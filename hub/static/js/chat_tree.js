// The conversation tree: every message nested under its parent (post-edits and reversals make siblings), and the
// list of branches (the active one and those closed by an edit or a reversal), each viewable and markable as
// successful or not.
import { el } from "./chat_dom.js";

// Messages from the root to `leafId`.
export function pathTo(byId, leafId) {
  const path = [];
  const seen = new Set();
  let node = byId.get(leafId);
  while (node && !seen.has(node.id)) {
    seen.add(node.id);
    path.push(node);
    node = node.parent_id ? byId.get(node.parent_id) : null;
  }
  return path.reverse();
}

function snippet(text, limit) {
  const flat = (text || "").replace(/\s+/g, " ").trim();
  return flat.length > limit ? flat.slice(0, limit - 1) + "…" : flat || "(empty)";
}

// `reviewing`: the viewer reads another participant's conversation (cross-review), so its turns are not "yours".
function speaker(message, reviewing) {
  if (message.role === "user") return reviewing ? "Participant" : "You";
  if (!message.edit_of_id) return "System";
  return reviewing ? "System (the participant's edit)" : "System (your edit)";
}

export function branchWords(branch) {
  if (!branch.closed_by) return "active";
  const how = branch.closed_by === "edit" ? "closed by an edit" : "left by going back";
  return branch.reason ? `${how}: “${snippet(branch.reason, 60)}”` : how;
}

// `branches` named 1..n by creation order; the branch whose path holds a message, preferring the one viewed.
export function branchNumbering(branches) {
  const numbers = new Map();
  [...branches].sort((a, b) => a.id - b.id).forEach((b, i) => numbers.set(b.id, i + 1));
  return numbers;
}

function branchFor(messageId, branches, byId, preferredLeaf) {
  const holding = branches.filter((b) => pathTo(byId, b.leaf_id).some((m) => m.id === messageId));
  return holding.find((b) => b.leaf_id === preferredLeaf) || holding.find((b) => !b.closed_by) || holding[0] || null;
}

export function renderTree({ container, messages, branches, currentLeafId, viewedLeafId, onView, onOutcome, reviewing }) {
  const byId = new Map(messages.map((m) => [m.id, m]));
  const children = new Map();
  for (const m of [...messages].sort((a, b) => a.id - b.id)) {
    const key = m.parent_id || 0;
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(m);
  }
  const viewed = new Set(pathTo(byId, viewedLeafId).map((m) => m.id));
  const active = new Set(pathTo(byId, currentLeafId).map((m) => m.id));
  const numbers = branchNumbering(branches);

  const node = (m) => {
    const classes = ["tree-node", `tree-${m.role}`];
    if (active.has(m.id)) classes.push("on-active");
    if (viewed.has(m.id)) classes.push("on-viewed");
    if (m.status === "error") classes.push("tree-error");
    const branch = branchFor(m.id, branches, byId, viewedLeafId);
    const button = el("button", {
      type: "button",
      class: classes.join(" "),
      "aria-current": m.id === viewedLeafId ? "true" : null,
      title: branch ? `Branch ${numbers.get(branch.id)} (${branchWords(branch)})` : null,
    });
    button.append(el("span", { class: "tree-speaker", text: speaker(m, reviewing) }), ` ${snippet(m.content || m.error, 48)}`);
    button.addEventListener("click", () => onView(branch ? branch.leaf_id : m.id));
    return el("li", {}, button);
  };
  // A run of single replies stays at one level; where a turn has several continuations (an edit, a reply after
  // going back), each continuation is indented under it.
  const grow = (parentKey, ul) => {
    const kids = children.get(parentKey) || [];
    if (kids.length === 1) {
      ul.append(node(kids[0]));
      grow(kids[0].id, ul);
      return;
    }
    for (const kid of kids) {
      const fork = el("ul", { class: "tree-level tree-fork" }, node(kid));
      grow(kid.id, fork);
      ul.append(el("li", { class: "tree-branch" }, fork));
    }
  };
  const root = el("ul", { class: "tree-level tree-root" });
  grow(0, root);

  const table = el("table", { class: "branches" });
  table.append(
    el("thead", {}, el("tr", {}, ...["Branch", "State", "Turns", "Successful", ""].map((h) => el("th", { text: h })))),
  );
  const body = el("tbody");
  for (const b of [...branches].sort((x, y) => x.id - y.id)) {
    const n = numbers.get(b.id);
    const box = el("input", { type: "checkbox", checked: !!b.successful, "aria-label": `Branch ${n} was successful` });
    if (onOutcome) box.addEventListener("change", () => onOutcome(b, box.checked, box));
    else box.disabled = true; // a reviewer reads another participant's branches, the author marks them
    const view = el("button", {
      type: "button",
      class: "plain",
      text: b.leaf_id === viewedLeafId ? "Viewing" : "View",
      disabled: b.leaf_id === viewedLeafId,
      "aria-label": `View branch ${n}`,
    });
    view.addEventListener("click", () => onView(b.leaf_id));
    const row = el(
      "tr",
      { class: b.closed_by ? "branch-closed" : "branch-active" },
      el("td", { text: String(n) }),
      el("td", { text: branchWords(b) }),
      el("td", { class: "num", text: String(pathTo(byId, b.leaf_id).length) }),
      el("td", {}, box),
      el("td", {}, view),
    );
    body.append(row);
  }
  table.append(body);
  container.replaceChildren(
    el("div", { class: "tree", role: "group", "aria-label": "All messages, nested under the message they answer" }, messages.length ? root : el("p", { class: "muted", text: "No messages yet." })),
    table,
  );
}
