"""The hub's commands: `chateval admin create-user` and `chateval serve --demo` as a real server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sqlmodel import Session, select

from hub.models import User


def test_admin_create_user_reads_the_password_from_stdin(hub_env, run_cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-enough-password\n"))
    result = run_cli("admin", "create-user", "Root@Example.org", "--admin", "--password-stdin")
    assert result.exit_code == 0, result.stderr
    assert "created admin root@example.org" in result.stdout
    with Session(hub_env) as session:
        user = session.exec(select(User)).one()
        assert user.is_admin and user.password_hash.startswith("$argon2")


def test_admin_create_user_refuses_a_short_password(hub_env, run_cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    result = run_cli("admin", "create-user", "a@example.org", "--password-stdin")
    assert result.exit_code == 3
    assert result.stderr.startswith("error: password:")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_demo_starts_a_hub_with_scored_baselines(tmp_path):
    port = free_port()
    env = {**os.environ, "HUB_DATA_DIR": str(tmp_path / "data"), "CHATEVAL_HOME": str(tmp_path / "home")}
    chateval = Path(sys.executable).with_name("chateval")
    server = subprocess.Popen(
        [str(chateval), "serve", "--demo", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline, body = time.monotonic() + 60, None
        while time.monotonic() < deadline and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/submissions/1", timeout=2) as response:
                    body = json.load(response)
            except OSError:
                time.sleep(0.3)
        assert body is not None, "server did not answer within 60 s"
        assert (body["system"]["name"], body["status"]) == ("echo", "evaluated")
        assert {s["metric"] for s in body["scores"]} >= {"distinct-1", "bleu-2"}
        assert "perplexity" not in {s["metric"] for s in body["scores"]}  # echo has no log-likelihoods
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/leaderboards/hub-open-v1", timeout=5) as response:
            board = json.load(response)
        names = {row["system_name"]: row for row in board["rows"]}
        assert set(names) == {"echo", "retrieval", "unigram"}
        assert "perplexity" in names["unigram"]["scores"]  # the unigram LM ships its reference log-likelihoods
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5) as response:
            assert "/api/submissions" in json.load(response)["paths"]
    finally:
        server.terminate()
        server.wait(timeout=20)


def start_server(tmp_path, env) -> tuple[subprocess.Popen, str]:
    port = free_port()
    chateval = Path(sys.executable).with_name("chateval")
    server = subprocess.Popen(
        [str(chateval), "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/openapi.json", timeout=2).close()
            return server, url
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise AssertionError("server did not start")


def test_submit_command_uploads_through_the_api(hub_env, people, run_cli, tmp_path):
    from hub.settings import get_settings

    env = {**os.environ, "HUB_DATA_DIR": str(get_settings().data_dir)}
    server, url = start_server(tmp_path, env)
    try:
        from evaluation.dataset import load_dataset

        good = tmp_path / "mine.txt"
        good.write_text("\n".join(p.references[0] for p in load_dataset("hub-open-v1").prompts) + "\n")
        ok = run_cli(
            "submit",
            "--url",
            url,
            "--token",
            people["owner"],
            "--name",
            "cli bot",
            "--responses",
            f"hub-open-v1={good}",
            "--public",
        )
        assert ok.exit_code == 0, ok.stderr
        assert "(hub-open-v1): submitted" in ok.stdout and "/submissions/" in ok.stdout

        bad = tmp_path / "bad.txt"
        bad.write_text("just one line\n")
        refused = run_cli(
            "submit",
            "--url",
            url,
            "--token",
            people["owner"],
            "--name",
            "cli bot 2",
            "--responses",
            f"hub-open-v1={bad}",
        )
        assert refused.exit_code == 3
        assert "responses[hub-open-v1]: bad.txt: expected 120 lines" in refused.stderr

        wrong_token = run_cli(
            "submit", "--url", url, "--token", "ceh_nope", "--name", "x", "--responses", f"hub-open-v1={good}"
        )
        assert wrong_token.exit_code == 9 and "invalid or revoked API token" in wrong_token.stderr
    finally:
        server.terminate()
        server.wait(timeout=20)
