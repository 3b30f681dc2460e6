"""Benchmark: the toolkit against the original ChatEval per-line code, whole processes, on the same inputs.

In one run, on one synthetic set of N responses (default 100,000) with two references each, a gensim KeyedVectors
file and a log-likelihood file, this times and measures the peak memory (RSS, from the kernel's rusage of each
child process) of:

- `chateval evaluate --json` in compatibility mode (`--compat chateval-2019`) and in the default mode, one process
  per metric and one for all metrics;
- the original ChatEval code (scripts/original_chateval.py: whitespace split, NLTK sentence BLEU, summed word
  vectors, one line at a time) as a separate process, per metric and for all metrics, reading the same data as
  plain files, as the original did.

It prints a table with each process's wall and CPU time, peak RSS, its speed-up over the original process for
the same metrics (wall time; "CPU x": the same in CPU time, steadier on a shared machine) and its memory relative
to it, and checks that compatibility mode gives the original's values (corpus and per prompt) within 1e-9.
Default mode is a different definition (13a tokens, sacrebleu smoothing) and is timed only.

The vectors' checksum and the dataset's parsed prompts are cached after a user's first run; both caches are
filled before timing (`--cold-dataset` empties the dataset's before each toolkit process, which then validates the
prompts file again). With `--json`, each process's figures are printed as one JSON line as soon as it ends, then
a summary line.

Usage: python scripts/bench_metrics.py [--size N] [--dims D] [--repeat R] [--keep DIR] [--runs each|all|both]
       [--cold-dataset] [--json]
Target (issue 12): all metrics at least 5x faster than the original code with at most 1.5x its peak memory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["distinct-1", "distinct-2", "avg-length", "bleu-2", "embedding-average", "perplexity"]
ALL = "all metrics"
TOLERANCE = 1e-9
SPEED_TARGET, MEMORY_TARGET = 5.0, 1.5


def sentence(rng: np.random.Generator, vocab: list[str]) -> str:
    """Zipf-distributed words, median ~9, a capitalised first word, sometimes a double space (which the
    original's split(" ") counts as an empty token) and a final punctuation token."""
    length = int(np.clip(rng.lognormal(2.2, 0.55), 1, 60))
    ranks = np.minimum(rng.zipf(1.3, size=length), len(vocab)) - 1
    words = [vocab[r] for r in ranks]
    words[0] = words[0].capitalize()
    separator = "  " if rng.random() < 0.02 else " "
    return separator.join(words) + str(rng.choice([" .", " ?", " !", ""]))


def build_inputs(folder: Path, size: int, dims: int, seed: int = 13) -> dict[str, Path]:
    from gensim.models import KeyedVectors

    from evaluation.dataset import sha256_file

    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30_000)]
    dataset = folder / "synthetic"
    dataset.mkdir()
    references = [[sentence(rng, vocab), sentence(rng, vocab)] for _ in range(size)]
    with (dataset / "prompts.jsonl").open("w") as handle:
        for i, refs in enumerate(references):
            context = [{"role": "user", "content": sentence(rng, vocab)}]
            handle.write(json.dumps({"id": str(i), "context": context, "references": refs}) + "\n")
    manifest = dict(name="synthetic", version="1", description="", source="", license="", citation="")
    manifest["prompts_sha256"] = sha256_file(dataset / "prompts.jsonl")
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    paths = {"dataset": dataset}
    for k in (0, 1):  # the original code read one plain text file per reference column
        paths[f"references_{k + 1}"] = folder / f"references_{k + 1}.txt"
        paths[f"references_{k + 1}"].write_text("\n".join(refs[k] for refs in references) + "\n")
    paths["responses"] = folder / "responses.txt"
    paths["responses"].write_text("\n".join(sentence(rng, vocab) for _ in range(size)) + "\n")
    paths["loglik"] = folder / "loglik.jsonl"
    with paths["loglik"].open("w") as handle:
        for i in range(size):
            tokens = int(rng.integers(1, 30))
            record = {"prompt_id": str(i), "logprob": -float(rng.gamma(4, 0.8)) * tokens, "tokens": tokens}
            handle.write(json.dumps(record) + "\n")
    # vectors for 80% of the (lower-case) vocabulary, the rest out of vocabulary, in gensim's mmap format
    keyed = KeyedVectors(vector_size=dims)
    known = vocab[: int(len(vocab) * 0.8)]
    keyed.add_vectors(known, rng.standard_normal((len(known), dims)).astype(np.float32))
    paths["vectors"] = folder / "vectors.kv"
    keyed.save(str(paths["vectors"]), separately=["vectors"])
    return paths


