"""ConcurrencyLimited's key templates (no worker: the key a running job gets)."""
import json

import pytest

from queueing.dispatching.registry import resolve
from queueing.entries.payload import decode
from queueing.middleware import ConcurrencyLimited
from queueing.middleware.context import RunningJob
from queueing.middleware.funnel import format_key
from tests.testapp import control_jobs


def running(job_function, *args, **kwargs):
    payload = decode(json.dumps({"uuid": "u1", "job": job_function.name, "args": list(args),
                                 "kwargs": kwargs, "attempts": 1}))
    return RunningJob(payload, resolve(job_function.name), connection="redis",
                      queue="default", client=None)


def test_a_template_takes_arguments_by_name_positional_or_keyword():
    assert format_key("tenant:{tenant}", running(control_jobs.funneled, "acme", 1)) == \
        "tenant:acme"
    assert format_key("tenant:{tenant}", running(control_jobs.funneled, tenant="b", index=2)) \
        == "tenant:b"
    assert format_key("plain", running(control_jobs.funneled, "acme", 1)) == "plain"


def test_a_template_naming_a_missing_argument_says_which():
    with pytest.raises(ValueError, match="has no argument 'customer'"):
        format_key("c:{customer}", running(control_jobs.funneled, "acme", 1))


def test_a_callable_key_and_bad_limits():
    limiter = ConcurrencyLimited(lambda tenant, *_, **__: f"t-{tenant}", limit=2)
    assert limiter.key_for(running(control_jobs.funneled, "x", 1)) == "t-x"
    from queueing.errors import InvalidOption
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidOption):
            ConcurrencyLimited("k", limit=bad)
