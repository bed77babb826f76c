"""This project against Huey, run by run, from tagged runs of the shared peer harness.

    .venv/bin/python bench/peer_tags.py TAG [TAG ...] [--results DIR]

The harness (`BENCH_TAG=TAG SYSTEMS="ours huey" run_all.sh`) writes results/ours-TAG.json
and results/huey-TAG.json; its report ignores tagged files. For each tag and each worker
count this prints the steady rate (jobs/s, median of the runs, each run in brackets), the
worker CPU ms per job (every worker process and its children, from the first job to the
last, per job), and ours / Huey's for both: the machine is shared, so only figures of
one tag (one invocation, minutes apart) compare, and CPU per job is the steadier one.
"""
import argparse
import json
import statistics
from pathlib import Path

DEFAULT_RESULTS = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-peers" / \
    "results"


def throughput(path: Path) -> dict[int, tuple[float, list[float], float, list[float]]]:
    """{workers: (median jobs/s, each run's, median CPU ms/job, each run's)}, ok runs only."""
    data = json.loads(path.read_text())
    cases = {}
    for case in data["cases"]:
        runs = [r for r in case["runs"] if r.get("ok")]
        if case["case"].get("kind") != "throughput" or not runs:
            continue
        rates = [r["rate_from_first"] for r in runs]
        cpu = [r["worker_cpu_ms_per_job"] for r in runs]
        cases[case["case"].get("workers", 1)] = (statistics.median(rates), rates,
                                                 statistics.median(cpu), cpu)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tags", nargs="+")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args()
    print("| run | workers | ours jobs/s | Huey jobs/s | ratio | ours CPU ms/job "
          "| Huey CPU ms/job | CPU ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for tag in args.tags:
        ours = throughput(args.results / f"ours-{tag}.json")
        huey = throughput(args.results / f"huey-{tag}.json")
        for workers in sorted(set(ours) & set(huey)):
            o, h = ours[workers], huey[workers]
            print(f"| {tag} | {workers} "
                  f"| {o[0]:,.0f} ({', '.join(f'{r:,.0f}' for r in o[1])}) | {h[0]:,.0f} "
                  f"| {o[0] / h[0]:.2f} "
                  f"| {o[2]:.3f} ({', '.join(f'{c:.3f}' for c in o[3])}) | {h[2]:.3f} "
                  f"| {o[2] / h[2]:.2f} |")


if __name__ == "__main__":
    main()
