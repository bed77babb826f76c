"""Horizon's settings: settings.HORIZON read once into a typed HorizonSettings
(settings.py), its supervisor blocks (supervisor.py) and its single values (values.py),
each with a clear error. (Not ``horizon.settings``: that old path of the standalone
site's settings still imports until 0.4.)"""
