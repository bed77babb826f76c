"""Reading one value of settings.HORIZON: numbers in range, durations, the trim and
batch blocks, long-wait thresholds and notifications, each with a clear error
(HorizonConfigError, which the system checks report)."""
from __future__ import annotations

from typing import Any

from queueing.settings.problems import Problems
from queueing.settings.renamed import retired


class HorizonConfigError(ValueError):
    def __init__(self, message: str, check_id: str) -> None:
        super().__init__(message)
        self.check_id = check_id


def int_setting(block: str, key: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        within = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise HorizonConfigError(
            f"HORIZON supervisor {block!r}: {key} must be an integer {within}, got {value!r}",
            "horizon.E003")
    return value


def number_setting(block: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise HorizonConfigError(
            f"HORIZON supervisor {block!r}: {key} must be a number >= 0, got {value!r}",
            "horizon.E003")
    return float(value)


# A supervisor's queues may be given as "queue" (Laravel's name) or "queues" (the name a
# QUEUE connection uses for its list): a newcomer writes either.


TRIM_KEYS = {"completed": 60.0, "metrics": 1440.0, "failed": 10080.0,
             "database_control": 1440.0, "prometheus": 10080.0, "monitored": 10080.0}
TRIM_CAPS = {"completed_max": 10_000, "failed_max": 100_000}  # records
MONITORED_MAX = 100_000  # jobs kept per watched tag, whatever their age
AUDIT_MINUTES = 90 * 1440  # audit entries younger than this are never pruned
# HORIZON['trim']'s keys: the validation table, and docs/settings.md's rows. Minutes
# only, as Laravel's trim: the record caps are constants (RETIRED_TRIM).
TRIM_TABLE = {
    "completed": "minutes a completed job is listed (60)",
    "failed": "minutes a failed job is kept (10080: 7 days)",
    "metrics": "minutes of metrics snapshots kept (1440)",
    "monitored": "minutes a watched tag's jobs are kept (10080)",
    "batches": "minutes a finished batch record is kept (1440: a day)",
    "audit": "minutes an audit entry is kept (129600: 90 days; the newest 10000 stay "
             "however old)",
}
# Trim knobs retired in 0.3 (issue 49), read as before with a note until 0.4: the
# defaults in TRIM_KEYS (and attempts_max's sum) are their values from then on.
RETIRED_TRIM = {
    "attempts_max": "job timelines are kept for the completed and failed jobs kept "
                    "(completed_max + failed_max); remove it",
    "database_control": "a database connection's per-job rows are kept 1440 minutes, as "
                        "long as the Redis driver's; remove it",
    "prometheus": "the series of a job gone quiet is kept 10080 minutes (7 days); remove it",
    # the second round (issue 49: at most 60 keys): records are kept by age, as Laravel's
    # trim; the caps only bound Redis's memory, and their values do that for everyone
    "completed_max": f"the Completed list keeps at most {TRIM_CAPS['completed_max']} jobs "
                     "(a recent sample, not an archive: 'completed' says how recent); "
                     "remove it",
    "failed_max": f"at most {TRIM_CAPS['failed_max']} failed jobs are kept ('failed' says "
                  "how long); remove it",
    "monitored_max": f"a watched tag keeps at most {MONITORED_MAX} jobs ('monitored' says "
                     "how long); remove it",
    "batches_unfinished": "an unfinished batch record is kept 10080 minutes (7 days, as a "
                          "failed job); remove it",
}
# The keys of HORIZON['batches'], a block retired in 0.3 (read until 0.4): its hours are
# trim's "batches" and "batches_unfinished" (minutes), and the master prunes every 600 s.
BATCH_KEYS = {"prune_hours", "prune_unfinished_hours", "prune_every"}

# Each reader below records every mistake of its block in `problems` (with the default
# standing in for a bad value) rather than raising at the first, so `manage.py check`
# lists them all at once (issue 31); horizon/configuration/settings.py raises the first at runtime.


def trim_settings(raw: Any, problems: Problems) -> dict[str, Any]:
    """HORIZON['trim']: how long (minutes) and how many of each stored record are kept.
    ``attempts_max`` defaults to failed_max + completed_max: a timeline's owner is a
    failed row or a completed record (horizon/attempts.py)."""
    valid = TRIM_TABLE.keys() | RETIRED_TRIM.keys()
    if isinstance(raw, dict):
        problems.notes += retired("HORIZON['trim']", raw, RETIRED_TRIM)
    if not isinstance(raw, dict) or set(raw) - valid:
        problems.add(HorizonConfigError(
            "HORIZON trim must be a dict of minutes: completed, failed, metrics, "
            "monitored, batches, audit",
            "horizon.E001"))
        raw = {key: value for key, value in raw.items() if key in valid} \
            if isinstance(raw, dict) else {}
    values: dict[str, Any] = {}
    for name, default in TRIM_KEYS.items():
        value = raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            problems.add(HorizonConfigError(f"HORIZON trim {name} must be a number of "
                                            f"minutes > 0, got {value!r}", "horizon.E001"))
            value = default
        values[f"trim_{name}_minutes"] = float(value)
    caps = {name: raw.get(name, default) for name, default in TRIM_CAPS.items()}
    caps["attempts_max"] = raw.get("attempts_max", caps["failed_max"] + caps["completed_max"]
                                   if all(isinstance(v, int) for v in caps.values()) else 0)
    for name, value in caps.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            if name != "attempts_max" or "attempts_max" in raw:  # else: told for its parts
                problems.add(HorizonConfigError(f"HORIZON trim {name} must be an integer "
                                                f">= 1, got {value!r}", "horizon.E001"))
            value = TRIM_CAPS.get(name, sum(TRIM_CAPS.values()))
        values[name] = value
    most = raw.get("monitored_max", MONITORED_MAX)
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        problems.add(HorizonConfigError(f"HORIZON trim monitored_max must be an integer "
                                        f">= 1, got {most!r}", "horizon.E001"))
        most = MONITORED_MAX
    values["monitored_max"] = most
    return values


def batch_settings(raw: Any, trim: Any, problems: Problems) -> dict[str, Any]:
    """How old batch records get before the master prunes them: HORIZON['trim']'s
    ``batches`` and ``batches_unfinished`` (minutes, as every trim key), else the hours
    of the HORIZON['batches'] block they replace (read until 0.4: settings.RETIRED_KEYS
    notes it)."""
    raw = raw if raw is not None else {}
    if not isinstance(raw, dict) or set(raw) - BATCH_KEYS:
        problems.add(HorizonConfigError("HORIZON batches must be a dict with prune_hours "
                                        "and prune_unfinished_hours (better: trim's "
                                        "batches and batches_unfinished)", "horizon.E001"))
        raw = {key: value for key, value in raw.items() if key in BATCH_KEYS} \
            if isinstance(raw, dict) else {}
    values: dict[str, Any] = {}
    for key, field_name, default in (("prune_hours", "batch_prune_hours", 24.0),
                                     ("prune_unfinished_hours",
                                      "batch_prune_unfinished_hours", 168.0),
                                     ("prune_every", "batch_prune_every", 600.0)):
        value = raw.get(key, default)
        if value is None and key == "prune_unfinished_hours":
            values[field_name] = None  # kept until they finish (unbounded: say so)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            problems.add(HorizonConfigError(f"HORIZON batches {key} must be a number >= 0, "
                                            f"got {value!r}", "horizon.E001"))
            value = default
        values[field_name] = float(value)
    trim = trim if isinstance(trim, dict) else {}  # not a dict: trim_settings says so
    for key, field_name in (("batches", "batch_prune_hours"),
                            ("batches_unfinished", "batch_prune_unfinished_hours")):
        value = trim.get(key, ...)
        if value is ...:
            continue
        if value is None and key == "batches_unfinished":
            values[field_name] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            problems.add(HorizonConfigError(f"HORIZON trim {key} must be a number of "
                                            f"minutes >= 0, got {value!r}", "horizon.E001"))
        else:
            values[field_name] = float(value) / 60
    return values


