"""The systemd units in the README and docs/deployment.md (issue 40, item 5): each
parses as a unit file, is complete (RestartSec, [Install], Type=notify, a stop timeout
above the default job timeout) and both documents show the same units."""
import configparser
import re
from pathlib import Path

import pytest

from horizon.supervisor.master import KILL_GRACE
from queueing.worker.options import DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


def units(document: str) -> dict[str, configparser.ConfigParser]:
    found = {}
    for block in re.findall(r"```ini\n(.*?)```", (ROOT / document).read_text(), re.S):
        name = re.match(r"# /etc/systemd/system/(\S+)\n", block).group(1)
        parser = configparser.ConfigParser(interpolation=None, strict=True,
                                           comment_prefixes=("#", ";"))
        parser.optionxform = str  # systemd's keys are case-sensitive
        parser.read_string(block)
        found[name] = parser
    return found


@pytest.mark.parametrize("document", ["README.md", "docs/deployment.md"])
def test_every_unit_is_complete(document):
    found = units(document)
    assert set(found) == {"horizon.service", "worker@.service"}
    for name, unit in found.items():
        assert set(unit.sections()) == {"Unit", "Service", "Install"}, name
        service = unit["Service"]
        assert service["Type"] == "notify"
        assert service["Restart"] == "always" and float(service["RestartSec"]) > 0
        assert service["KillSignal"] == "SIGTERM"
        # the master's last resort: stop_timeout + KILL_GRACE (issue 47); a plain worker's
        # is --stop-timeout + its kill grace, less
        assert float(service["TimeoutStopSec"]) > DEFAULTS.stop_timeout + KILL_GRACE, name
        assert float(service["TimeoutStartSec"]) > DEFAULTS.reconnect_timeout, name
        assert unit["Install"]["WantedBy"] == "multi-user.target"
        assert "redis.service" in unit["Unit"]["After"]
        assert service["ExecStart"].split()[1:3] == [
            "manage.py", "horizon" if name == "horizon.service" else "runworker"]
    master = found["horizon.service"]["Service"]
    assert float(master["WatchdogSec"]) > 0 and master["KillMode"] == "mixed"


def test_the_readme_and_the_deployment_guide_show_the_same_units():
    readme, guide = units("README.md"), units("docs/deployment.md")
    for name in readme:
        assert {s: dict(readme[name][s]) for s in readme[name].sections()} == \
            {s: dict(guide[name][s]) for s in guide[name].sections()}, name
