"""The mass-deletion guard on InvenioRDM's records service (issue 37): held tombstones leave
every record published; confirmed, they become RDM tombstones."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_rdm_records.services.errors import RecordDeletedException

from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services.deletions import confirm_deletions, held_deletions

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import harvest_again, tracking


def test_held_tombstones_leave_every_record_published_until_confirmed(
    app, rdm, provider, corpus, monkeypatch
):
    monkeypatch.setitem(app.config, "OAI_HARVESTER_DELETION_GUARD_MINIMUM", 2)
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)
    run_harvest("test")
    pids = {identifier: row.local_pid for identifier, row in tracking().items()}
    gone = sorted(pids)[:4]  # 4 of 6
    corpus.advance_clock(hours=1)
    for identifier in gone:
        corpus.delete(identifier)

    summary = harvest_again(corpus)

    assert summary.counts.held == 4 and summary.counts.deleted == 0 and not summary.succeeded
    for pid in pids.values():
        assert rdm.read(system_identity, pid).data["id"] == pid  # published, not a tombstone
    assert held_deletions(current_harvester_service, system_identity, "test").held == 4

    assert confirm_deletions(current_harvester_service, system_identity, "test")["deleted"] == 4

    for identifier in gone:
        with pytest.raises(RecordDeletedException):
            rdm.read(system_identity, pids[identifier])
        assert tracking()[identifier].deleted
    for identifier in sorted(pids)[4:]:
        assert rdm.read(system_identity, pids[identifier]).data["id"] == pids[identifier]
