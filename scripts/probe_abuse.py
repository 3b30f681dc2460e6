"""Replays the attacks of issue 9 items 3, 7 and 8 against a real server and prints what the hub answers.

    .venv/bin/python scripts/probe_abuse.py            # a fresh hub in a temporary folder, default settings

1. 100 wrong passwords for one account, then the right one (item 7: was 100 x 401 then 303 in 10.6 s);
2. a session cookie captured before logout, replayed after it (item 8: was still logged in);
3. one client claiming a cohort invite link as 15 raters (item 3: was 15 raters in 0.5 s).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
PASSWORD = "correct horse battery"


def prepare(data_dir: Path) -> str:
    """An admin and a researcher, the demo baselines and a launched experiment with a cohort invite: its token."""
    os.environ["HUB_DATA_DIR"] = str(data_dir)
    sys.path.insert(0, str(ROOT))
    from sqlmodel import Session, select

    from hub.db import get_engine
    from hub.migrate import upgrade
    from hub.models import System
    from hub.services.accounts.accounts import create_user
    from hub.services.human import experiments, raters
    from hub.services.submissions.demo import seed_baselines
    from hub.storage import get_storage

    upgrade()
    engine = get_engine()
    seed_baselines(engine, get_storage(), names=["echo", "retrieval"])
    with Session(engine) as session:
        admin = create_user(session, email="admin@example.org", password=PASSWORD, display_name="a", is_admin=True)
        create_user(session, email="owner@example.org", password=PASSWORD, display_name="o")
        ids = {s.name: s.id for s in session.exec(select(System))}
        form = experiments.ExperimentForm(
            dataset="hub-open-v1", system_a_id=ids["echo"], system_b_id=ids["retrieval"], raters_per_prompt=20
        )
        experiment = experiments.create_experiment(session, admin, form, get_storage())
        experiments.launch(session, admin, experiment.id)
        token = raters.create_invite(session, admin, experiment, label="probe", cohort=True)[1]
    engine.dispose()
    return token


def serve(data_dir: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HUB_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "uvicorn", "hub.web.app:create_app", "--factory", "--port", str(port)]
    server = subprocess.Popen([*command, "--log-level", "warning"], env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/login")
            return server, url
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit("the server did not start")


def log_in(client: httpx.Client, password: str) -> httpx.Response:
    token = CSRF_FIELD.search(client.get("/login").text).group(1)
    return client.post("/login", data={"csrf_token": token, "email": "owner@example.org", "password": password})


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder) / "hub-data"
        invite = prepare(data_dir)
        server, url = serve(data_dir)
        try:
            with httpx.Client(base_url=url, headers={"accept": "text/html"}) as client:
                started = time.perf_counter()
                answers = Counter(log_in(client, f"wrong password {i}").status_code for i in range(100))
                right = log_in(client, PASSWORD)
                seconds = time.perf_counter() - started
                print(
                    f"1. 100 wrong passwords: {dict(answers)}; then the right one: {right.status_code} "
                    f"(Retry-After {right.headers.get('retry-after')} s); {seconds:.1f} s"
                )
            with httpx.Client(base_url=url, headers={"accept": "text/html"}) as admin:
                token = CSRF_FIELD.search(admin.get("/login").text).group(1)
                login = {"csrf_token": token, "email": "admin@example.org", "password": PASSWORD}
                admin.post("/login", data=login)
                captured = admin.cookies["session"]
                before = admin.get("/account", follow_redirects=False).status_code
                csrf = CSRF_FIELD.search(admin.get("/account").text).group(1)
                admin.post("/logout", data={"csrf_token": csrf})
            with httpx.Client(base_url=url, cookies={"session": captured}) as thief:
                after = thief.get("/account", follow_redirects=False).status_code
            print(f"2. captured cookie: /account {before} before logout, {after} after (303 = sent to log in)")
            with httpx.Client(base_url=url) as client:
                started = time.perf_counter()
                claims = [
                    client.post(f"/api/rate/{invite}/claim", params={"rater_label": f"sock{i}"}).status_code
                    for i in range(15)
                ]
                seconds = time.perf_counter() - started
            print(f"3. one client, 15 rater labels: {dict(Counter(claims))} in {seconds:.1f} s")
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
