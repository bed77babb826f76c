"""settings.HORIZON's tuning knobs retired in 0.3 (issue 49, "less to learn"): each is
gone from the reference and the count, yet a project that still writes one keeps its
value until 0.4, with a DeprecationWarning and a horizon.W001 check warning saying what
to do instead."""
import pytest
from django.core.checks import run_checks

from horizon.configuration import reference
from horizon.configuration.settings import (
    HorizonConfigError,
    parse,
    settings_errors,
    settings_notes,
)

RETIRED = {"snapshot_interval": 30,
           "trim": {"attempts_max": 50, "database_control": 60, "prometheus": 120},
           "batches": {"prune_hours": 2, "prune_unfinished_hours": None, "prune_every": 60},
           "notifications": {"cooldown": 30, "from": "ops@example.com"}}


def test_the_new_shape_reads_without_a_note_and_with_the_constants():
    parsed = parse({"trim": {"completed": 30}})
    assert (parsed.snapshot_interval, parsed.attempts_max, parsed.batch_prune_every,
            parsed.trim_database_control_minutes, parsed.trim_prometheus_minutes,
            parsed.notifications["cooldown"], parsed.notifications["from"]) == (
        60, 110_000, 600, 1440, 10080, 300, None)
    assert (parsed.batch_prune_hours, parsed.batch_prune_unfinished_hours) == (24, 168)
    assert settings_notes({"trim": {"completed": 5, "batches": 120}}) == []


def test_each_retired_key_still_works_with_a_warning_naming_what_to_do():
    with pytest.warns(DeprecationWarning) as told:
        parsed = parse(RETIRED)
    assert (parsed.snapshot_interval, parsed.attempts_max, parsed.batch_prune_every,
            parsed.trim_database_control_minutes, parsed.trim_prometheus_minutes,
            parsed.notifications["cooldown"], parsed.notifications["from"]) == (
        30, 50, 60, 60, 120, 30, "ops@example.com")
    assert (parsed.batch_prune_hours, parsed.batch_prune_unfinished_hours) == (2, None)
    said = [str(w.message) for w in told]
    assert len(said) == 7, said
    assert "HORIZON['snapshot_interval'] is retired: metrics are snapshotted every 60 s" \
        in said[0] and "still read until 0.4" in said[0]
    assert any("HORIZON['notifications']['from'] is retired" in s and
               "DEFAULT_FROM_EMAIL" in s for s in said)
    assert any("HORIZON['batches'] is retired: write HORIZON['trim']['batches']" in s
               for s in said)
    assert settings_errors(RETIRED) == []


def test_a_retired_supervisor_key_still_reaches_its_workers_with_a_warning():
    new = parse({"supervisors": {"s": {"queues": ["default"]}}}).supervisors[0]
    assert (new.nice, new.prefetch, new.block_for) == (0, 64, None)
    with pytest.warns(DeprecationWarning) as told:
        old = parse({"supervisors": {"s": {"queues": ["default"], "nice": 5, "prefetch": 4,
                                           "block_for": 1}}}).supervisors[0]
    assert (old.nice, old.prefetch, old.block_for) == (5, 4, 1.0)
    assert {"--prefetch=4", "--block-for=1"} <= set(old.worker_arguments())
    said = " ".join(str(w.message) for w in told)
    for key in ("nice", "prefetch", "block_for"):
        assert f"HORIZON['supervisors']['s'][{key!r}] is retired" in said
    assert "on the connection" in said and "nice" in said
    with pytest.warns(DeprecationWarning), pytest.raises(HorizonConfigError, match="prefetch"):
        parse({"supervisors": {"s": {"queues": ["default"], "prefetch": 0}}})


def test_manage_check_names_a_retired_key(settings):
    settings.HORIZON = {**settings.HORIZON, "notifications": {"cooldown": 60}}
    with pytest.warns(DeprecationWarning, match="cooldown"):
        found = [e for e in run_checks() if e.id == "horizon.W001"]
    assert len(found) == 1 and "['cooldown'] is retired" in found[0].msg


def test_the_reference_lists_each_retired_key_and_does_not_count_it():
    text = reference.render()
    assert "## Retired in 0.3" in text
    for key in ("snapshot_interval", "attempts_max", "batches", "cooldown", "nice",
                "prefetch", "migration_batch_size", "replica_ack_timeout"):
        assert f"| `{key}` |" in text and key in reference.RETIRED
        assert all(key not in block.table for block in reference.BLOCKS[:4])


def test_log_level_none_is_quiet_and_the_old_quiet_still_works_with_a_warning():
    new = parse({"supervisors": {"s": {"queues": ["default"], "log_level": "none"}}})
    assert "--quiet" in new.supervisors[0].worker_arguments()
    assert new.supervisors[0].log_level == "info"  # no --log-level beside --quiet
    with pytest.warns(DeprecationWarning, match=r"\['quiet'\] is retired: write "
                                                r"'log_level': 'none'"):
        old = parse({"supervisors": {"s": {"queues": ["default"], "quiet": True}}})
    assert old.supervisors[0] == new.supervisors[0]
    errors = settings_errors({"supervisors": {"s": {"queues": ["default"],
                                                    "log_level": "silent"}}})
    assert "log_level must be one of debug, info, warning, error or none" in str(errors[0])


