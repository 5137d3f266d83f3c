"""The suite's search server (the node of oaiharvest_test_support.search_node, or SEARCH_HOSTS)
and the helpers that keep its indices between tests."""

from __future__ import annotations

from oaiharvest_test_support.search_node import SearchServer, free_port

__all__ = [
    "SearchServer",
    "empty_search_indices",
    "ensure_search_indices",
    "free_port",
    "registered_aliases",
]


def registered_aliases() -> list[str]:
    """The prefixed alias of every index the app registers (its mappings)."""
    from invenio_search import current_search
    from invenio_search.utils import build_alias_name

    return [build_alias_name(name) for name in current_search.mappings]


def ensure_search_indices() -> None:
    """The index templates put and every registered index there, made only where missing.

    The indices outlive the test module: on a real node, making the few dozen indices of an
    app with InvenioRDM again for each module costs 10 to 20 s.
    """
    from invenio_search import current_search, current_search_client
    from invenio_search.utils import build_alias_name

    list(current_search.put_index_templates())
    missing = [
        name
        for name in current_search.mappings
        if not current_search_client.indices.exists(index=build_alias_name(name))
    ]
    if missing:
        list(current_search.create(index_list=missing))


def empty_search_indices(aliases: list[str] | None = None) -> None:
    """The documents of the registered indices (or of `aliases`) deleted.

    A delete-by-query sees only what a refresh has made searchable: refreshed first, or the
    documents of the last moments would stay.
    """
    from invenio_search import current_search_client

    index = ",".join(aliases or registered_aliases())
    current_search_client.indices.refresh(index=index, ignore_unavailable=True)
    current_search_client.delete_by_query(
        index=index,
        body={"query": {"match_all": {}}},
        conflicts="proceed",
        refresh=True,
        ignore_unavailable=True,
    )
