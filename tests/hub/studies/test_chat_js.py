"""The chat page's stream reader (hub/static/js/chat_api.js) under Node: server-sent events cut at any byte arrive
whole and in order (comments skipped, multi-line data joined, CRLF accepted), and a refusal reads as words."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from hub.web.templating import STATIC

NODE = shutil.which("node")

# Feeds `body` to postStream through a fake fetch, in chunks cut every `step` bytes; prints the events seen.
HARNESS = r"""
const [moduleUrl, body, step, status, type] = process.argv.slice(1);
const bytes = new TextEncoder().encode(body);
globalThis.fetch = async () => ({
  ok: Number(status) < 400,
  status: Number(status),
  headers: { get: () => type },
  text: async () => body,
  body: new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += Number(step)) controller.enqueue(bytes.slice(i, i + Number(step)));
      controller.close();
    },
  }),
});
const api = await import(moduleUrl);
const events = [];
try {
  const last = await api.postStream("/x", {}, (name, data) => events.push([name, data]));
  console.log(JSON.stringify({ events, last }));
} catch (error) {
  console.log(JSON.stringify({ error: error.message, status: error.status, field: error.field }));
}
"""

STREAM = (
    ": keep-alive\r\n\r\n"
    'event: delta\r\ndata: {"text": "Bonjour, "}\r\n\r\n'
    'event: delta\ndata: {"text": "ça va ? 👋"}\n\n'
    "event: note\ndata: first line\ndata: second line\n\n"
    'event: done\ndata: {"message": {"id": 7, "content": "Bonjour, ça va ? 👋"}}\n\n'
)


def run(body: str, step: int, status: int = 200, content_type: str = "text/event-stream") -> dict:
    module = (STATIC / "js" / "chat_api.js").as_uri()
    args = [NODE, "--input-type=module", "-e", HARNESS, module, body, str(step), str(status), content_type]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(done.stdout)


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_events_cut_anywhere_arrive_whole_and_in_order(step):
    seen = run(STREAM, step)
    assert seen["events"] == [
        ["delta", {"text": "Bonjour, "}],
        ["delta", {"text": "ça va ? 👋"}],
        ["note", "first line\nsecond line"],
        ["done", {"message": {"id": 7, "content": "Bonjour, ça va ? 👋"}}],
    ]
    assert seen["last"] == "done"


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_a_refusal_reads_as_words_naming_the_field():
    refusal = json.dumps({"error": "no uploaded image has this id", "field": "images[0]"})
    seen = run(refusal, 1000, status=404, content_type="application/json")
    assert seen == {"error": "images[0]: no uploaded image has this id", "status": 404, "field": "images[0]"}
    busy = run("", 1000, status=503, content_type="text/html")
    assert busy["error"] == "the hub is busy; try again in a moment"
