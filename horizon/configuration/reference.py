"""docs/settings.md, written from the tables the settings validation reads (issue 49).

Each settings block's reader checks a block against one table of its keys (key -> what
it means); this module renders the same tables, so a key cannot be accepted without
being documented, nor documented without being accepted. tests/horizon/
test_settings_reference.py fails when the committed docs/settings.md differs from what
this writes.

    python -m horizon.configuration.reference --write   # rewrite docs/settings.md
    python -m horizon.configuration.reference --count   # the keys a user can write, counted

It lives in horizon/ because it reads both packages' tables (queueing must not import
horizon).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horizon.configuration import settings as horizon_block
from horizon.configuration import supervisor as supervisor_block
from horizon.configuration import values
from horizon.configuration.settings import HORIZON_KEYS
from horizon.configuration.supervisor import (
    SUPERVISOR_DEFAULTS,
    SUPERVISOR_KEYS,
    SUPERVISOR_RENAMES,
)
from horizon.configuration.values import ROLE_KEYS, TRIM_TABLE
from queueing.settings import config as queue_block
from queueing.settings import connection as connection_block
from queueing.settings import failover as failover_block
from queueing.settings.config import SETTINGS_KEYS
from queueing.settings.connection import CLUSTER_KEY, CONNECTION_KEYS, TIMEOUT_RENAMES
from queueing.settings.failover import FAILOVER_KEYS
from queueing.settings.renamed import REMOVED_IN
from queueing.settings.sentinel import SENTINEL_KEYS, SENTINEL_RENAMES

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


@dataclass(frozen=True)
class Block:
    """One kind of settings block: where it is written and its table of keys."""

    where: str
    table: dict[str, str]
    # the defaults the reader applies, where it keeps them in one table (shown as a
    # column, so they cannot drift either); other blocks say theirs in the text
    defaults: dict[str, Any] | None = None


BLOCKS = (
    Block("settings.QUEUE", SETTINGS_KEYS),
    Block("QUEUE['connections'][name]", CONNECTION_KEYS),
    Block("QUEUE['connections'][name] with 'driver': 'failover'", FAILOVER_KEYS),
    Block("settings.HORIZON", HORIZON_KEYS),
    Block("HORIZON['supervisors'][name] (and 'defaults', 'environments')", SUPERVISOR_KEYS,
          SUPERVISOR_DEFAULTS),
    Block("HORIZON['trim']", TRIM_TABLE),
    Block("HORIZON['role_groups']", ROLE_KEYS),
)

# old key -> (the block it was written in, what to write instead)
RENAMED = {
    # the primary's flat login was read on Sentinel connections only (elsewhere it is
    # dropped with a note: the URL says it)
    **{old: ("a Sentinel connection block" if new.startswith("options.")
             else "a connection block",
             new if new.startswith("options.") else "a redis+sentinel:// url")
       for old, new in SENTINEL_RENAMES.items()},
    **{old: ("a connection block", new) for old, new in TIMEOUT_RENAMES.items()},
    CLUSTER_KEY: ("a connection block", "a redis+cluster:// url"),
    **{old: ("a supervisor block", new) for old, new in SUPERVISOR_RENAMES.items()},
}


# retired key -> (the block it was written in, what to do instead): tuning knobs that
# became constants or are derived (issue 49); read, with a note, until REMOVED_IN
RETIRED = {
    **{old: ("settings.HORIZON", text) for old, text in horizon_block.RETIRED_KEYS.items()},
    **{old: ("settings.QUEUE", text) for old, text in queue_block.RETIRED_KEYS.items()},
    **{old: ("a connection block", text) for old, text in connection_block.RETIRED_KEYS.items()},
    **{old: ("a supervisor block", text) for old, text in supervisor_block.RETIRED_KEYS.items()},
    **{old: ("HORIZON['trim']", text) for old, text in values.RETIRED_TRIM.items()},
    **{old: ("HORIZON['notifications']", text)
       for old, text in values.RETIRED_NOTIFICATIONS.items()},
}
# Keys whose name is retired in two kinds of block (a failover block's 'queue' and
# 'queues'; the sentinel block's keys), shown once each in their own rows
RETIRED_ROWS = [
    *((old, where, text) for old, (where, text) in RETIRED.items()),
    *((old, "a failover connection block", text)
      for old, text in failover_block.RETIRED_KEYS.items()),
    *((old, "a connection's 'sentinel' block", connection_block.RETIRED_KEYS["sentinel"])
      for old in SENTINEL_KEYS),
]


def counted() -> tuple[int, int]:
    """(keys, distinct names): every key a user can write, once per kind of block it
    is written in (a failover block's 'queue' counts apart from a connection's), and
    the distinct names among them. Old names (RENAMED) and retired knobs (RETIRED), read
    with a warning for one release only, are not counted."""
    total = sum(len(block.table) for block in BLOCKS)
    names = {key for block in BLOCKS for key in block.table}
    return total, len(names)


def _shown(value: Any) -> str:
    """A default as a settings file would write it: (0.0,) -> 0, 3.0 -> 3."""
    if isinstance(value, tuple):
        return ", ".join(_shown(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def render() -> str:
    total, names = counted()
    lines = [
        "# Settings reference",
        "",
        "<!-- Written by `python -m horizon.configuration.reference --write` from the tables the",
        "     settings validation reads; tests/horizon/test_settings_reference.py fails when",
        "     this file differs. Edit the tables (the key's line), not this file. -->",
        "",
        "Every key the product reads from `settings.QUEUE` and `settings.HORIZON`, block by",
        "block, with its meaning and default. A key not listed here is refused by",
        "`manage.py check` (with the nearest valid name). The README shows them at work.",
        "",
        f"{total} keys in {len(BLOCKS)} kinds of block ({names} distinct names).",
    ]
    for block in BLOCKS:
        lines += ["", f"## `{block.where}`", ""]
        if block.defaults is None:
            lines += ["| key | meaning |", "| --- | --- |"]
            lines += [f"| `{key}` | {text} |" for key, text in block.table.items()]
            continue
        lines += ["| key | default | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{key}` | `{_shown(block.defaults[key])}` | {text} |"
                  for key, text in block.table.items()]
    lines += [
        "", f"## Renamed in 0.3 (the old names are read, with a warning, until {REMOVED_IN})",
        "", "`manage.py check` names each old key a project still writes "
        "(queueing.W020, horizon.W001).", "",
        "| old key | in | write instead |", "| --- | --- | --- |",
    ]
    lines += [f"| `{old}` | {where} | `{new}` |" for old, (where, new) in RENAMED.items()]
    lines += [
        "", f"## Retired in 0.3 (read as before, with a warning, until {REMOVED_IN})", "",
        "Tuning knobs that became constants, or are derived from another key. A block that "
        "still writes one works as before, and `manage.py check` says what to do instead "
        "(queueing.W020, horizon.W001).", "",
        "| key | in | instead |", "| --- | --- | --- |",
    ]
    lines += [f"| `{old}` | {where} | {text} |" for old, where, text in RETIRED_ROWS]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/settings.md")
    parser.add_argument("--count", action="store_true", help="print the key counts")
    args = parser.parse_args(argv)
    if args.count:
        total, names = counted()
        for block in BLOCKS:
            print(f"{len(block.table):3d}  {block.where}")
        print(f"{total:3d}  keys in all ({names} distinct names)")
    if args.write:
        REFERENCE.write_text(render())
        print(f"wrote {REFERENCE}")
    if not (args.count or args.write):
        sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
