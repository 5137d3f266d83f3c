"""JSON Schema references resolved once while a batch is written, not at every validation.

Decision owned here: how invenio-records resolves the ``$ref`` of a record's JSON Schema
while the harvest writes. It validates a record at each commit (an InvenioRDM record nine
times between its draft and its published record, parent included). With
invenio-jsonschemas' store (``RECORDS_REFRESOLVER_STORE = current_refresolver_store``, as
InvenioRDM sets it), each validation builds a resolver whose store is a proxy that builds
the whole store again at each look-up (about 30 times a validation), then resolves every
reference of the schema again (each fragment by walking the schema document). Registered
schemas are fixed when the application starts, so while a batch is written validations use
one snapshot of the store and share what each reference of a registered schema resolved to.
What is validated, and against what, does not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag

from flask import current_app

from .while_open import InstalledWhileOpen


def _install(state: Any) -> Callable[[], None] | None:
    """Validations of `state` (invenio-records') use a snapshot of the registered schemas."""
    urljoin = _site_urljoin(state)
    if urljoin is None:
        return None
    site_class, site_store = state.refresolver_cls, state.refresolver_store
    # invenio-records tests the store's truth at each validation: the proxy's would build it.
    store = dict(site_store.items())
    state.refresolver_store = store
    state.refresolver_cls = _resolver_sharing_references(site_class, store, urljoin)

    def undo() -> None:
        state.refresolver_cls, state.refresolver_store = site_class, site_store

    return undo


_snapshot = InstalledWhileOpen(_install)


@contextmanager
def schema_references_resolved_once() -> Iterator[None]:
    """Within this block, validations resolve registered schemas' references once; nested
    and concurrent blocks share one snapshot, and the site's resolver is back after the
    last one. Without invenio-jsonschemas' store nothing changes."""
    with _snapshot.block(current_app.extensions.get("invenio-records")):
        yield


def _site_urljoin(state: Any) -> Callable[..., str] | None:
    """The URL join invenio-records uses with a local store, cached across validations;
    None unless `state` validates with invenio-jsonschemas' registered schemas as its store
    and a resolver of jsonschema's ``RefResolver`` interface."""
    if state is None or getattr(state, "refresolver_store", None) is None:
        return None
    try:
        from invenio_jsonschemas.proxies import current_refresolver_store
        from invenio_records.resolver import urljoin_with_custom_scheme
    except ImportError:
        return None
    if state.refresolver_store is not current_refresolver_store or not hasattr(
        state.refresolver_cls, "resolve_from_url"
    ):
        return None
    return lru_cache(1024)(urljoin_with_custom_scheme)


def _resolver_sharing_references(
    site_class: type, store: dict[str, Any], urljoin: Callable[..., str]
) -> type:
    """A `site_class` whose instances look up `store` (not the proxy), join URLs with
    `urljoin` and share what each reference into one of its schemas resolves to."""
    resolved: dict[str, Any] = {}

    class ResolverSharingReferences(site_class):  # type: ignore[misc, valid-type]
        def __init__(self, base_uri: str, referrer: Any, *args: Any, **kwargs: Any) -> None:
            kwargs["store"] = store
            kwargs["urljoin_cache"] = urljoin
            super().__init__(base_uri, referrer, *args, **kwargs)
            self._remote_cache = _sharing(self._remote_cache, base_uri, store, resolved)

    ResolverSharingReferences.__name__ = f"{site_class.__name__}SharingReferences"
    return ResolverSharingReferences


def _sharing(
    own_cache: Callable[[str], Any], base_uri: str, store: dict[str, Any], resolved: dict
) -> Callable[[str], Any]:
    """Resolve a reference into a registered schema once for all resolvers; any other (the
    validated schema itself, a remote one) by the resolver's own means."""

    def resolve(url: str) -> Any:
        document_url = urldefrag(url)[0]
        if document_url == base_uri or document_url not in store:
            return own_cache(url)
        try:
            return resolved[url]
        except KeyError:
            resolved[url] = found = own_cache(url)
            return found

    return resolve
