"""Ratios of this project to its peers, from one run of the shared peer harness.

    .venv/bin/python bench/peer_ratios.py [RESULTS_DIR]

Reads the harness's results/*.json (one file per system, written by `make bench-peers`),
takes each case's median steady rate of 3 runs, and prints, for 1 and 2 worker
processes, our rate, each peer's best case, and ours / theirs; then latency p50/p99.
Figures from different runs are never mixed: the machines are noisy, so only ratios
measured in the same run mean anything.
"""
import json
import statistics
import sys
from pathlib import Path

DEFAULT_RESULTS = Path(__file__).resolve().parent.parent.parent / "shared" / "bench-peers" / \
    "results"


def load(results: Path) -> dict[str, dict]:
    systems = {}
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "cases" in data:
            systems[data.get("system", path.stem)] = data
    return systems


def summarise(system: dict) -> tuple[dict[int, tuple[float, str]], tuple[float, float] | None]:
    """({processes: (best median steady jobs/s, case name)}, (p50, p99) of the best latency)."""
    throughput: dict[int, tuple[float, str]] = {}
    latency = None
    for case in system["cases"]:
        spec, runs = case["case"], [r for r in case["runs"] if r.get("ok")]
        if not runs:
            continue
        if spec.get("kind") == "throughput":
            rate = statistics.median(r["rate_from_first"] for r in runs)
            workers = spec.get("workers", 1)
            if rate > throughput.get(workers, (0.0, ""))[0]:
                throughput[workers] = (rate, spec["name"])
        elif spec.get("kind") == "latency":
            p99 = statistics.median(r["p99_ms"] for r in runs)
            p50 = statistics.median(r["p50_ms"] for r in runs)
            if latency is None or p99 < latency[1]:
                latency = (p50, p99)
    return throughput, latency


def main() -> int:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_RESULTS
    systems = {name: summarise(data) for name, data in load(results).items()}
    if "ours" not in systems:
        print(f"no results for this project in {results}; run `make bench-peers` first")
        return 1
    ours_rate, ours_latency = systems.pop("ours")
    for workers in (1, 2):
        mine = ours_rate.get(workers, (0.0, ""))[0]
        print(f"{workers} process{'es' if workers > 1 else ''}: this project {mine:,.0f} jobs/s")
        for name, (rates, _) in sorted(systems.items()):
            if workers in rates:
                theirs, case = rates[workers]
                print(f"  vs {name:<9} {theirs:>8,.0f} jobs/s ({case}): {mine / theirs:.2f}x")
    if ours_latency:
        print(f"latency p50/p99: this project {ours_latency[0]:.1f} / {ours_latency[1]:.1f} ms")
        for name, (_, lat) in sorted(systems.items()):
            if lat:
                print(f"  {name:<9} {lat[0]:.1f} / {lat[1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
