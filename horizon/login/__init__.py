"""Who gets in: one throttle for every way into the site (throttle.py), its counts in
Redis or the database while Redis is away (store.py), trusted browsers (devices.py),
and the client address behind proxies (client_address.py). The login page, which wears
the throttle and the dashboard's headers, stands above both: horizon/security.py."""
