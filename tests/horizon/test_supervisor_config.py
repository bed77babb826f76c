"""A supervisor block's renamed key (issue 49): Laravel's "queue" reads as "queues",
the word QUEUE's connections use for a list of queues, with horizon.W001 until 0.4."""
import pytest
from django.core.checks import run_checks

from horizon.configuration.settings import parse, settings_notes
from horizon.configuration.supervisor import parse_supervisor


def test_queue_reads_as_queues_and_warns():
    new = parse_supervisor("s", {"queues": ["default"]}, "redis")
    with pytest.warns(DeprecationWarning, match=r"\['queue'\] is renamed .*\['queues'\]"):
        old = parse_supervisor("s", {"queue": ["default"]}, "redis")
    assert old == new and old.queues == ("default",)
    with pytest.warns(DeprecationWarning, match=r"\['queue'\] is renamed"):
        assert parse_supervisor("s", {"queue": "default"}, "redis").queues == ("default",)


def test_both_names_at_once_is_still_a_mistake(settings):
    with pytest.raises(ValueError, match="both 'queue' and 'queues'"):
        parse_supervisor("s", {"queue": ["default"], "queues": ["default"]}, "redis")


def test_the_old_name_in_defaults_or_a_block_is_named_by_manage_check(settings):
    settings.HORIZON = {**settings.HORIZON, "supervisors": {"s": {"queue": ["default"]}}}
    assert settings_notes(settings.HORIZON) == [
        "HORIZON['supervisors']['s']['queue'] is renamed HORIZON['supervisors']['s']"
        "['queues']: write that instead (the old name stops working in 0.4)"]
    with pytest.warns(DeprecationWarning):  # the checks read the settings too
        found = [e.id for e in run_checks() if e.id.startswith("horizon.W")]
    assert found == ["horizon.W001"]
    with pytest.warns(DeprecationWarning):
        assert parse(settings.HORIZON).supervisors[0].queues == ("default",)
