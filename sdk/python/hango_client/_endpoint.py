"""Routes declared once for both clients: a route is a method signature and a decorator.

A resource class (``Agents``, ``Runs``…) declares each route as a method with no body::

    @endpoint("GET", "/v1/agents/{agent_id}")
    def get(self, agent_id: Ref, /) -> Agent: ...

The decorator turns a call into a :class:`Call` (the template's ``{names}`` filled from the
arguments of the same name, the ``query`` names as the query string, every other argument a
field of the JSON body, left out when not given) and hands it to the resource's core, which
sends it. :class:`~hango_client.client.Client`'s core answers the JSON;
:class:`~hango_client.client.AsyncClient`'s answers an awaitable of it. So each route is written
once, its signature typed for both: the descriptor's ``__get__`` says ``T`` for a sync resource
and ``Awaitable[T]`` for an async one. The schema test (tests/sdk/test_schema.py) reads the
same declarations, so a route the server does not have fails it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    TypeAlias,
    TypeVar,
    overload,
)
from urllib.parse import quote

from hango_client.types import Page

if TYPE_CHECKING:  # the cores import this module
    from hango_client._async import AsyncEventStream
    from hango_client._sync import EventStream

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", covariant=True)  # a resource on a sync core is one on the sync marker

# An object's id, or the object itself as the API answered it (its "id" is taken).
Ref: TypeAlias = str | Mapping[str, Any]


class Omit:
    """The default of an optional field: left out of the body (unlike None, sent as null)."""

    _instance: Omit | None = None

    def __new__(cls) -> Omit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT = Omit()


def ref_id(value: Ref) -> str:
    """The id of ``value``: a string as given, an object's ``id``; a number (a version's, in
    a path) as its digits."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    try:
        return str(value["id"])
    except (KeyError, TypeError):
        raise TypeError(f"expected an id or an object with an 'id', got {value!r}") from None


@dataclass(frozen=True)
class Call:
    """One request: ``body`` is the JSON to send, or OMIT for none; ``timeout`` overrides the
    client's (a long wait needs a longer one)."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = OMIT
    timeout: float | None = None


@dataclass(frozen=True)
class Route:
    """A route's method and path template; ``query``: the arguments sent as the query string;
    ``body``: the argument that is the whole body (a list, say), or None when the body is the
    object of the remaining arguments."""

    method: str
    template: str
    query: tuple[str, ...] = ()
    body: str | None = None
    timeout: Callable[[Mapping[str, Any]], float | None] | None = None

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.template))

    def body_fields(self, fn: Callable[..., Any]) -> tuple[str, ...]:
        """The fields of the body the function's arguments make (the schema test reads them)."""
        names = list(inspect.signature(fn).parameters)[1:]  # after self
        return tuple(n for n in names if n not in self.path_params and n not in self.query)

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Call:
        signature = inspect.signature(fn)
        bound = signature.bind(None, *args, **kwargs)
        bound.apply_defaults()
        values = dict(list(bound.arguments.items())[1:])
        for name, value in values.items():  # an object given for an id: its id
            if _is_ref(signature.parameters[name]) and isinstance(value, Mapping):
                values[name] = ref_id(value)
        path = self.template.format(**{n: _segment(n, values[n]) for n in self.path_params})
        params = {n: _query_value(values[n]) for n in self.query
                  if values[n] is not OMIT and values[n] is not None}
        rest = {n: v for n, v in values.items()
                if n not in self.path_params and n not in self.query}
        if self.body is not None:
            body = rest[self.body]
        else:
            body = {n: v for n, v in rest.items() if v is not OMIT} if rest else OMIT
            if body is OMIT and self.method in ("POST", "PUT", "PATCH"):
                body = {}
        timeout = self.timeout(values) if self.timeout else None
        return Call(self.method, path, params, body, timeout)


def _is_ref(parameter: inspect.Parameter) -> bool:
    """Whether the parameter is declared an id (``Ref``); annotations are read as written."""
    return "Ref" in str(parameter.annotation)


def _segment(name: str, value: Any) -> str:
    """A path parameter as it goes in the URL: one segment (so a stray ``/`` or ``?`` cannot
    reach another route), but for ``path``, a file's path, whose slashes are the route's."""
    if name == "path":
        return quote(str(value).lstrip("/"), safe="/")
    return quote(ref_id(value), safe=":")


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return ref_id(value)
    return value


class Resource(Generic[C]):
    """A group of routes, sent through ``core`` (a sync or an async one)."""

    def __init__(self, core: C) -> None:
        self._core = core


class _SyncMarker:
    """The type of a sync client's core, for the descriptors' overloads."""


class _AsyncMarker:
    """The type of an async client's core, for the descriptors' overloads."""


class Endpoint(Generic[P, T]):
    """A declared route: called on a sync resource it answers ``T``, on an async one an
    awaitable of ``T``."""

    def __init__(self, route: Route, fn: Callable[..., Any]) -> None:
        self.route, self.fn = route, fn
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Endpoint[P, T]: ...
    @overload
    def __get__(self, obj: Resource[_SyncMarker], owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, obj: Resource[_AsyncMarker], owner: type
                ) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        core = obj._core

        def send(*args: Any, **kwargs: Any) -> Any:
            return core.json(self.route.call(self.fn, args, kwargs))

        send.__doc__ = self.__doc__
        return send


class Items(Generic[P, T]):
    """Every item of a list, page after page (the list route's ``next`` links): an iterator
    on a sync resource, an async iterator on an async one."""

    def __init__(self, pages: Endpoint[P, Page[T]]) -> None:
        self.pages = pages

    @overload
    def __get__(self, obj: None, owner: type) -> Items[P, T]: ...
    @overload
    def __get__(self, obj: Resource[_SyncMarker], owner: type) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, obj: Resource[_AsyncMarker], owner: type
                ) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        core, pages = obj._core, self.pages

        def items(*args: Any, **kwargs: Any) -> Any:
            return core.items(pages.route.call(pages.fn, args, kwargs))

        return items


class Events(Generic[P]):
    """A run's events as they happen, across reconnections: an :class:`EventStream` (an
    iterator of :class:`Event`) on a sync resource, an :class:`AsyncEventStream` on an async
    one."""

    def __init__(self, route: Route, fn: Callable[..., Any]) -> None:
        self.route, self.fn = route, fn
        self.__doc__ = fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> Events[P]: ...
    @overload
    def __get__(self, obj: Resource[_SyncMarker], owner: type
                ) -> Callable[P, EventStream]: ...
    @overload
    def __get__(self, obj: Resource[_AsyncMarker], owner: type
                ) -> Callable[P, AsyncEventStream]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        core = obj._core

        def events(*args: Any, **kwargs: Any) -> Any:
            return core.events(self.route.call(self.fn, args, kwargs))

        return events


def endpoint(method: str, template: str, *, query: tuple[str, ...] = (), body: str | None = None,
             timeout: Callable[[Mapping[str, Any]], float | None] | None = None,
             ) -> Callable[[Callable[Concatenate[Any, P], T]], Endpoint[P, T]]:
    route = Route(method, template, query, body, timeout)
    return lambda fn: Endpoint(route, fn)


def items(pages: Endpoint[P, Page[T]]) -> Items[P, T]:
    return Items(pages)


def events(template: str, *, query: tuple[str, ...] = (),
           ) -> Callable[[Callable[Concatenate[Any, P], Any]], Events[P]]:
    route = Route("GET", template, query)
    return lambda fn: Events(route, fn)
