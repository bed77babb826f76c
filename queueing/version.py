"""The product's one version: pyproject.toml reads it (``[tool.setuptools.dynamic]``),
every management command's ``--version`` prints it, and CHANGELOG.md names it."""
__version__ = "0.3.0"
PRODUCT = "horizon-django"
