"""Who gets in: one throttle for every way into the site (throttle.py), its counts in
Redis or the database while Redis is away (store.py), trusted browsers (devices.py),
the client address behind proxies (client_address.py), and the login page and debug
filter of the standalone site (security.py)."""
