"""Issue 49: the login throttle moved into horizon/login/; the path a project writes in
AUTHENTICATION_BACKENDS still imports until 0.4, as the same module, with a warning."""
import sys

import pytest
from django.utils.module_loading import import_string

from horizon.login import throttle


def test_a_setting_naming_the_old_throttle_path_still_finds_its_class(monkeypatch):
    # A wheel holds no file at the old path; an editable install of an older tree
    # (a shared development venv) may, so its finder is left out here.
    monkeypatch.setattr(sys, "meta_path", [
        finder for finder in sys.meta_path
        if not str(getattr(finder, "__module__", "")).startswith("__editable__")])
    sys.modules.pop("horizon.login_throttle", None)  # it warns once, at the first import
    with pytest.warns(DeprecationWarning, match="horizon.login_throttle moved to horizon.login"):
        found = import_string("horizon.login_throttle.LoginThrottleBackend")
    assert found is throttle.LoginThrottleBackend
