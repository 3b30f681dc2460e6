"""`chateval datasets fetch NAME --mirror URL` against a real local HTTP server (and a local folder) serving
the real ChatEval files under the names in `datasets/NAME.fetch.json`."""

from __future__ import annotations

import functools
import hashlib
import shutil
import threading
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evaluation.dataset import load_dataset
from evaluation.fetch import FetchManifest, fetchable

REPO = Path(__file__).resolve().parent.parent
NAMES = ("dbdc", "ncm", "os", "twitter")

# Shared files in the order of the manifest: prompts, then "references" (human_1 before human_2).
SHARED_FILES = {
    "ncm": ("prompts/ncm.txt", ["references/ncm_human_1.txt", "references/ncm_human_2.txt"]),
    "dbdc": ("prompts/dbdc.txt", ["references/dbdc_human_1.txt", "references/dbdc_human_2.txt"]),
    "os": ("prompts/os.txt", ["references/os_gold.txt"]),
    "twitter": ("prompts/twitter.txt", ["references/twitter_gold.txt"]),
}
FIRST_PROMPTS = {
    "ncm": "what is two plus two ?",
    "dbdc": "What 's your favorite hobby ?",
    "os": "Unusual ?",
    "twitter": "when you find so you decide to stay in her class 😂😉",
}


def squash(text: str) -> str:
    return "".join(text.split())


def manifest_of(name: str) -> FetchManifest:
    return FetchManifest.model_validate_json((REPO / "datasets" / f"{name}.fetch.json").read_text(encoding="utf-8"))


def basename(url: str) -> str:
    return Path(urllib.parse.urlparse(url).path).name


def remote_to_shared(name: str, shared_data: Path) -> list[tuple[str, Path]]:
    """(file name under a mirror, shared file) for every file of a public dataset."""
    manifest = manifest_of(name)
    prompts, references = SHARED_FILES[name]
    pairs = [(basename(manifest.prompts.url), shared_data / prompts)]
    pairs += [(basename(r.url), shared_data / f) for r, f in zip(manifest.references, references, strict=True)]
    return pairs