@dataclass
class Measured:
    wall: float
    cpu: float
    peak_mb: float
    output: dict


# Linux keeps a process's peak RSS across exec, so a child forked from this (large) process would report this
# process's size: each measured process is started by a small launcher and its figures come from wait4 there.
LAUNCHER = """
import json, os, sys, time
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    actions = [(os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
    started = time.perf_counter()
    pid = os.posix_spawn(sys.argv[3], sys.argv[3:], os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "wall": wall, "cpu": cpu, "kb": usage.ru_maxrss}))
"""


def run_process(command: list[str], env: dict[str, str], scratch: Path) -> Measured:
    """Run a whole process, stdout to a file; wall time, CPU time and peak RSS from its own rusage."""
    out_path, err_path = scratch / "stdout.json", scratch / "stderr.txt"
    launcher = [sys.executable, "-c", LAUNCHER, str(out_path), str(err_path), *command]
    figures = json.loads(subprocess.run(launcher, env=env, cwd=ROOT, check=True, capture_output=True).stdout)
    if figures["code"] != 0:
        raise SystemExit(f"{' '.join(command)} failed ({figures['code']}):\n{err_path.read_text()[-3000:]}")
    with out_path.open() as handle:
        output = json.load(handle)
    return Measured(figures["wall"], figures["cpu"], figures["kb"] / 1024, output)


