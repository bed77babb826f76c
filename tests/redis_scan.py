"""Everything a Redis database holds, as bytes: every key's name and every value of
every type, read with SCAN (the encrypted-job tests look for a plaintext in it). A key
that goes while the scan runs is passed over: a test may scan while a worker still
settles its last job (a fresh-clone make test saw a reserved set go between the two)."""


def everything(client) -> bytes:
    parts: list[bytes] = []
    for key in client.scan_iter(count=1000):
        parts.append(key)
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "string":
            parts.append(client.get(key) or b"")
        elif kind == "list":
            parts.extend(client.lrange(key, 0, -1))
        elif kind == "set":
            parts.extend(client.smembers(key))
        elif kind == "zset":
            parts.extend(member for member, _ in client.zrange(key, 0, -1, withscores=True))
        elif kind == "hash":
            for field, value in client.hgetall(key).items():
                parts.extend((field, value))
        elif kind == "none":  # gone between SCAN and TYPE (a worker acked meanwhile)
            continue
        elif kind == "stream":
            for entry_id, fields in client.xrange(key):
                parts.append(entry_id)
                for field, value in fields.items():
                    parts.extend((field, value))
        else:
            raise AssertionError(f"key {key!r} has a type this scan does not read: {kind}")
    return b"\n".join(p if isinstance(p, bytes) else str(p).encode() for p in parts)


def kinds(client) -> set[str]:
    """The types of the keys present (so a test can show it read more than strings)."""
    out = set()
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind != "none":  # gone meanwhile
            out.add(kind)
    return out
