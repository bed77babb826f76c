"""docs/workflows.md's example, run on a real worker as written: its jobs are declared by
tests/testapp/jobs.py from the doc's ``doc-example`` block, and its dispatch block (marked
``doc-dispatch``) is run here with photo ids and an album id bound."""
import re
from pathlib import Path

import pytest

from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
DOC = Path(__file__).resolve().parents[3] / "docs" / "workflows.md"


def test_the_workflow_example_runs_as_written(spawn_worker):
    [dispatch] = re.findall(r"<!-- doc-dispatch -->\s*```python\n(.*?)```", DOC.read_text(),
                            re.S)
    scope = {**vars(jobs), "photo_ids": [1, 2, 3], "album_id": 7}
    exec(compile(dispatch, str(DOC), "exec"), scope)
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(timeout=120) == 0, worker.output()
    done = [line for line in worker.output().splitlines() if " DONE " in f" {line} "]
    ran = {name: sum(f"tests.testapp.jobs.{name}" in line or f" {name} " in line
                     for line in done) for name in ("resize", "summarise", "publish")}
    # a group of 3, a chord of 3 and its callback, a chain of 1 -> group of 3 -> publish
    assert ran == {"resize": 10, "summarise": 1, "publish": 1}, worker.output()
