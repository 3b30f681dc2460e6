"""The call cache: a re-run is answered from it with no request sent, it never holds the key, CLI stats/prune."""

from __future__ import annotations

import json
import time

from evaluation.llm.cache import CallCache, request_key
from evaluation.llm.client import ChatClient
from tests.llm.conftest import KEY, fast_config


def test_rerun_is_free_and_identical(server, tmp_path):
    server.responder = lambda request: f"answer to {request['messages'][-1]['content']}"
    requests = [[{"role": "user", "content": f"q{i}"}] for i in range(30)]
    with CallCache(tmp_path / "cache.sqlite") as cache:
        first = ChatClient(fast_config(server.base_url), cache=cache).complete_many(requests)
        sent = server.counts["/v1/chat/completions"]
        server.responder = lambda request: "something else now"
        again = ChatClient(fast_config(server.base_url), cache=cache)
        second = again.complete_many(requests)
    assert sent == 30 and server.counts["/v1/chat/completions"] == 30  # nothing sent the second time
    assert [r.text for r in second] == [r.text for r in first]
    assert all(r.cached for r in second) and again.usage.cached_calls == 30 and again.usage.calls == 0


def test_key_is_part_of_no_cache_entry(server, tmp_path):
    path = tmp_path / "cache.sqlite"
    with CallCache(path) as cache:
        ChatClient(fast_config(server.base_url), cache=cache).complete([{"role": "user", "content": "hi"}])
        # A different key, same request: the same entry (the key is not part of the request's identity).
        other = ChatClient(fast_config(server.base_url, api_key="sk-another-key-entirely-000"), cache=cache)
        assert other.complete([{"role": "user", "content": "hi"}]).cached
    for file in tmp_path.iterdir():
        assert KEY.encode() not in file.read_bytes(), file


def test_any_change_of_the_request_is_a_different_entry():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0, "max_tokens": 5}
    base = request_key("http://h/v1/chat/completions", body)
    assert base == request_key("http://h/v1/chat/completions", dict(reversed(list(body.items()))))  # canonical
    for change in ({"temperature": 0.5}, {"max_tokens": 6}, {"model": "n"}):
        assert request_key("http://h/v1/chat/completions", {**body, **change}) != base
    assert request_key("http://other/v1/chat/completions", body) != base


def test_cli_stats_and_prune(server, tmp_path, run_cli):
    path = tmp_path / "cache.sqlite"
    with CallCache(path) as cache:
        ChatClient(fast_config(server.base_url), cache=cache).complete_many(
            [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
        )
        cache._db.execute("UPDATE calls SET last_used_at = ? WHERE rowid <= 2", (time.time() - 10 * 86_400,))
    result = run_cli("llm", "cache", "stats", "--cache", path, "--json")
    assert result.exit_code == 0
    stats = json.loads(result.stdout)
    assert stats["entries"] == 5 and stats["by_model"] == {"judge-1": 5}
    assert run_cli("llm", "cache", "stats", "--cache", path).exit_code == 0
    result = run_cli("llm", "cache", "prune", "--older-than", "7", "--cache", path)
    assert result.exit_code == 0 and "removed 2 cached call(s)" in result.stdout
    assert run_cli("llm", "cache", "prune", "--cache", path).exit_code == 2  # neither --older-than nor --all
    assert "removed 3" in run_cli("llm", "cache", "prune", "--all", "--cache", path).stdout
