"""Look-ups in this instance's vocabularies for the InvenioRDM transformers.

Decision owned here: how a value is found in a vocabulary - through the vocabularies services
with the system identity, as any other reader would (the generic vocabularies service for
``languages``, ``licenses``, ``resourcetypes`` and the other typed ones; a service of its own
for the contributed affiliations, awards, funders, names and subjects) - and that every answer
is cached for one run.

invenio-rdm-records is an optional extra: invenio-vocabularies is imported where it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Vocabularies with a service of their own (invenio-vocabularies' contrib); every other
# vocabulary is a type of the generic vocabularies service.
CONTRIB_VOCABULARIES = frozenset({"affiliations", "awards", "funders", "names", "subjects"})


class Vocabularies:
    """Look-ups in this instance's vocabularies, cached for the life of the object (one run).

    Through the vocabularies services with the system identity, as any other reader would.
    A search is only a candidate list: the exact comparison is made by the caller, because
    ``props`` are dynamically mapped text fields.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._searches: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._types: dict[str, bool] = {}

    @staticmethod
    def _service(vocabulary: str) -> Any:
        if vocabulary in CONTRIB_VOCABULARIES:
            from invenio_records_resources.proxies import current_service_registry

            return current_service_registry.get(vocabulary)
        from invenio_vocabularies.proxies import current_service

        return current_service

    def has_type(self, vocabulary: str) -> bool:
        if vocabulary not in self._types:
            if vocabulary in CONTRIB_VOCABULARIES:
                try:
                    self._service(vocabulary)
                    known = True
                except KeyError:  # the service registry's answer for an unknown id
                    known = False
            else:
                from invenio_vocabularies.records.models import VocabularyType

                known = VocabularyType.query.filter_by(id=vocabulary).one_or_none() is not None
            self._types[vocabulary] = known
        return self._types[vocabulary]

    def entry(self, vocabulary: str, id_: str) -> dict[str, Any] | None:
        """The entry `id_` of `vocabulary`, None if there is none."""
        key = (vocabulary, id_)
        if key not in self._entries:
            from invenio_access.permissions import system_identity
            from invenio_pidstore.errors import PIDDoesNotExistError
            from sqlalchemy.exc import NoResultFound

            result: dict[str, Any] | None = None
            if self.has_type(vocabulary):
                read_id = id_ if vocabulary in CONTRIB_VOCABULARIES else (vocabulary, id_)
                try:
                    result = self._service(vocabulary).read(system_identity, read_id).to_dict()
                # A contributed vocabulary's model pid answers an unknown id with NoResultFound.
                except (PIDDoesNotExistError, NoResultFound):
                    result = None
            self._entries[key] = result
        return self._entries[key]

    def exists(self, vocabulary: str, id_: str) -> bool:
        return self.entry(vocabulary, id_) is not None

    def search(self, vocabulary: str, query: str) -> list[dict[str, Any]]:
        """Entries a query string finds (at most 100), in id order."""
        key = (vocabulary, query)
        if key not in self._searches:
            from invenio_access.permissions import system_identity

            hits: list[dict[str, Any]] = []
            if self.has_type(vocabulary):
                params = {"q": query, "size": 100}
                if vocabulary in CONTRIB_VOCABULARIES:
                    result = self._service(vocabulary).search(system_identity, params=params)
                else:
                    result = self._service(vocabulary).search(
                        system_identity, params=params, type=vocabulary
                    )
                hits = sorted(result.hits, key=lambda hit: hit["id"])
            self._searches[key] = hits
            for hit in hits:
                self._entries.setdefault((vocabulary, hit["id"]), hit)
        return self._searches[key]

    def by_field(
        self,
        vocabulary: str,
        field: str,
        phrase: str,
        matches: Callable[[str], bool],
    ) -> list[str]:
        """Ids of entries whose `field` (dotted, e.g. ``props.url``) passes `matches`,
        found by `phrase`. A field that holds a list passes when one of its items does."""
        escaped = phrase.replace("\\", "\\\\").replace('"', '\\"')
        found = []
        for hit in self.search(vocabulary, f'{field}:"{escaped}"'):
            values = _values_at(hit, field.split("."))
            if any(matches(str(value)) for value in values):
                found.append(hit["id"])
        return found

    def by_prop(
        self,
        vocabulary: str,
        prop: str,
        phrase: str,
        matches: Callable[[str], bool],
    ) -> list[str]:
        """Ids of entries whose ``props.<prop>`` passes `matches`, found by `phrase`."""
        return self.by_field(vocabulary, f"props.{prop}", phrase, matches)


def _values_at(entry: Any, path: list[str]) -> list[Any]:
    """The values at a dotted path of a vocabulary entry, through lists."""
    if not path:
        return entry if isinstance(entry, list) else [entry]
    if isinstance(entry, list):
        return [value for item in entry for value in _values_at(item, path)]
    if isinstance(entry, dict) and path[0] in entry:
        return _values_at(entry[path[0]], path[1:])
    return []