def best_of(repeat: int, command: list[str], env: dict[str, str], scratch: Path) -> Measured:
    """The median wall time of `repeat` runs (and that run's figures)."""
    runs = sorted((run_process(command, env, scratch) for _ in range(repeat)), key=lambda m: m.wall)
    return runs[len(runs) // 2] if repeat > 1 else runs[0]


def toolkit_values(output: dict) -> dict[str, list]:
    return {m["metric"]: [m["corpus"], *m["per_prompt"]] for m in output["metrics"]}


def original_values(output: dict) -> dict[str, list]:
    return {name: [v["corpus"], *v["per_prompt"]] for name, v in output.items()}


def max_difference(ours: list, theirs: list) -> float:
    """Largest difference, relative for values above 1 (perplexities reach the thousands)."""
    if len(ours) != len(theirs):
        return math.inf
    worst = 0.0
    for a, b in zip(ours, theirs, strict=True):
        if (a is None) != (b is None):
            return math.inf
        if a is not None:
            worst = max(worst, abs(a - b) / max(1.0, abs(b)))
    return worst


class Output:
    """The table for people, or (--json) one JSON object per line, each written as soon as it is known."""

    def __init__(self, as_json: bool):
        self.as_json = as_json

    def text(self, line: str) -> None:
        if not self.as_json:
            print(line, flush=True)

    def row(self, line: str, **fields) -> None:
        self.text(line)
        self.json(**fields)

    def json(self, **fields) -> None:
        if self.as_json:
            print(json.dumps(fields), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="responses (prompts)")
    parser.add_argument("--dims", type=int, default=300, help="word vector dimensions")
    parser.add_argument("--repeat", type=int, default=1, help="runs per process; the median is reported")
    parser.add_argument("--keep", type=Path, help="generate the inputs here and keep them (default: a temp dir)")
    parser.add_argument(
        "--runs", choices=("each", "all", "both"), default="both", help="per-metric processes, all-metric ones, or both"
    )
    parser.add_argument("--cold-dataset", action="store_true", help="no parsed-dataset cache for the toolkit")
    parser.add_argument("--json", action="store_true", help="one JSON line per process as it ends, then a summary")
    args = parser.parse_args()
    if not 1 <= args.size <= 10_000_000 or not 1 <= args.dims <= 1000 or not 1 <= args.repeat <= 20:
        parser.error("--size 1..10,000,000, --dims 1..1000, --repeat 1..20")
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        folder = args.keep or scratch / "inputs"
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        paths = build_inputs(folder, args.size, args.dims)
        env = {**os.environ, "CHATEVAL_HOME": str(scratch / "home"), "PYTHONHASHSEED": "0"}
        # The vectors' sha256 (part of the signature) is cached after a user's first run; cache it here too.
        os.environ["CHATEVAL_HOME"] = env["CHATEVAL_HOME"]
        from evaluation.dataset import load_dataset_dir
        from evaluation.embeddings import checksum

        checksum(paths["vectors"])
        load_dataset_dir(paths["dataset"])  # keeps the validated prompts, as a user's first run does
        emit = Output(args.json)
        emit.text(
            f"generated {args.size:,} responses, 2 references each, {args.dims}-d vectors "
            f"in {time.perf_counter() - started:.1f} s; each row below is one whole process"
        )
        dataset_cache = Path(env["CHATEVAL_HOME"]) / "cache" / "prompts"
        chateval = str(Path(sys.executable).parent / "chateval")
        toolkit = [chateval, "evaluate", "--dataset", str(paths["dataset"]), "--responses", str(paths["responses"])]
        toolkit += ["--json"]
        original = [sys.executable, str(ROOT / "scripts" / "original_chateval.py")]
        original += ["--responses", str(paths["responses"]), "--vectors", str(paths["vectors"])]
        original += ["--loglik", str(paths["loglik"]), "--references", str(paths["references_1"])]
        original += [str(paths["references_2"])]
        # as a user would run it: the toolkit gets the vectors and log-likelihoods only where a metric needs them
        needs = {"embedding-average": ["--embeddings", str(paths["vectors"])]}
        needs["perplexity"] = ["--loglik", str(paths["loglik"])]
        runs = [(name, [name]) for name in METRICS] if args.runs != "all" else []
        runs += [(ALL, METRICS)] if args.runs != "each" else []
        header = f"{'process':<10}{'metrics':<19}{'wall s':>8}{'CPU s':>8}{'peak MB':>9}{'speed-up':>10}"
        emit.text(f"\n{header}{'CPU x':>8}{'memory':>8}{'max |diff|':>12}")
        worst, verdicts = 0.0, []
        for label, metrics in runs:
            chosen = ["--metrics", ",".join(metrics), *(arg for name in metrics for arg in needs.get(name, []))]
            base = best_of(args.repeat, [*original, "--metrics", ",".join(metrics)], env, scratch)
            theirs = original_values(base.output)
            emit.row(
                f"{'original':<10}{label:<19}{base.wall:>8.2f}{base.cpu:>8.2f}{base.peak_mb:>9.0f}",
                process="original", metrics=label, wall_s=base.wall, cpu_s=base.cpu, peak_mb=base.peak_mb,
            )  # fmt: skip
            for mode, extra in (("compat", ["--compat", "chateval-2019"]), ("default", [])):
                if args.cold_dataset:
                    shutil.rmtree(dataset_cache, ignore_errors=True)
                ours = best_of(args.repeat, toolkit + chosen + extra, env, scratch)
                speed, memory = base.wall / ours.wall, ours.peak_mb / base.peak_mb
                cpu_speed = base.cpu / ours.cpu
                diff_text, diff = "", None
                if mode == "compat":
                    values = toolkit_values(ours.output)
                    diff = max(max_difference(values[name], theirs[name]) for name in metrics)
                    worst = max(worst, diff)
                    diff_text = f"{diff:>12.1e}"
                emit.row(
                    f"{mode:<10}{label:<19}{ours.wall:>8.2f}{ours.cpu:>8.2f}{ours.peak_mb:>9.0f}"
                    f"{speed:>9.1f}x{cpu_speed:>7.1f}x{memory:>7.2f}x{diff_text}",
                    process=mode, metrics=label, wall_s=ours.wall, cpu_s=ours.cpu, peak_mb=ours.peak_mb,
                    speed_up=speed, cpu_speed_up=cpu_speed, memory_ratio=memory, max_difference=diff,
                )  # fmt: skip
                if label == ALL:
                    verdicts.append((mode, speed, cpu_speed, memory))
        emit.text("")
        ok = worst <= TOLERANCE
        emit.text(
            f"compat values equal to the original code's within {TOLERANCE:g}: {'yes' if ok else 'NO'} ({worst:.1e})"
        )
        summary: dict = {"summary": True, "values_equal": ok, "max_difference": worst, "targets": {}}
        for mode, speed, cpu_speed, memory in verdicts:
            met = speed >= SPEED_TARGET and memory <= MEMORY_TARGET
            summary["targets"][mode] = met
            emit.text(
                f"{mode} mode, all metrics: {speed:.1f}x faster ({cpu_speed:.1f}x in CPU time), "
                f"{memory:.2f}x the peak memory "
                f"(target >= {SPEED_TARGET:g}x, <= {MEMORY_TARGET:g}x): {'met' if met else 'NOT met'}"
            )
        load = os.getloadavg()
        emit.text(f"load average during the run: {', '.join(f'{v:.1f}' for v in load)} ({os.cpu_count()} CPUs)")
        emit.json(**summary, load_average=list(load), cpus=os.cpu_count(), cold_dataset=args.cold_dataset)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
