"""Packaging beyond what pyproject.toml can say: the top-level ``templates/`` and
``static/`` folders (the project's layout) ship inside the wheel as
``horizon/templates`` and ``horizon/static``, where Django's app-directories template
loader and static-files finder look, so an installed dashboard renders in any project."""
import os

from setuptools import find_packages, setup

ASSET_DIRS = {"horizon.templates": "templates", "horizon.static": "static"}


def asset_packages() -> dict[str, list[str]]:
    """Every folder under the asset dirs, as a data-only package with all its files."""
    found = {}
    for package, folder in ASSET_DIRS.items():
        for directory, _dirs, files in os.walk(folder):
            relative = os.path.relpath(directory, folder)
            name = package if relative == "." else f"{package}.{relative.replace(os.sep, '.')}"
            found[name] = [f for f in files if not f.startswith(".")]
    return found


ASSETS = asset_packages()
LUA = {"queueing.drivers.redis.lua": ["*.lua"], "queueing.middleware.lua": ["*.lua"],
       "queueing.results.lua": ["*.lua"],
       "horizon.lua": ["*.lua"]}  # scripts, not Python

setup(
    packages=find_packages(include=["queueing*", "horizon*"]) + sorted(LUA) + sorted(ASSETS),
    package_dir=ASSET_DIRS,
    package_data={**LUA, **ASSETS},
)
