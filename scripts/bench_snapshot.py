"""Benchmark: `chateval export` of the seeded database of issue 12 (500 systems, 5 datasets of 200 prompts, 100,000
ratings, fitted IRT), as a whole process, against the target of 30 s and against the previous export measured in
the same run (every download written by `exports.open_export`, one database pass per file, no SQLite file).

For each database (SQLite, PostgreSQL in a fresh database): seeds it with scripts/bench_web_seed.py (bench_web.py's
seeder), then runs `chateval export --out A` and `--out B` (whole processes, wall time and peak RSS), checks that
A and B hold the same version with the same bytes, runs it once more into A (unchanged data: only the pointers
move), and prints the sizes of the snapshot's files.
Usage: python scripts/bench_snapshot.py [--db sqlite|postgres|both] [--systems 500] [--datasets 5] [--prompts 200]
       [--ratings 100000] [--bootstrap 20]
Quick run: --systems 50 --ratings 5000 --db sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "scripts"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from bench_servers import fresh_database, server_environment, use_environment  # noqa: E402
from bench_web_seed import seed, write_datasets  # noqa: E402

TARGET_S = 30.0
CHATEVAL = ROOT / ".venv" / "bin" / "chateval"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_export(env: dict[str, str], out: Path) -> tuple[float, float, float, str]:
    """`chateval export --out OUT` as its own process: (wall seconds, CPU seconds, peak RSS in MB, its summary
    line). CPU time is the steadier figure on a shared machine."""
    before, cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, _cpu()
    started = time.perf_counter()
    done = subprocess.run([str(CHATEVAL), "export", "--out", str(out)], env=env, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"chateval export failed ({done.returncode}): {done.stderr[-2000:]}")
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return seconds, cpu, peak, done.stdout.strip()


PREVIOUS = """
import sys, tempfile
from pathlib import Path
from hub.db import get_engine
from hub.services.publishing import exports
from hub.storage import get_storage
out = Path(sys.argv[1]); out.mkdir(parents=True)
for kind in exports.FIELDS:
    for fmt in exports.MEDIA_TYPES:
        export = exports.open_export(get_engine(), get_storage(), f"{kind}.{fmt}")
        with (out / f"{kind}.{fmt}").open("wb") as handle:
            for chunk in export.chunks:
                handle.write(chunk.encode("utf-8"))
"""


def timed_previous(env: dict[str, str], out: Path) -> tuple[float, float]:
    started, cpu = time.perf_counter(), _cpu()
    subprocess.run([sys.executable, "-c", PREVIOUS, str(out)], env=env, check=True)
    return time.perf_counter() - started, _cpu() - cpu


def same_bytes(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all((a / p).read_bytes() == (b / p).read_bytes() for p in files_a)


def bench(kind: str, args: argparse.Namespace, folder: Path) -> dict:
    datasets_dir = folder / "datasets"
    datasets = write_datasets(datasets_dir, args.datasets, args.prompts)
    with fresh_database(kind, folder) as url:
        env = {**server_environment(folder, url), "CHATEVAL_DATASET_DIRS": json.dumps([str(datasets_dir)])}
        os.environ["CHATEVAL_DATASET_DIRS"] = env["CHATEVAL_DATASET_DIRS"]
        use_environment(env)
        from evaluation.settings import get_settings

        get_settings.cache_clear()
        seed(args, datasets)
        first_s, first_cpu, first_mb, line = timed_export(env, folder / "a")
        second_s, _, _, _ = timed_export(env, folder / "b")
        again_s, _, _, again_line = timed_export(env, folder / "a")
        previous_s, previous_cpu = timed_previous(env, folder / "previous")
        pointer = json.loads((folder / "a" / "latest.json").read_text())
        version = pointer["version"]
        manifest = json.loads((folder / "a" / version / "manifest.json").read_text())
        identical = same_bytes(folder / "a" / version, folder / "b" / version)
        print(f"{kind}: {line}\n{kind}: again: {again_line}", flush=True)
        return {
            "db": kind,
            "first_s": first_s,
            "second_s": second_s,
            "unchanged_s": again_s,
            "peak_mb": first_mb,
            "previous_s": previous_s,
            "first_cpu": first_cpu,
            "previous_cpu": previous_cpu,
            "load": os.getloadavg()[0],
            "cores": os.cpu_count(),
            "identical": identical,
            "reused": "unchanged" in again_line,
            "sizes": manifest["sizes"],
            "tables": manifest["tables"],
        }


def report(row: dict) -> None:
    total = sum(row["sizes"].values())
    ok = row["first_s"] <= TARGET_S and row["identical"]
    print(f"\n{row['db']}: rows per table: {json.dumps(row['tables'])}")
    print(f"{'file':<26}{'MB':>10}")
    for name, size in sorted(row["sizes"].items(), key=lambda item: -item[1]):
        print(f"{name:<26}{size / 1e6:>10.2f}")
    print(f"{'total':<26}{total / 1e6:>10.2f}")
    print(
        f"{row['db']}: export {row['first_s']:.1f} s (again into another folder {row['second_s']:.1f} s, "
        f"unchanged data {row['unchanged_s']:.1f} s), peak RSS {row['peak_mb']:.0f} MB; "
        f"target {TARGET_S:.0f} s: ratio {row['first_s'] / TARGET_S:.2f}; previous export (downloads only, no SQLite) "
        f"{row['previous_s']:.1f} s: ratio {row['first_s'] / row['previous_s']:.2f}; "
        f"byte-identical: {row['identical']}; "
        f"{'ok' if ok else 'MISSED'}"
    )
    print(
        f"{row['db']}: CPU time: export {row['first_cpu']:.1f} s, previous export {row['previous_cpu']:.1f} s "
        f"(ratio {row['first_cpu'] / row['previous_cpu']:.2f}); load average {row['load']:.1f} on {row['cores']} cores"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--systems", type=int, default=500)
    parser.add_argument("--datasets", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=20, help="IRT bootstrap resamples when seeding")
    args = parser.parse_args(argv)
    for name, low, high in (("systems", 6, 10_000), ("datasets", 1, 50), ("prompts", 10, 10_000)):
        if not low <= getattr(args, name) <= high:
            parser.error(f"--{name} must be within {low}..{high}")
    if not 1 <= args.ratings <= 10_000_000 or not 1 <= args.bootstrap <= 1000:
        parser.error("--ratings 1..10,000,000, --bootstrap 1..1000")
    rows = []
    for kind in ("sqlite", "postgres") if args.db == "both" else (args.db,):
        with tempfile.TemporaryDirectory(prefix=f"bench-snapshot-{kind}-") as folder:
            rows.append(bench(kind, args, Path(folder)))
    for row in rows:
        report(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
