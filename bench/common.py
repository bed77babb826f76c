"""Shared bench helpers: Django setup, percentiles, a results line."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (as the peer harness reports)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, int(-(-pct / 100 * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]
