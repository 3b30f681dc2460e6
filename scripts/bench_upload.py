"""Benchmark: uploading a 100,000-line response file through POST /api/submissions (validate, store, record).

Serves the real app with uvicorn in a background thread of this process, posts the file over HTTP three times
(one line changed each time, so content-addressed storage never short-circuits) and reports the median wall
time and the growth of this process's peak RSS. Measured in the same run as references: the dataset load, the
toolkit's validation alone (`parse_responses`), storing alone (`storage.put`) and a direct `create_submissions`
call (no HTTP), each with its tracemalloc peak. Also checks that the file with one line missing is refused with
HTTP 422 and the toolkit's "expected N lines ... found N-1" message.

Targets (reported, not asserted): < 5 s per upload, < 200 MB memory growth.
Usage: python scripts/bench_upload.py [--size N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = "bench-upload"
TARGET_SECONDS = 5.0
TARGET_GROWTH_MB = 200.0
MB = 1024 * 1024


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def current_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return peak_rss_mb()


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark (Linux >= 4.0), so that ru_maxrss measures from here on."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def configure_environment(scratch: Path) -> None:
    """Temporary hub data, toolkit home and dataset folder; must run before any settings are read."""
    os.environ["HUB_DATA_DIR"] = str(scratch / "hub-data")
    os.environ["CHATEVAL_HOME"] = str(scratch / "chateval-home")
    os.environ["CHATEVAL_DATASET_DIRS"] = json.dumps([str(scratch / "datasets")])
    # One benchmark user uploads many times: the daily submission quota is not what is measured.
    os.environ["HUB_SUBMISSIONS_PER_DAY"] = "100000"
    os.environ["HUB_SUBMISSION_ATTEMPTS_PER_DAY"] = "100000"
    for name in ("HUB_DATABASE_URL", "HUB_STORAGE_URL", "HUB_QUEUE_URL"):
        os.environ.pop(name, None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    # In case anything read them already (e.g. imported by a caller): forget the cached settings.
    from evaluation import settings as toolkit_settings
    from hub import db, queue, settings, storage

    for cached in (toolkit_settings.get_settings, settings.get_settings, db.get_engine, storage.get_storage):
        cached.cache_clear()
    queue.get_huey.cache_clear()
    queue.tasks.cache_clear()


def sentences(rng, vocab: list[str], count: int) -> list[str]:
    """`count` sentences distributed exactly as bench_metrics.sentence (lognormal lengths, median ~9 words;
    Zipf(1.3) vocabulary; optional final punctuation), drawn in bulk: 300,000 calls of it take ~40 s here."""
    import numpy as np

    lengths = np.clip(rng.lognormal(2.2, 0.55, size=count), 1, 60).astype(np.int64).tolist()
    ranks = (np.minimum(rng.zipf(1.3, size=sum(lengths)), len(vocab)) - 1).tolist()
    ends = rng.choice([" .", " ?", " !", ""], size=count).tolist()
    result, position = [], 0
    for length, end in zip(lengths, ends, strict=True):
        result.append(" ".join([vocab[r] for r in ranks[position : position + length]]) + end)
        position += length
    return result


def build_dataset(folder: Path, size: int, seed: int = 13) -> list[str]:
    """A dataset of `size` single-turn prompts with 2 references each; returns `size` response lines."""
    import numpy as np

    from evaluation.dataset import sha256_file

    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30_000)]
    contexts, first, second, responses = (sentences(rng, vocab, size) for _ in range(4))
    folder.mkdir(parents=True)
    with (folder / "prompts.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(size):
            record = {
                "id": str(i),
                "context": [{"role": "user", "content": contexts[i]}],
                "references": [first[i], second[i]],
            }
            handle.write(json.dumps(record) + "\n")
    manifest = dict(name=folder.name, version="1", description="", source="", license="", citation="")
    manifest["prompts_sha256"] = sha256_file(folder / "prompts.jsonl")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return responses


def response_file(lines: list[str], variant: int) -> bytes:
    """The response file with its first line changed: same size and shape, different sha256."""
    return ("\n".join([f"{lines[0]} v{variant}", *lines[1:]]) + "\n").encode()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(app, port: int):
    import httpx
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/submissions/0", timeout=2)  # any answer (404) means it is up
            return server, thread
        except httpx.TransportError:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the uvicorn server did not start") from None
            time.sleep(0.05)


def post(client, token: str, name: str, data: bytes):
    return client.post(
        "/api/submissions",
        headers={"Authorization": f"Bearer {token}"},
        data={"name": name},
        files={f"responses[{DATASET}]": ("responses.txt", data, "text/plain")},
    )


def traced(function, *args, **kwargs) -> tuple[float, object]:
    """Peak of Python allocations made by one call, in MB (inputs allocated before the call do not count)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        result = function(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / MB, result


def timed(function, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="prompts in the dataset, lines in the file")
    parser.add_argument("--repeat", type=int, default=3, help="HTTP uploads, each with different content")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-upload-") as scratch_name:
        scratch = Path(scratch_name)
        configure_environment(scratch)
        started = time.perf_counter()
        lines = build_dataset(scratch / "datasets" / DATASET, args.size)
        files = [response_file(lines, variant) for variant in range(args.repeat + 6)]
        missing_line = ("\n".join(lines[:-1]) + "\n").encode()
        size_mb = len(files[0]) / MB
        print(
            f"generated a dataset of {args.size:,} prompts (2 references each) and a {args.size:,}-line response "
            f"file of {size_mb:.1f} MB in {time.perf_counter() - started:.1f} s"
        )

        import httpx
        from sqlmodel import Session

        from evaluation.dataset import load_dataset
        from evaluation.responses import parse_responses
        from hub.db import get_engine
        from hub.migrate import upgrade
        from hub.models import User
        from hub.services.accounts.accounts import create_token, create_user
        from hub.services.submissions.submissions import SystemForm, UploadedFile, create_submissions
        from hub.storage import get_storage
        from hub.web.app import create_app

        upgrade()
        with Session(get_engine()) as session:
            user = create_user(
                session, email="bench@example.org", password="correct horse battery", display_name="bench"
            )
            user_id = user.id
            token = create_token(session, user, name="bench")[1]

        port = free_port()
        server, thread = start_server(create_app(), port)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)
        try:
            # --- the real HTTP path -------------------------------------------------------------------------
            rss_reset = reset_peak_rss()
            rss_before = peak_rss_mb()
            upload_seconds = []
            for number in range(args.repeat):
                seconds, response = timed(post, client, token, f"bench system {number}", files[number])
                if response.status_code != 201:
                    raise RuntimeError(f"upload {number + 1} answered {response.status_code}: {response.text[:500]}")
                upload_seconds.append(seconds)
            rss_after = peak_rss_mb()
            rss_now = current_rss_mb()
            growth = rss_after - rss_before
            upload = statistics.median(upload_seconds)
            print(
                f"\nHTTP uploads ({args.repeat} x {size_mb:.1f} MB, 201 Created): "
                + ", ".join(f"{s:.2f} s" for s in upload_seconds)
                + f"; median {upload:.2f} s"
            )
            print(
                f"server process peak RSS: {rss_before:.0f} MB before the first upload, {rss_after:.0f} MB after "
                f"the last (+{growth:.0f} MB); current RSS now {rss_now:.0f} MB"
                + ("" if rss_reset else " [peak could not be reset: 'before' is the peak since start]")
            )

            # --- the failure case: one line missing -----------------------------------------------------------
            refusal, response = timed(post, client, token, "bench system short", missing_line)
            message = response.json().get("error", "") if response.status_code == 422 else response.text[:300]
            expected = re.compile(rf"expected {args.size} lines .* found {args.size - 1}\b")
            refused_ok = response.status_code == 422 and bool(expected.search(message))
            print(f"\nfile with {args.size - 1:,} lines: HTTP {response.status_code} in {refusal:.2f} s: {message}")
        finally:
            client.close()
            server.should_exit = True
            thread.join(timeout=30)

        # --- references in the same run: each step alone, then the service call without HTTP ----------------
        spare = iter(files[args.repeat :])
        load_runs = [timed(load_dataset, DATASET)[0] for _ in range(3)]
        load_mb, dataset = traced(load_dataset, DATASET)
        data = files[0]
        parse_runs = [timed(parse_responses, data, dataset=dataset, name="responses.txt")[0] for _ in range(3)]
        parse_mb, _ = traced(parse_responses, data, dataset=dataset, name="responses.txt")
        storage = get_storage()
        put_runs = [timed(storage.put, next(spare))[0] for _ in range(2)]  # new content: a real write + fsync
        put_mb, _ = traced(storage.put, next(spare))
        del dataset

        def submit(content: bytes, name: str):
            with Session(get_engine()) as session:
                owner = session.get(User, user_id)
                return create_submissions(
                    session,
                    storage,
                    owner=owner,
                    form=SystemForm(name=name),
                    responses={DATASET: UploadedFile("responses.txt", content)},
                )

        direct_runs = [timed(submit, next(spare), f"bench direct {n}")[0] for n in range(2)]
        direct_mb, _ = traced(submit, next(spare), "bench direct traced")

        print(f"\n{'step (same file, same run)':<40}{'median s':>9}{'min s':>7}{'max s':>7}{'MB':>8}")
        rows = [
            (f"HTTP upload ({args.repeat} runs)", upload_seconds, growth),
            (f"create_submissions direct ({len(direct_runs)} runs)", direct_runs, direct_mb),
            (f"  load_dataset, {args.size:,} prompts ({len(load_runs)})", load_runs, load_mb),
            (f"  parse_responses alone ({len(parse_runs)})", parse_runs, parse_mb),
            (f"  storage.put alone ({len(put_runs)})", put_runs, put_mb),
        ]
        for label, runs, megabytes in rows:
            print(f"{label:<40}{statistics.median(runs):>9.2f}{min(runs):>7.2f}{max(runs):>7.2f}{megabytes:>8.1f}")
        print(
            "MB: for the HTTP upload, growth of the server process's peak RSS over the uploads; "
            "otherwise the tracemalloc peak of one call"
        )
        parse_s, direct_s = statistics.median(parse_runs), statistics.median(direct_runs)
        print(
            f"\nupload / validation (parse_responses): {upload / parse_s:.1f}x; "
            f"upload / direct create_submissions: {upload / direct_s:.2f}x; "
            f"load_dataset share of the upload: {statistics.median(load_runs) / upload:.0%}"
        )

        print()
        print(f"{'PASS' if upload < TARGET_SECONDS else 'FAIL'}: upload {upload:.2f} s (target < {TARGET_SECONDS:g} s)")
        print(
            f"{'PASS' if growth < TARGET_GROWTH_MB else 'FAIL'}: memory growth {growth:.0f} MB "
            f"(target < {TARGET_GROWTH_MB:g} MB)"
        )
        print(
            f"{'PASS' if refused_ok else 'FAIL'}: {args.size - 1:,}-line file refused with 422 "
            f"'expected {args.size} lines ... found {args.size - 1}' in {refusal:.2f} s"
        )
        get_engine().dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