@pytest.fixture
def mirror_dir(tmp_path, shared_data) -> Path:
    """A folder laid out like the upstream URLs' last path segment, linking to the shared files."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    for name in NAMES:
        for filename, source in remote_to_shared(name, shared_data):
            (folder / filename).symlink_to(source)
    return folder


class Server:
    def __init__(self, directory: Path):
        self.requests: list[str] = []
        requests = self.requests

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                requests.append(self.path)
                super().do_GET()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def serve():
    servers: list[Server] = []

    def start(directory: Path) -> Server:
        servers.append(Server(directory))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def http_mirror(mirror_dir, serve) -> Server:
    return serve(mirror_dir)


@pytest.fixture
def wide_terminal(monkeypatch):
    """Rich lays tables out for the terminal width (fixed at import when COLUMNS is set); a wide stdout keeps
    every cell on one line whatever terminal the tests run in."""
    from evaluation.cli import console

    monkeypatch.setattr(console.out, "_width", 250)


def installed(home: Path) -> list[str]:
    datasets = home / "datasets"
    return sorted(p.name for p in datasets.iterdir()) if datasets.exists() else []


# --- the manifests ------------------------------------------------------------------------------------------------


def test_the_four_public_sets_are_fetchable():
    assert sorted(fetchable()) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_fetch_manifest_validates_and_checksums_match_the_shared_files(shared_data, name):
    manifest = manifest_of(name)
    assert manifest.name == name
    assert manifest.license and manifest.citation and manifest.source
    files = [manifest.prompts, *manifest.references]
    assert [r.name for r in manifest.references] == (["human_1", "human_2"] if name in ("ncm", "dbdc") else ["gold"])
    for remote, (filename, shared) in zip(files, remote_to_shared(name, shared_data), strict=True):
        assert remote.url.startswith("https://raw.githubusercontent.com/chateval/ChatEval/")
        assert basename(remote.url) == filename
        assert remote.sha256 == hashlib.sha256(shared.read_bytes()).hexdigest(), remote.url


def test_mirror_file_names_are_unique_across_all_sets():
    names = [basename(r.url) for n in NAMES for r in (manifest_of(n).prompts, *manifest_of(n).references)]
    assert len(names) == len(set(names)) == 10


# --- fetching over HTTP -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_fetch_over_http_installs_and_verifies(run_cli, http_mirror, chateval_home, name):
    result = run_cli("datasets", "fetch", name, "--mirror", http_mirror.url)
    assert result.exit_code == 0, result.stderr
    folder = chateval_home / "datasets" / name
    data = load_dataset(name)
    assert data.path == folder
    assert len(data) == 200
    assert data.prompts[0].context[0].content == FIRST_PROMPTS[name]
    assert len(data.references[0]) == len(SHARED_FILES[name][1])
    assert result.stdout == f"{data.fingerprint}: 200 prompts in {folder}\n"
    assert data.fingerprint.startswith(f"{name}@2019.1#")
    manifest = manifest_of(name)
    assert (data.manifest.license, data.manifest.citation) == (manifest.license, manifest.citation)
    assert sorted(http_mirror.requests) == sorted(
        "/" + basename(r.url) for r in (manifest.prompts, *manifest.references)
    )
    assert installed(chateval_home) == [name]


def test_fetched_references_match_the_shared_files_line_for_line(run_cli, http_mirror, shared_data):
    assert run_cli("datasets", "fetch", "dbdc", "--mirror", http_mirror.url + "/").exit_code == 0
    data = load_dataset("dbdc")
    first = (shared_data / "references" / "dbdc_human_1.txt").read_text().removesuffix("\n").split("\n")
    second = (shared_data / "references" / "dbdc_human_2.txt").read_text().removesuffix("\n").split("\n")
    assert [refs[0] for refs in data.references] == first
    assert [refs[1] for refs in data.references] == second
    assert data.references[7][0] == "uh ?? "


def test_fetched_dataset_is_listed_as_installed(run_cli, http_mirror, wide_terminal):
    assert run_cli("datasets", "fetch", "os", "--mirror", http_mirror.url).exit_code == 0
    listing = run_cli("datasets", "list").stdout
    os_row = next(line for line in listing.splitlines() if line.startswith("│ os "))
    assert [cell.strip() for cell in os_row.split("│")[1:5]] == ["os", "2019.1", "200", "ok"]
    assert "chateval datasets fetch os`" not in listing
    assert "not fetched: `chateval datasets fetch ncm`" in listing


def test_second_fetch_is_a_no_op(run_cli, http_mirror, chateval_home):
    assert run_cli("datasets", "fetch", "ncm", "--mirror", http_mirror.url).exit_code == 0
    prompts = chateval_home / "datasets" / "ncm" / "prompts.jsonl"
    stamp = prompts.stat().st_mtime_ns
    http_mirror.requests.clear()
    again = run_cli("datasets", "fetch", "ncm", "--mirror", http_mirror.url)
    assert again.exit_code == 0, again.stderr
    assert http_mirror.requests == []
    assert prompts.stat().st_mtime_ns == stamp
    assert "ncm@2019.1#" in again.stdout
    # Already installed: not even an unreachable mirror is contacted.
    assert run_cli("datasets", "fetch", "ncm", "--mirror", "http://127.0.0.1:1/").exit_code == 0


def test_force_fetches_again(run_cli, http_mirror, chateval_home):
    assert run_cli("datasets", "fetch", "twitter", "--mirror", http_mirror.url).exit_code == 0
    marker = chateval_home / "datasets" / "twitter" / "stale.txt"
    marker.write_text("left from before")
    http_mirror.requests.clear()
    result = run_cli("datasets", "fetch", "twitter", "--mirror", http_mirror.url, "--force")
    assert result.exit_code == 0, result.stderr
    assert len(http_mirror.requests) == 2
    assert not marker.exists()
    assert len(load_dataset("twitter")) == 200
    assert installed(chateval_home) == ["twitter"]


@pytest.fixture
def corrupted_mirror(tmp_path, mirror_dir, serve) -> tuple[Server, str]:
    """A copy of the mirror where ncm's second reference file differs by one byte."""
    folder = tmp_path / "corrupted"
    folder.mkdir()
    for link in mirror_dir.iterdir():
        (folder / link.name).symlink_to(link.resolve())
    filename = basename(manifest_of("ncm").references[1].url)
    data = bytearray((folder / filename).read_bytes())
    data[0] ^= 0x20  # upper-case the first letter
    (folder / filename).unlink()
    (folder / filename).write_bytes(bytes(data))
    return serve(folder), filename