def test_batch_records_are_trimmed_in_minutes_with_the_rest():
    """HORIZON['batches'] (hours) became trim's batches / batches_unfinished (minutes):
    one block, one unit, for everything the master keeps."""
    parsed = parse({"trim": {"batches": 90}})
    assert (parsed.batch_prune_hours, parsed.batch_prune_unfinished_hours) == (1.5, 168)
    with pytest.warns(DeprecationWarning, match=r"\['batches_unfinished'\] is retired"):
        parsed = parse({"trim": {"batches": 90, "batches_unfinished": None}})
    assert (parsed.batch_prune_hours, parsed.batch_prune_unfinished_hours) == (1.5, None)
    with pytest.warns(DeprecationWarning, match=r"HORIZON\['batches'\] is retired"):
        both = parse({"trim": {"batches": 90}, "batches": {"prune_hours": 5}})
    assert both.batch_prune_hours == 1.5  # the new key wins
    errors = settings_errors({"trim": {"batches": -1, "batches_unfinished": "x"}})
    told = " ".join(map(str, errors))
    assert "trim batches must be a number of minutes >= 0" in told
    assert "trim batches_unfinished must be" in told


# -- the second round (issue 49: at most 60 keys) ------------------------------------------
SECOND_ROUND = {"name": "web-9", "environment": "local", "schedule_catch_up": 30,
                "audit_keep": 50, "audit_days": 2,
                "trim": {"completed_max": 7, "failed_max": 8, "monitored_max": 9,
                         "batches_unfinished": 60},
                "notifications": {"mail": ["ops@example.com"], "webhook": "https://h/x"},
                "supervisors": {"s": {"queues": ["default"], "balance_max_shift": 2,
                                      "balance_cooldown": 1, "sleep": 0.5, "rest": 1,
                                      "max_time": 600}}}


def test_the_second_round_reads_as_before_with_a_warning_each(monkeypatch):
    monkeypatch.delenv("HORIZON_NAME", raising=False)
    monkeypatch.delenv("HORIZON_ENV", raising=False)
    with pytest.warns(DeprecationWarning) as told:
        old = parse(SECOND_ROUND)
    assert (old.name, old.environment, old.schedule_catch_up, old.audit_keep,
            old.audit_days) == ("web-9", "local", 30, 50, 2)
    assert (old.completed_max, old.failed_max, old.monitored_max,
            old.batch_prune_unfinished_hours) == (7, 8, 9, 1)
    assert old.notifications == {"mail": ["ops@example.com"], "webhook": "https://h/x",
                                 "cooldown": 300.0, "from": None}
    supervisor = old.supervisors[0]
    assert (supervisor.balance_max_shift, supervisor.balance_cooldown, supervisor.sleep,
            supervisor.rest, supervisor.max_time) == (2, 1, 0.5, 1, 600)
    assert {"--sleep=0.5", "--rest=1", "--max-time=600"} <= set(
        supervisor.worker_arguments())
    said = [str(w.message) for w in told]
    assert len(said) == 15, said
    assert all("is retired" in s and "still read until 0.4" in s for s in said)
    assert any("HORIZON['name'] is retired: the master's name is $HORIZON_NAME" in s
               for s in said)
    assert any("HORIZON['audit_days'] is retired: write HORIZON['trim']['audit']" in s
               for s in said)
    assert any("['notifications']['webhook'] is retired: write HORIZON['notifications'] "
               "as one list" in s for s in said)
    assert settings_errors(SECOND_ROUND) == []


def test_the_new_spellings_give_the_same_settings(monkeypatch):
    monkeypatch.setenv("HORIZON_NAME", "web-9")
    new = parse({"trim": {"audit": 2880},
                 "notifications": ["ops@example.com", "https://h/x"]})
    assert (new.name, new.audit_days, new.audit_keep, new.schedule_catch_up) == (
        "web-9", 2, 10_000, 300)
    assert (new.completed_max, new.failed_max, new.monitored_max) == (10_000, 100_000,
                                                                      100_000)
    assert new.notifications["mail"] == ["ops@example.com"]
    assert new.notifications["webhook"] == "https://h/x"
    supervisor = parse({"supervisors": {"s": {"queues": ["default"]}}}).supervisors[0]
    assert (supervisor.balance_max_shift, supervisor.balance_cooldown, supervisor.sleep,
            supervisor.rest, supervisor.max_time) == (1, 3, 3, 0, 0)
    errors = settings_errors({"trim": {"audit": 60}})
    assert "trim audit must be a number of minutes >= 1440" in str(errors[0])


def test_manage_check_names_each_key_of_the_second_round(settings):
    settings.HORIZON = {**settings.HORIZON, "trim": {"monitored_max": 5},
                        "schedule_catch_up": 10}
    with pytest.warns(DeprecationWarning, match="is retired"):
        found = [e.msg for e in run_checks() if e.id == "horizon.W001"]
    assert len(found) == 2
    assert any("['schedule_catch_up'] is retired" in m for m in found)
    assert any("['trim']['monitored_max'] is retired" in m for m in found)