def seconds_or_days(key: str, value: Any, *, minimum: float, check: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise HorizonConfigError(f"HORIZON[{key!r}] must be a number >= {minimum:g}, "
                                 f"got {value!r}", check)
    return float(value)


def audit_days(trim: Any, old_days: Any) -> float:
    """Days an audit entry is kept: HORIZON['trim']['audit'] (minutes, as every trim
    key), else the retired HORIZON['audit_days'] (read until 0.4)."""
    minutes = trim.get("audit") if isinstance(trim, dict) else None
    if minutes is None:
        return seconds_or_days("audit_days", old_days, minimum=1, check="horizon.E017")
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 1440:
        raise HorizonConfigError("HORIZON trim audit must be a number of minutes >= 1440 "
                                 f"(a day), got {minutes!r}", "horizon.E017")
    return minutes / 1440


def audit_keep(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HorizonConfigError("HORIZON['audit_keep'] must be an integer >= 1",
                                 "horizon.E017")
    return value


def parse_waits(raw: Any, connection: str, problems: Problems) -> dict[str, float]:
    """{"redis:default": 60} (or {"default": 60} on Horizon's connection) -> by label."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.add(HorizonConfigError(
            "HORIZON['waits'] must map 'connection:queue' to seconds", "horizon.E015"))
        return {}
    out = {}
    for name, seconds in raw.items():
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            problems.add(HorizonConfigError(f"HORIZON['waits'][{name!r}] must be seconds "
                                            f">= 0, got {seconds!r}", "horizon.E015"))
            continue
        label = name if ":" in str(name) else f"{connection}:{name}"
        out[label] = float(seconds)
    return out


# HORIZON['notifications'] is one list of where long-wait alerts go: an address is
# mailed, an http(s) URL posted to. Its dict form (mail, webhook) is read, with a note,
# until 0.4, as are the keys retired before.
WEB = ("http://", "https://")
RETIRED_NOTIFICATIONS = {
    "mail": "write HORIZON['notifications'] as one list: e-mail addresses are mailed, "
            "an http(s) URL is posted to",
    "webhook": "write HORIZON['notifications'] as one list: e-mail addresses are mailed, "
               "an http(s) URL is posted to",
    "cooldown": "the same alert is sent again after 300 s at the soonest; remove it",
    "from": "the mail's sender is DEFAULT_FROM_EMAIL, Django's own setting; set that",
}


def parse_notifications(raw: Any, problems: Problems) -> dict[str, Any]:
    if raw is None:
        return {"mail": [], "webhook": None, "cooldown": 300.0, "from": None}
    if isinstance(raw, (str, list, tuple)):
        return notification_list(raw, problems)
    valid = RETIRED_NOTIFICATIONS.keys()
    if isinstance(raw, dict):
        problems.notes += retired("HORIZON['notifications']", raw, RETIRED_NOTIFICATIONS)
    if not isinstance(raw, dict) or set(raw) - valid:
        problems.add(HorizonConfigError(
            "HORIZON['notifications'] must be a list of e-mail addresses and http(s) "
            "URLs", "horizon.E016"))
        raw = {key: value for key, value in raw.items() if key in valid} \
            if isinstance(raw, dict) else {}
    mail = raw.get("mail") or []
    mail = [mail] if isinstance(mail, str) else list(mail)
    webhook = raw.get("webhook")
    if webhook is not None and not (isinstance(webhook, str) and
                                    webhook.startswith(("http://", "https://"))):
        problems.add(HorizonConfigError(
            "HORIZON['notifications']['webhook'] must be an http(s) URL", "horizon.E016"))
        webhook = None
    cooldown = raw.get("cooldown", 300)
    if isinstance(cooldown, bool) or not isinstance(cooldown, (int, float)) or cooldown < 0:
        problems.add(HorizonConfigError(
            "HORIZON['notifications']['cooldown'] must be seconds >= 0", "horizon.E016"))
        cooldown = 300
    return {"mail": mail, "webhook": webhook, "cooldown": float(cooldown),
            "from": raw.get("from")}


def notification_list(raw: Any, problems: Problems) -> dict[str, Any]:
    """["ops@example.com", "https://hooks.example.com/..."]: where long-wait alerts go,
    each entry's form saying how (one webhook URL at most)."""
    items = [raw] if isinstance(raw, str) else list(raw)
    hooks = [item for item in items if isinstance(item, str) and item.startswith(WEB)]
    mail = [item for item in items if isinstance(item, str) and "@" in item and
            not item.startswith(WEB)]
    if len(mail) + len(hooks) != len(items) or len(hooks) > 1:
        problems.add(HorizonConfigError(
            "HORIZON['notifications'] must list e-mail addresses and at most one http(s) "
            f"URL, got {raw!r}", "horizon.E016"))
    return {"mail": mail, "webhook": hooks[0] if hooks else None, "cooldown": 300.0,
            "from": None}


# HORIZON['role_groups']'s keys: the dashboard's roles (horizon/dashboard/access/auth.py)
ROLE_KEYS = {
    "view": "groups whose members may read the dashboard",
    "operate": "groups whose members may also act (retry, delete, pause, ...)",
}
ROLES = tuple(ROLE_KEYS)


def role_group_errors(raw: dict[str, Any]) -> list[HorizonConfigError]:
    """HORIZON["role_groups"]: role -> group names (horizon/dashboard/access/role_groups.py)."""
    value = raw.get("role_groups")
    if value is None:
        return []
    if not isinstance(value, dict) or set(value) - set(ROLES) or not all(
            isinstance(groups, (list, tuple)) and all(isinstance(g, str) and g for g in groups)
            for groups in value.values()):
        return [HorizonConfigError(
            "HORIZON['role_groups'] must map 'view' and/or 'operate' to lists of group "
            f"names, got {value!r}", "horizon.E018")]
    return []


def name_list(raw: dict[str, Any], key: str) -> frozenset[str]:
    """HORIZON['silenced'] / ['silenced_tags']: a list of non-empty strings (job names,
    tags) as a set; a bare string is refused, as it would silence its characters."""
    value = raw.get(key)
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)) or \
            not all(isinstance(item, str) and item for item in value):
        raise HorizonConfigError(
            f"HORIZON[{key!r}] must be a list of non-empty strings, got {value!r}",
            "horizon.E019")
    return frozenset(value)
