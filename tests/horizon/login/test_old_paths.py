"""Issue 49: the login modules moved into horizon/login/; the two paths a project writes
in its settings and urls still import until 0.4, as the same modules, with a warning."""
import sys

import pytest
from django.utils.module_loading import import_string

from horizon.login import security, throttle


@pytest.mark.parametrize(("written", "found"), [
    ("horizon.login_throttle.LoginThrottleBackend", throttle.LoginThrottleBackend),
    ("horizon.security.RedactingExceptionReporterFilter",
     security.RedactingExceptionReporterFilter),
    ("horizon.security.ThrottledLoginView", security.ThrottledLoginView),
])
def test_a_setting_naming_an_old_login_path_still_finds_its_class(written, found, monkeypatch):
    # A wheel holds no file at the old path; an editable install of an older tree
    # (a shared development venv) may, so its finder is left out here.
    monkeypatch.setattr(sys, "meta_path", [
        finder for finder in sys.meta_path
        if not str(getattr(finder, "__module__", "")).startswith("__editable__")])
    old = written.rpartition(".")[0]
    sys.modules.pop(old, None)  # the warning is given once, at the first import
    with pytest.warns(DeprecationWarning, match=f"{old} moved to horizon.login."):
        assert import_string(written) is found
