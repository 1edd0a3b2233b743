"""Run every fuzz target for a time budget and summarise: ``python fuzz/run.py [--seconds N] [targets]``.

Each target runs in its own process (libFuzzer through atheris) on a corpus
seeded by seeds.py. Findings (crashes, uncaught non-N5msCodecsError exceptions,
timeouts, memory blow-ups) are saved under ``--artifacts`` and make the run
exit non-zero; turn each into a file under fuzz/regressions/<target>/.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def parse_stats(log):
    """Executions, exec/s, edges covered and edges instrumented from a libFuzzer log."""
    def last(pattern, default=0):
        found = re.findall(pattern, log)
        return int(found[-1]) if found else default

    return {
        "executions": last(r"stat::number_of_executed_units: (\d+)"),
        "exec_per_s": last(r"stat::average_exec_per_sec: +(\d+)"),
        "covered": last(r"cov: (\d+)"),
        "features": last(r"ft: (\d+)"),
        "instrumented": sum(int(n) for n in re.findall(r"\((\d+) inline 8-bit counters\)", log)),
        "corpus": last(r"corp: (\d+)/"),
    }


def asan_environment():
    """Child environment for kernels built with -fsanitize=address: the Python binary is not
    instrumented, so atheris' ASan+libFuzzer runtime is preloaded (it also supplies the
    coverage callbacks the kernels were compiled against)."""
    import atheris

    env = dict(os.environ)
    env["LD_PRELOAD"] = os.path.join(atheris.path(), "asan_with_fuzzer.so")
    # CPython's own allocations at exit are reported as leaks; they are not ours
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1")
    return env


def corpus_line_coverage(target, corpus, workdir):
    """Percent of the lines of the target's decode-path modules that the final corpus runs."""
    import targets

    package = Path(targets.__file__).resolve().parents[1] / "n5mscodecs"
    include = ",".join(str(package / f"{module}.py") for module in targets.DECODE_MODULES[target])
    data_file = Path(workdir, f"{target}.coverage")
    subprocess.run([sys.executable, "-m", "coverage", "run", f"--data-file={data_file}", f"--include={include}",
                    str(HERE / "replay.py"), target, str(corpus)], check=True, capture_output=True)
    report = subprocess.run([sys.executable, "-m", "coverage", "report", f"--data-file={data_file}",
                             "--format=total"], check=True, capture_output=True, text=True)
    return float(report.stdout.strip())


def run_target(target, seconds, workdir, artifacts, seed):
    import seeds

    corpus = Path(workdir, target)
    n_seeds = seeds.write_seeds(target, corpus)
    artifacts.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, str(HERE / "fuzz.py"), target, str(corpus),
        f"-max_total_time={seconds}", "-print_final_stats=1",
        "-timeout=10",  # an input taking 10 s counts as a hang
        "-rss_limit_mb=3072", "-malloc_limit_mb=1024",  # unbounded allocation is a finding
        f"-artifact_prefix={artifacts}/{target}-", f"-seed={seed}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 300, check=False)
    log = result.stdout + result.stderr
    stats = parse_stats(log)
    stats["line_coverage"] = corpus_line_coverage(target, corpus, workdir)
    stats.update(target=target, seeds=n_seeds, returncode=result.returncode,
                 findings=sorted(p.name for p in artifacts.glob(f"{target}-*")))
    if result.returncode:
        print(log[-6000:], file=sys.stderr)
    return stats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="default: all")
    parser.add_argument("--seconds", type=int, default=30, help="budget per target")
    parser.add_argument("--budget", type=int, default=None,
                        help="wall-time budget for all targets: each gets budget * jobs / targets seconds "
                             "(at least 5; overrides --seconds)")
    parser.add_argument("--artifacts", type=Path, default=Path("fuzz-artifacts"))
    parser.add_argument("--seed", type=int, default=0,
                        help="libFuzzer seed; 0 (default) draws one, CI fixes it so a run can be repeated")
    parser.add_argument("--asan", action="store_true", help="the kernels are built with ASan")
    parser.add_argument("--jobs", type=int, default=1,
                        help="targets fuzzed at once (each libFuzzer process is single-threaded)")
    args = parser.parse_args(argv)
    if args.asan and "asan_with_fuzzer" not in os.environ.get("LD_PRELOAD", ""):
        # the kernels cannot even be imported without the runtime: restart under it
        os.execve(sys.executable, [sys.executable, *sys.argv], asan_environment())
    import targets

    unknown = set(args.targets) - set(targets.TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; known: {sorted(targets.TARGETS)}")

    chosen = args.targets or list(targets.TARGETS)
    if args.budget is not None:
        args.seconds = max(5, args.budget * max(1, args.jobs) // len(chosen))
    print(f"fuzz: {len(chosen)} targets, {args.seconds} s each, {max(1, args.jobs)} at a time", flush=True)

    def fuzz(target):
        row = run_target(target, args.seconds, workdir, args.artifacts.resolve(), args.seed)
        print(f"{target}: {row['executions']} executions, cov {row['covered']}, "
              f"returncode {row['returncode']}", flush=True)
        return row

    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(fuzz, chosen))
    print("\n| target | seconds | seeds | executions | exec/s | edges covered | features | corpus "
          "| decode-path line coverage |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['target']} | {args.seconds} | {r['seeds']} | {r['executions']:,} | {r['exec_per_s']:,} "
              f"| {r['covered']:,} | {r['features']:,} | {r['corpus']} | {r['line_coverage']:.0f}% |")
    instrumented = max((r["instrumented"] for r in rows), default=0)
    print(f"\ninstrumented edges (Python + native, all loaded modules): {instrumented:,}")
    failed = [r for r in rows if r["returncode"] or r["findings"]]
    for r in failed:
        print(f"FINDING in {r['target']}: returncode {r['returncode']}, artifacts {r['findings']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
