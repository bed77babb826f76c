"""HORIZON["apps"]: the other apps (namespaces) this site's dashboard shows, typed.

The site's own app (this process's namespace) is always first and needs no entry. An
entry is a namespace name, or ``{"namespace": "blog", "role_groups": {"operate":
["blog-ops"], "view": [...]}}`` whose role_groups, when given, decide who may see or
operate that app instead of the site-wide roles (horizon/dashboard/access/auth.py).
"""
from __future__ import annotations

from dataclasses import field
from typing import Any

from horizon.configuration.values import ROLES, HorizonConfigError
from queueing.contract.records import record
from queueing.settings import namespace


@record(frozen=True, slots=True)
class App:
    """One namespace the dashboard shows; `own`: the site process's own namespace."""

    namespace: str
    own: bool = False
    role_groups: dict[str, frozenset[str]] | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return self.namespace or "(no namespace)"


def _block(entry: Any) -> App:
    if isinstance(entry, str):
        entry = {"namespace": entry}
    if not isinstance(entry, dict) or set(entry) - {"namespace", "role_groups"}:
        raise HorizonConfigError(
            "HORIZON['apps'] entries are namespace names or {'namespace': ..., "
            f"'role_groups': {{...}}}} blocks, got {entry!r}", "horizon.E020")
    name = entry.get("namespace")
    problem = namespace.namespace_error(name, "HORIZON['apps'] namespace")
    if problem is not None or not name:
        raise HorizonConfigError(str(problem or "HORIZON['apps'] namespace must not be "
                                               "empty"), "horizon.E020")
    groups = entry.get("role_groups")
    if groups is None:
        return App(name)
    if not isinstance(groups, dict) or set(groups) - set(ROLES) or not all(
            isinstance(names, (list, tuple)) and all(isinstance(g, str) and g for g in names)
            for names in groups.values()):
        raise HorizonConfigError(
            f"HORIZON['apps'] {name!r} role_groups must map 'view' / 'operate' to lists "
            f"of group names, got {groups!r}", "horizon.E020")
    return App(name, role_groups={role: frozenset(names) for role, names in groups.items()})


def parse(raw: Any) -> tuple[App, ...]:
    """HORIZON['apps'] after the site's own app, each namespace once; HorizonConfigError
    with the first mistake."""
    if raw is None:
        raw = []
    if isinstance(raw, (str, dict)) or not isinstance(raw, (list, tuple)):
        raise HorizonConfigError(f"HORIZON['apps'] must be a list, got {raw!r}",
                                 "horizon.E020")
    own = App(namespace.process(), own=True)
    found = [own]
    for entry in raw:
        app = _block(entry)
        if app.namespace == own.namespace:  # its role_groups still limit it
            found[0] = App(own.namespace, own=True, role_groups=app.role_groups)
        elif app.namespace not in {a.namespace for a in found}:
            found.append(app)
    return tuple(found)


def errors(raw: dict[str, Any]) -> list[HorizonConfigError]:
    try:
        parse(raw.get("apps"))
    except HorizonConfigError as exc:
        return [exc]
    return []
