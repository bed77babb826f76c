"""docs/migrating.md's worked example runs as written (issue 50, item 4): its jobs are
tests/testapp/migrating_example.py, word for word, and its calls run against a worker."""
import inspect
import re
from pathlib import Path

import pytest

from tests.testapp import migrating_example

pytestmark = pytest.mark.django_db(transaction=True)

DOC = Path(__file__).resolve().parents[3] / "docs" / "migrating.md"


def block(marker: str) -> str:
    [code] = re.findall(rf"<!-- {marker} -->\s*```python\n(.*?)```", DOC.read_text(), re.S)
    return code


def test_the_docs_jobs_are_the_suites_example_word_for_word():
    assert block("migrating-jobs") == inspect.getsource(migrating_example)


def test_the_docs_calls_run_against_a_worker(spawn_worker):
    spawn_worker("--queue=default,mail", "--sleep=0")
    scope = vars(migrating_example).copy()
    exec(compile(block("migrating-calls"), str(DOC), "exec"), scope)
    assert scope["receipt"].id