def test_corrupted_mirror_file_is_refused_with_checksum_mismatch_and_installs_nothing(
    run_cli, corrupted_mirror, chateval_home
):
    server, filename = corrupted_mirror
    result = run_cli("datasets", "fetch", "ncm", "--mirror", server.url)
    assert result.exit_code == 3
    expected = manifest_of("ncm").references[1].sha256
    assert squash(f"error: checksum mismatch for {server.url}/{filename}: expected sha256 {expected}, got") in squash(
        result.stderr
    )
    assert result.stdout == ""
    assert installed(chateval_home) == []


def test_failed_forced_refetch_keeps_the_installed_dataset(run_cli, http_mirror, corrupted_mirror):
    assert run_cli("datasets", "fetch", "ncm", "--mirror", http_mirror.url).exit_code == 0
    before = load_dataset("ncm").fingerprint
    server, _ = corrupted_mirror
    assert run_cli("datasets", "fetch", "ncm", "--mirror", server.url, "--force").exit_code == 3
    assert load_dataset("ncm").fingerprint == before


def test_unreachable_mirror_gives_a_clear_error(run_cli, chateval_home):
    result = run_cli("datasets", "fetch", "ncm", "--mirror", "http://127.0.0.1:1/")
    assert result.exit_code == 8  # a network failure, not "a metric cannot run" (5)
    filename = basename(manifest_of("ncm").prompts.url)
    assert squash(f"error: could not download http://127.0.0.1:1/{filename}:") in squash(result.stderr)
    assert "Connection refused" in result.stderr
    assert installed(chateval_home) == []


def test_mirror_missing_a_file_reports_http_404(run_cli, tmp_path, mirror_dir, serve, chateval_home):
    partial = tmp_path / "partial"
    shutil.copytree(mirror_dir, partial, symlinks=True)
    filename = basename(manifest_of("os").references[0].url)
    (partial / filename).unlink()
    server = serve(partial)
    result = run_cli("datasets", "fetch", "os", "--mirror", server.url)
    assert result.exit_code == 8
    assert squash(f"error: could not download {server.url}/{filename}: HTTP Error 404") in squash(result.stderr)
    assert installed(chateval_home) == []


# --- a local folder as mirror ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ncm", "os"])
def test_local_folder_mirror_works(run_cli, mirror_dir, chateval_home, name):
    result = run_cli("datasets", "fetch", name, "--mirror", mirror_dir)
    assert result.exit_code == 0, result.stderr
    data = load_dataset(name)
    assert len(data) == 200
    assert data.path == chateval_home / "datasets" / name
    assert data.prompts[0].context[0].content == FIRST_PROMPTS[name]


def test_local_folder_mirror_missing_file_is_an_error(run_cli, tmp_path, chateval_home):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("datasets", "fetch", "twitter", "--mirror", empty)
    assert result.exit_code == 4  # not found in the folder
    filename = basename(manifest_of("twitter").prompts.url)
    assert squash(f"error: could not read {(empty / filename).as_uri()}:") in squash(result.stderr)
    assert installed(chateval_home) == []


def test_unknown_public_dataset_is_not_found(run_cli, chateval_home):
    result = run_cli("datasets", "fetch", "cornell")
    assert result.exit_code == 4
    assert squash("error: no fetchable dataset 'cornell' (known: dbdc, ncm, os, twitter)") in squash(result.stderr)
    assert installed(chateval_home) == []
