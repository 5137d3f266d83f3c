"""Vocabulary entries that a batch's records refer to, resolved once while it is written.

Decision owned here: what the records of one batch share of their relations. A record
(InvenioRDM's: languages, resource type, licences, relation types, ...) checks at each
commit of its draft and of its record that every vocabulary entry it names exists, and
dereferences them; invenio-records-resources' ``PIDRelation`` keeps what it resolved for
one record object only, so each record of a harvest resolved the same entries again, a PID
look-up and a record read each (about 16 SQL statements a record in the profile). While a
batch is written, an entry resolved for one record is handed to the next ones, detached
from the session as ``PIDRelation`` keeps it. Only entries of invenio-vocabularies' PID
contexts are shared: relations to records, communities or users resolve as before, and an
id that resolved to nothing is asked again. A vocabulary entry a curator changes while a
batch is written is seen by the next batch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

from .while_open import InstalledWhileOpen


def _install(_: Any) -> Callable[[], None] | None:
    """``PIDRelation.resolve`` shares resolved vocabulary entries until undone."""
    try:
        from invenio_records_resources.records.systemfields.relations import PIDRelation
        from invenio_vocabularies.records.systemfields.pid import BaseVocabularyPIDFieldContext
    except ImportError:  # a site without invenio-vocabularies
        return None
    site_resolve = PIDRelation.resolve
    shared: dict[tuple[int, Hashable], Any] = {}

    def resolve(relation: Any, id_: Any) -> Any:
        key = (id(relation.pid_field), id_)
        if not isinstance(relation.pid_field, BaseVocabularyPIDFieldContext) or not _hashable(key):
            return site_resolve(relation, id_)
        if id_ not in relation.cache and key in shared:
            relation.cache[id_] = shared[key]
        found = site_resolve(relation, id_)  # from the record's own cache when shared
        if found is not None:
            shared[key] = found
        return found

    PIDRelation.resolve = resolve

    def undo() -> None:
        PIDRelation.resolve = site_resolve

    return undo


def _hashable(key: tuple) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


_sharing = InstalledWhileOpen(_install)


@contextmanager
def vocabulary_entries_resolved_once() -> Iterator[None]:
    """Within this block the records written share the vocabulary entries they resolve;
    nested and concurrent blocks share them too, until the last one closes."""
    with _sharing.block():
        yield
