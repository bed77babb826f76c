"""Per-job events as logging records (issue 40, item 3): a JSON formatter configured in
LOGGING sees them with the job's fields; a failure is one ERROR record with its
traceback; the classic stdout lines stay by default, and --log-level=error (or a
supervisor's log_level) keeps the FAILED ones only."""
import json
import re
import signal

import pytest

from horizon.configuration.supervisor import parse_supervisor
from queueing.models import FailedJob
from tests.conftest import subprocess_env
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ISO_WITH_ZONE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d")


def json_logging_env(tmp_path, log_file):
    """A settings module that sends the queueing.job records, as JSON, to a file."""
    (tmp_path / "json_log_settings.py").write_text(
        "from tests.settings import *  # noqa\n"
        "LOGGING = {'version': 1, 'disable_existing_loggers': False,\n"
        "  'formatters': {'json': {'()': 'queueing.observability.log_json.JsonFormatter'}},\n"
        f"  'handlers': {{'file': {{'class': 'logging.FileHandler', 'filename': {str(log_file)!r},\n"
        "                          'formatter': 'json'}},\n"
        "  'loggers': {'queueing.job': {'handlers': ['file'], 'level': 'INFO',\n"
        "                               'propagate': False}}}\n")
    return {"DJANGO_SETTINGS_MODULE": "json_log_settings",
            "PYTHONPATH": f"{tmp_path}:{subprocess_env().get('PYTHONPATH', '')}"}


def records(log_file):
    if not log_file.exists():
        return []
    return [json.loads(line) for line in log_file.read_text().splitlines() if line]


def test_a_failing_job_is_one_error_record_with_its_fields(spawn_worker, tmp_path):
    log_file = tmp_path / "jobs.jsonl"
    worker = spawn_worker("--queue=default", "--name=logged", env=json_logging_env(
        tmp_path, log_file))
    ok = jobs.record.delay("fine")
    bad = jobs.explode.delay("logged")
    wait_until(lambda: FailedJob.objects.filter(uuid=bad).exists(), message="failure")
    wait_until(lambda: any(r["status"] == "DONE" for r in records(log_file)),
               message="DONE record")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    written = records(log_file)
    errors = [r for r in written if r["level"] == "ERROR"]
    assert len(errors) == 1, written
    error = errors[0]
    assert error["logger"] == "queueing.job" and error["status"] == "FAILED"
    assert error["job_id"] == bad and error["job_name"] == "tests.testapp.jobs.explode"
    assert error["attempt"] == 1 and error["queue"] == "default"
    assert error["worker"].endswith(f":{worker.pid}:logged")
    assert "Traceback" in error["exception"] and "RuntimeError: boom logged" in error["exception"]
    assert ISO_WITH_ZONE.fullmatch(error["time"]), error["time"]
    done = [r for r in written if r["job_id"] == ok]
    assert [(r["level"], r["status"]) for r in done] == [("INFO", "RUNNING"), ("INFO", "DONE")]
    # the classic lines are still on stdout, with an ISO stamp
    output = worker.output()
    assert re.search(ISO_WITH_ZONE.pattern + rf" FAILED\s+tests\.testapp\.jobs\.explode "
                     rf"{bad} RuntimeError: boom logged", output), output
    assert "DONE" in output and "Traceback" not in output


def test_log_level_error_keeps_the_failed_lines_only(spawn_worker):
    worker = spawn_worker("--queue=default", "--log-level=error")
    jobs.record.delay("quiet")
    bad = jobs.explode.delay("loud")
    wait_until(lambda: FailedJob.objects.filter(uuid=bad).exists(), message="failure")
    wait_until(lambda: "FAILED" in worker.output(), message="FAILED line")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    output = worker.output()
    assert "RUNNING" not in output and "DONE" not in output
    assert len(re.findall(r" FAILED ", output)) == 1 and bad in output


def test_a_supervisor_passes_its_log_level_to_its_workers():
    config = parse_supervisor("quiet-ops", {"queues": ["default"], "log_level": "error"}, "redis")
    assert "--log-level=error" in config.worker_arguments()
    assert not any(a.startswith("--log-level") for a in parse_supervisor(
        "chatty", {"queues": ["default"]}, "redis").worker_arguments())
    from horizon.configuration.values import HorizonConfigError
    with pytest.raises(HorizonConfigError, match="log_level must be one of"):
        parse_supervisor("bad", {"queues": ["default"], "log_level": "loud"}, "redis")


LEAKS = "password=hunter2 Authorization: Bearer abc123tokenxyz789 redis://:s3cr3tpw@cache:6379/0"


def test_the_json_formatter_masks_a_failures_traceback_as_the_stdout_line_does(
        spawn_worker, tmp_path):
    """Issue 48: the JSON record's ``exception`` held password=hunter2, a Bearer token and
    a Redis password, while the stdout line for the same failure was masked."""
    log_file = tmp_path / "jobs.jsonl"
    worker = spawn_worker("--queue=default", env=json_logging_env(tmp_path, log_file))
    bad = jobs.explode.delay(LEAKS)
    wait_until(lambda: FailedJob.objects.filter(uuid=bad).exists(), message="failure")
    wait_until(lambda: any(r["level"] == "ERROR" for r in records(log_file)),
               message="the ERROR record")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0
    [error] = [r for r in records(log_file) if r["level"] == "ERROR"]
    output = worker.output()
    assert "FAILED" in output and "password=********" in output  # the stdout line masks
    for secret in ("hunter2", "abc123tokenxyz789", "s3cr3tpw"):
        assert secret not in output
        assert secret not in json.dumps(error), error
    assert "Traceback" in error["exception"] and "password=********" in error["exception"]


def test_every_formatter_the_product_ships_masks_messages_and_tracebacks():
    """The JSON formatter (with and without a cached traceback) and the redacting one."""
    import logging

    from queueing.observability.log_json import JsonFormatter
    from queueing.observability.redaction import RedactingFormatter

    try:
        raise RuntimeError(LEAKS)
    except RuntimeError:
        record = logging.getLogger("t").makeRecord(
            "t", logging.ERROR, __file__, 1, "failed: %s", (LEAKS,), __import__("sys").exc_info(),
            extra={"job_name": "x", "audit_detail": LEAKS})
    for formatter in (JsonFormatter(), RedactingFormatter("%(message)s")):
        for _ in range(2):  # the second time with the traceback cached on the record
            text = formatter.format(record)
            for secret in ("hunter2", "abc123tokenxyz789", "s3cr3tpw"):
                assert secret not in text, (formatter, text)
    record.exc_text = f"Traceback ...\nRuntimeError: {LEAKS}"  # cached by another handler
    record.exc_info = None
    assert "hunter2" not in JsonFormatter().format(record)
