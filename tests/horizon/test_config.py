"""settings.HORIZON's top level: a bad value is a check error, never a crash."""
from horizon.configuration.settings import settings_errors


def test_a_bad_snapshot_interval_is_reported_not_raised():
    """It was read with float() unchecked: None or "1m" raised TypeError/ValueError out
    of `manage.py check` instead of naming the key (found by issue 49's table test).
    Retired since (a constant, 60 s), it is still read, and checked, until 0.4."""
    for value in (None, "1m", -1):
        errors = settings_errors({"snapshot_interval": value})
        assert [e.check_id for e in errors] == ["horizon.E001"], errors
        assert "snapshot_interval" in str(errors[0])
    assert settings_errors({"snapshot_interval": 0.5}) == []
