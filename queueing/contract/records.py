"""``@record``: a dataclass whose methods are not compiled when its module is imported.

Python 3.11's ``@dataclass`` writes each method it adds (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, and a frozen class's ``__setattr__`` and ``__delattr__``) as
source text and compiles it with ``exec``, one compile a method, every time the module is
imported: bytecode caching never covers it. The ~50 dataclasses a worker imports cost
about an eighth of the instructions of its start that way (docs/benchmarks.md, issue 52).

``@record`` has ``@dataclass`` build the class with none of those methods (so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` read it as before),
then adds the same methods as ordinary closures over the fields: same behaviour, nothing
compiled. Its ``__init__`` binds its arguments in a loop, a few microseconds slower a call
than a compiled one with many fields: right for what is built once or per process
(settings, options); a record built per job writes its own ``__init__``, which is kept.
Not supported (``@dataclass`` stays for them): ``order``, ``InitVar`` and ``unsafe_hash``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)
MISSING: Any = dataclasses.MISSING


@overload
def record(cls: T, /) -> T: ...


@overload
def record(*, frozen: bool = ..., slots: bool = ..., kw_only: bool = ...,
           eq: bool = ...) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: Any = None, /, *, frozen: bool = False, slots: bool = False,
           kw_only: bool = False, eq: bool = True) -> Any:
    """``@dataclass`` with these arguments, its methods written without ``exec``."""
    def wrap(cls: T) -> T:
        own = set(vars(cls))  # what the class writes itself is kept, as @dataclass keeps it
        if vars(cls).get("__hash__", MISSING) is None and "__eq__" in own:
            own.discard("__hash__")  # Python's own None beside a written __eq__
        made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False,
                                          slots=slots, kw_only=kw_only)
        fields = dataclasses.fields(made)
        params = made.__dataclass_params__  # what it is, for a dataclass subclassing it
        params.init, params.repr, params.eq, params.frozen = True, True, eq, frozen
        if "__init__" not in own:
            made.__init__ = _init(made, fields, frozen)
        if "__repr__" not in own:
            made.__repr__ = _repr(fields)
        if eq and "__eq__" not in own:
            made.__eq__ = _eq(fields)
        if eq and "__hash__" not in own:  # @dataclass's rule: frozen hashes, mutable cannot
            made.__hash__ = _hash(fields) if frozen else None
        if frozen:
            _freeze(made, fields, slots)
        return made
    return wrap if cls is None else wrap(cls)


def _init(cls: type, fields: tuple[dataclasses.Field, ...], frozen: bool) -> Callable:
    given = [f for f in fields if f.init]
    positional = [f.name for f in given if not f.kw_only]
    names = {f.name for f in given}
    derived = [f for f in fields if not f.init and (
        f.default is not MISSING or f.default_factory is not MISSING)]
    assign = object.__setattr__ if frozen else setattr
    post_init = hasattr(cls, "__post_init__")
    where = f"{cls.__qualname__}.__init__()"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(positional):
            takes = len(positional) + 1
            raise TypeError(f"{where} takes {takes} positional argument{'s' * (takes > 1)} "
                            f"but {len(args) + 1} were given")
        for name, value in zip(positional, args):
            if name in kwargs:
                raise TypeError(f"{where} got multiple values for argument {name!r}")
            kwargs[name] = value
        for name in kwargs:
            if name not in names:
                raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
        missing = []
        for f in given:
            if f.name in kwargs:
                assign(self, f.name, kwargs[f.name])
            elif f.default is not MISSING or f.default_factory is not MISSING:
                assign(self, f.name, _default(f))
            else:
                missing.append(f.name)
        if missing:
            raise TypeError(f"{where} missing {len(missing)} required argument"
                            f"{'s' if len(missing) > 1 else ''}: "
                            f"{', '.join(repr(name) for name in missing)}")
        for f in derived:
            assign(self, f.name, _default(f))
        if post_init:
            self.__post_init__()
    return __init__


def _default(f: dataclasses.Field) -> Any:
    make: Any = f.default_factory
    return f.default if f.default is not MISSING else make()


def _repr(fields: tuple[dataclasses.Field, ...]) -> Callable:
    shown = [f.name for f in fields if f.repr]

    def __repr__(self: Any) -> str:
        inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({inside})"
    return __repr__


def _eq(fields: tuple[dataclasses.Field, ...]) -> Callable:
    compared = [f.name for f in fields if f.compare]

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (tuple(getattr(self, name) for name in compared)
                == tuple(getattr(other, name) for name in compared))
    return __eq__


def _hash(fields: tuple[dataclasses.Field, ...]) -> Callable:
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, name) for name in hashed))
    return __hash__


def _freeze(cls: Any, fields: tuple[dataclasses.Field, ...], slots: bool) -> None:
    """A frozen dataclass's ``__setattr__``/``__delattr__`` (and, with slots, the pickle
    state @dataclass would add: the default one would assign through them)."""
    names = frozenset(f.name for f in fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    if slots:
        order = [f.name for f in fields]

        def __getstate__(self: Any) -> list:
            return [getattr(self, name) for name in order]

        def __setstate__(self: Any, state: list) -> None:
            for name, value in zip(order, state):
                object.__setattr__(self, name, value)

        cls.__getstate__, cls.__setstate__ = __getstate__, __setstate__
