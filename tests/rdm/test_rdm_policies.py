"""A harvester's target options against the real InvenioRDM records service: owner,
community, local drafts, invalid drafts, DOI conflicts and records deleted by a curator; and
how the harvested records' PIDs (DOI, OAI id) are registered."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import harvester_data, make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_pidstore.models import PersistentIdentifier, PIDStatus
from invenio_rdm_records.records.api import RDMRecord
from invenio_rdm_records.services.errors import RecordDeletedException
from invenio_search.proxies import current_search
from sqlalchemy import event

from oarepo_oaipmh_harvester.harvest.targets import AdapterKind, RecordsServiceTarget, adapter_for
from oarepo_oaipmh_harvester.harvest.targets.options import TargetOptions
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError

from .conftest import RDM_TARGET
from .helpers import harvest_again, minimal_record, open_drafts, tracking
from .transform import MinimalRDMTransformer

TRANSFORMER = "rdm_minimal_doi"
DOI = "10.1234/harvested.1"


class DoiTransformer(MinimalRDMTransformer):
    """The minimal transformer, with a dc:identifier DOI as the record's external DOI."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        data = super().transform(record)
        dois = [
            element.text
            for element in record.metadata
            if element.tag.endswith("}identifier") and (element.text or "").startswith("10.")
        ]
        if dois:
            data["pids"] = {"doi": {"identifier": dois[0], "provider": "external"}}
        return data


@pytest.fixture(scope="module")
def app_config(app_config):
    from oaiharvest_test_support.rdm import rdm_config

    app_config["RDM_PERSISTENT_IDENTIFIERS"] = rdm_config(external_dois=True)[
        "RDM_PERSISTENT_IDENTIFIERS"
    ]
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: DoiTransformer,
    }
    return app_config


@pytest.fixture()
def owner(UserFixture, app, db):
    from invenio_users_resources.proxies import current_users_service

    user = UserFixture(email="harvester@example.org", password="harvester-account")
    user.create(app, db)
    db.session.commit()
    # Notifications (a community inclusion's) read their users from the users index.
    current_users_service.indexer.process_bulk_queue()
    current_search.flush_and_refresh("users")
    return user


@pytest.fixture()
def community(app, db, owner, rdm):
    from invenio_communities.proxies import current_communities

    item = current_communities.service.create(
        owner.identity,
        {
            "slug": "harvested",
            "access": {"visibility": "public", "record_policy": "open"},
            "metadata": {"title": "Harvested records"},
        },
    )
    current_search.flush_and_refresh("communities")
    return item


# -- helpers -----------------------------------------------------------------------------------


def harvester(provider, **options: Any):
    return make_harvester(
        provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4, **options
    )


def edit_at_source(corpus, oai_identifier: str, **metadata: list[str]) -> None:
    corpus.advance_clock(minutes=5)
    corpus.update(oai_identifier, metadata={**corpus.get(oai_identifier).metadata, **metadata})


def publish_locally(rdm, title: str, doi: str | None = None) -> str:
    """A record made in this repository by hand, not by the harvester."""
    data = minimal_record(title, family_name="Local", publication_date="2019")
    if doi:
        data["pids"] = {"doi": {"identifier": doi, "provider": "external"}}
    draft = rdm.create(system_identity, data)
    assert not draft.errors, draft.errors
    return rdm.publish(system_identity, draft.id).id


# -- owner and community -----------------------------------------------------------------------
def test_records_are_owned_by_the_configured_user(rdm, provider, owner):
    harvester(provider, owner=owner.email)  # an e-mail address names the user too
    assert current_harvester_service.read(system_identity, "test").data["owner"] == int(owner.id)

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 6
    for row in tracking().values():
        parent = rdm.read(system_identity, row.local_pid).data["parent"]
        assert parent["access"]["owned_by"] == {"user": str(owner.id)}


def test_a_deactivated_owner_stops_the_run_naming_the_setting(rdm, provider, owner):
    from invenio_accounts.models import User

    from oarepo_oaipmh_harvester.harvest.assembly import OwnerUnavailable

    harvester(provider, owner=int(owner.id))
    db.session.get(User, int(owner.id)).active = False
    db.session.commit()

    with pytest.raises(OwnerUnavailable, match=r"user \d+, does not exist or is not active"):
        run_harvest("test")
    assert tracking() == {}


def test_records_without_an_owner_belong_to_the_system(rdm, provider):
    harvester(provider)
    run_harvest("test")

    row = next(iter(tracking().values()))
    parent = rdm.read(system_identity, row.local_pid).data["parent"]
    assert parent["access"]["owned_by"] == {"user": "system"}


def test_new_records_are_included_in_the_community(rdm, provider, community, owner):
    harvester(provider, community="harvested", owner=int(owner.id))

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 6
    for row in tracking().values():
        parent = rdm.read(system_identity, row.local_pid).data["parent"]
        assert parent["communities"]["ids"] == [str(community.id)]


def test_records_join_the_communities_of_their_sets(rdm, provider, corpus, community, owner):
    """phys -> harvested, math -> second; a record in both joins both, one in phys:astro is
    in phys too; a record that moves into a set later joins its community then."""
    from invenio_communities.proxies import current_communities

    second = current_communities.service.create(
        owner.identity,
        {
            "slug": "second",
            "access": {"visibility": "public", "record_policy": "open"},
            "metadata": {"title": "Second"},
        },
    )
    current_search.flush_and_refresh("communities")
    first, *rest = sorted(corpus.live_identifiers())
    corpus.update(first, sets=("phys", "math"), datestamp=corpus.get(first).datestamp)
    harvester(provider, owner=int(owner.id), set_communities="phys = harvested\nmath = second")
    assert current_harvester_service.read(system_identity, "test").data["set_communities"] == {
        "phys": "harvested",
        "math": "second",
    }

    assert run_harvest("test").succeeded
    ids = {"harvested": str(community.id), "second": str(second.id)}
    for identifier, row in tracking().items():
        parent = rdm.read(system_identity, row.local_pid).data["parent"]
        sets = corpus.get(identifier).sets
        expected = set()
        if any(spec == "phys" or spec.startswith("phys:") for spec in sets):
            expected.add(ids["harvested"])
        if "math" in sets:
            expected.add(ids["second"])
        assert set(parent["communities"].get("ids") or []) == expected, (identifier, sets)

    moved = next(i for i in rest if "math" not in corpus.get(i).sets)
    edit_at_source(corpus, moved, title=["Moved into math"])
    corpus.update(moved, sets=("math",), datestamp=corpus.get(moved).datestamp)
    assert run_harvest("test").succeeded
    parent = rdm.read(system_identity, tracking()[moved].local_pid).data["parent"]
    assert ids["second"] in parent["communities"]["ids"]


def test_the_communities_of_sets_are_validated_on_save(rdm, provider, community):
    with pytest.raises(HarvesterValidationError) as unknown:
        harvester(provider, set_communities={"phys": "harvested", "math": "nowhere"})
    assert "No community 'nowhere'" in str(unknown.value.errors)
    with pytest.raises(HarvesterValidationError) as plain:
        make_harvester(provider.base_url, set_communities={"phys": "harvested"})
    assert "draft-enabled target" in str(plain.value.errors)


def test_a_community_is_validated_with_the_target(rdm, provider, community):
    with pytest.raises(HarvesterValidationError) as unknown:
        harvester(provider, community="no-such-community")
    assert "No community 'no-such-community'" in str(unknown.value.errors["community"])

    with pytest.raises(HarvesterValidationError) as plain:
        make_harvester(provider.base_url, community="harvested")  # the plain sample service
    assert "draft-enabled target" in str(plain.value.errors["community"])


def test_the_adapter_is_overridable_and_checked_against_the_service(rdm, provider):
    records = adapter_for(rdm, system_identity, options=TargetOptions(adapter=AdapterKind.RECORDS))
    assert isinstance(records, RecordsServiceTarget)

    with pytest.raises(HarvesterValidationError) as refused:
        make_harvester(provider.base_url, target_adapter="drafts")  # the plain sample service
    assert "cannot be written through drafts" in str(refused.value.errors["target_adapter"])

    with pytest.raises(HarvesterValidationError) as unknown:
        harvester(provider, local_drafts="somebody-wins")
    assert "harvest-wins, local-wins" in str(unknown.value.errors["local_drafts"])


# -- local drafts ------------------------------------------------------------------------------
def test_harvest_wins_names_the_replaced_draft_in_the_report(rdm, provider, corpus):
    harvester(provider)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[0]
    pid = tracking()[identifier].local_pid
    rdm.edit(system_identity, pid)

    edit_at_source(corpus, identifier, title=["Harvested title"])
    summary = harvest_again(corpus)

    assert summary.succeeded and summary.counts.updated == 1
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == "Harvested title"
    assert f"The local draft of record {pid} was replaced" in summary.message()
    assert "harvest-wins" in tracking()[identifier].warnings[0]
    assert open_drafts() == 0


def test_local_wins_is_a_harvester_setting(rdm, provider, corpus):
    harvester(provider, local_drafts="local-wins")
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[1]
    pid = tracking()[identifier].local_pid
    rdm.edit(system_identity, pid)
    title = rdm.read(system_identity, pid).data["metadata"]["title"]

    edit_at_source(corpus, identifier, title=["Harvested title"])
    summary = harvest_again(corpus)

    assert (summary.counts.updated, summary.counts.failed) == (0, 1)
    assert "(local wins)" in tracking()[identifier].errors[0]
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == title
    assert open_drafts() == 1  # the user's draft is left alone


# -- invalid drafts ----------------------------------------------------------------------------
def test_an_invalid_draft_is_kept_for_a_curator_and_continued_by_the_next_harvest(
    rdm, provider, corpus
):
    corpus.add(
        "oai:example.org:short",
        {"title": ["ab"], "creator": ["Novák, Jan"], "date": ["2020"]},
        datestamp=corpus.now(),
    )
    harvester(provider, invalid_drafts="keep")
    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (6, 1)
    row = tracking()["oai:example.org:short"]
    assert row.local_pid and "title" in row.errors[0] and "kept for a curator" in row.errors[1]
    # RDM saves the valid fields only; the whole harvested data is on the tracking row.
    draft = rdm.read_draft(system_identity, row.local_pid).data
    assert draft["metadata"]["creators"] and "title" not in draft["metadata"]
    assert row.transformed["metadata"]["title"] == "ab"
    assert open_drafts() == 1

    edit_at_source(corpus, "oai:example.org:short", title=["A long enough title"])
    summary = harvest_again(corpus)

    assert summary.succeeded and summary.counts.created == 1
    assert tracking()["oai:example.org:short"].local_pid == row.local_pid
    published = rdm.read(system_identity, row.local_pid).data
    assert published["metadata"]["title"] == "A long enough title"
    assert open_drafts() == 0


def test_a_source_tombstone_removes_a_kept_draft(rdm, provider, corpus):
    corpus.add(
        "oai:example.org:short",
        {"title": ["ab"], "creator": ["Novák, Jan"], "date": ["2020"]},
        datestamp=corpus.now(),
    )
    harvester(provider, invalid_drafts="keep")
    run_harvest("test")
    assert open_drafts() == 1

    corpus.advance_clock(minutes=5)
    corpus.delete("oai:example.org:short")
    summary = harvest_again(corpus)

    assert summary.succeeded and summary.counts.deleted == 1
    assert open_drafts() == 0


# -- DOIs --------------------------------------------------------------------------------------
def test_a_doi_held_by_another_record_fails_naming_the_holder_then_take_over(rdm, provider, corpus):
    holder = publish_locally(rdm, "Deposited here by hand", doi=DOI)
    identifier = sorted(corpus.live_identifiers())[2]
    edit_at_source(corpus, identifier, identifier=[DOI])
    harvester(provider)

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (5, 1)
    error = tracking()[identifier].errors[0]
    assert f"DOI {DOI} is already held by local record {holder}" in error
    assert "take-over" in error
    assert tracking()[identifier].local_pid is None
    kept = rdm.read(system_identity, holder).data
    assert kept["metadata"]["title"] == "Deposited here by hand"

    current_harvester_service.update(system_identity, "test", {"doi_conflicts": "take-over"})
    summary = run_harvest("test", identifiers=[identifier])

    assert summary.succeeded and (summary.counts.updated, summary.counts.created) == (1, 0)
    assert tracking()[identifier].local_pid == holder
    taken = rdm.read(system_identity, holder).data
    assert taken["metadata"]["title"] == corpus.get(identifier).metadata["title"][0]
    assert taken["pids"]["doi"]["identifier"] == DOI
    assert f"Took over local record {holder}" in summary.message()
    assert tracking()[identifier].adopted

    purged = run_harvest("test", purge=True, confirm="test")  # it never created the holder

    assert purged.counts.deleted == 5
    assert "1 local records that the harvester took over" in purged.message()
    assert rdm.read(system_identity, holder).data["metadata"]["title"] == taken["metadata"]["title"]


def test_a_doi_change_onto_another_records_doi_is_refused(rdm, provider, corpus):
    holder = publish_locally(rdm, "Deposited here by hand", doi=DOI)
    harvester(provider, doi_conflicts="take-over")  # take-over adopts, it never merges
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[3]
    pid = tracking()[identifier].local_pid

    edit_at_source(corpus, identifier, identifier=[DOI.upper()])  # DOIs ignore case
    summary = harvest_again(corpus)

    assert summary.counts.failed == 1
    assert f"already held by local record {holder}" in tracking()[identifier].errors[0]
    assert "pids" not in rdm.read(system_identity, pid).data or not rdm.read(
        system_identity, pid
    ).data["pids"].get("doi")


def test_a_new_record_looks_up_its_dois_holder_once(rdm, provider, corpus, monkeypatch):
    """The take-over decision and the conflict check share one look-up; a batch with a free
    DOI and a held one writes the free one and fails the other alone."""
    from oarepo_oaipmh_harvester.harvest.targets.drafts import DraftsServiceTarget

    holder = publish_locally(rdm, "Deposited here by hand", doi=DOI)
    free, held = sorted(corpus.live_identifiers())[:2]
    edit_at_source(corpus, free, identifier=["10.1234/harvested.free"])
    edit_at_source(corpus, held, identifier=[DOI])
    looked_up: list[str] = []
    holder_of = DraftsServiceTarget._holder_of

    def counting(self, doi):
        looked_up.append(doi)
        return holder_of(self, doi)

    monkeypatch.setattr(DraftsServiceTarget, "_holder_of", counting)
    harvester(provider)

    summary = run_harvest("test")

    assert sorted(looked_up) == sorted(["10.1234/harvested.free", DOI])
    assert (summary.counts.created, summary.counts.failed) == (5, 1)
    assert f"already held by local record {holder}" in tracking()[held].errors[0]
    created = rdm.read(system_identity, tracking()[free].local_pid).data
    assert created["pids"]["doi"]["identifier"] == "10.1234/harvested.free"


# -- PID registration --------------------------------------------------------------------------
@pytest.fixture()
def sent_tasks():
    """(task name, args, kwargs) of every Celery task sent or run eagerly."""
    from celery.signals import before_task_publish, task_prerun

    sent: list[tuple[str, list, dict]] = []

    def published(sender=None, body=None, **kwargs):
        sent.append((sender, list(body[0]), dict(body[1])))

    def run_eagerly(task=None, args=None, kwargs=None, **extra):
        if task.request.is_eager:
            sent.append((task.name, list(args), dict(kwargs)))

    before_task_publish.connect(published, weak=False)
    task_prerun.connect(run_eagerly, weak=False)
    yield sent
    before_task_publish.disconnect(published)
    task_prerun.disconnect(run_eagerly)


PID_TASK = "invenio_rdm_records.services.pids.tasks.register_or_update_pid"


def pid_status(record_pids: dict[str, Any], scheme: str) -> PIDStatus:
    """The PID store's status of a record's PID (RDM's pid types are its schemes)."""
    return PersistentIdentifier.get(scheme, record_pids[scheme]["identifier"]).status


def test_harvested_dois_and_oai_ids_are_registered_in_the_batch(rdm, provider, corpus, sent_tasks):
    """RDM queues a task per PID of each published record; for PIDs that live in the local
    PID store only (an external DOI, the OAI id) the harvest registers them in the record's
    transaction, and no task is left for a worker."""
    with_doi = sorted(corpus.live_identifiers())[0]
    edit_at_source(corpus, with_doi, identifier=[DOI])
    harvester(provider)

    summary = run_harvest("test")

    assert summary.counts.created == 6
    pids = rdm.read(system_identity, tracking()[with_doi].local_pid).data["pids"]
    assert pids["doi"] == {"identifier": DOI, "provider": "external"}
    assert pid_status(pids, "doi") is PIDStatus.REGISTERED  # RESERVED until a task ran
    for row in tracking().values():
        oai = rdm.read(system_identity, row.local_pid).data["pids"]
        assert pid_status(oai, "oai") is PIDStatus.REGISTERED
    assert [task for task in sent_tasks if task[0] == PID_TASK] == []

    edit_at_source(corpus, with_doi, title=["Edited at the source"])
    summary = harvest_again(corpus)  # publish again: RDM would update each PID in a task

    assert summary.counts.updated == 1
    assert [task for task in sent_tasks if task[0] == PID_TASK] == []


def test_pids_registered_in_the_batch_are_read_together(rdm, sent_tasks):
    """Registering a published record's DOI and OAI id in its transaction reads both from
    the PID store in one statement (RDM's providers read each on its own)."""
    from oarepo_oaipmh_harvester.harvest.targets.rdm_pids import PidRegistrationInBatch
    from oarepo_oaipmh_harvester.harvest.unit_of_work import BulkIndexingUnitOfWork

    data = minimal_record("Registered in the batch")
    data["pids"] = {"doi": {"identifier": DOI, "provider": "external"}}
    reads: list[str] = []

    def note_reads(conn, cursor, statement, parameters, context, executemany):
        if "FROM pidstore_pid" in statement:
            reads.append(statement)

    with BulkIndexingUnitOfWork(db.session) as uow:
        draft = rdm.create(system_identity, data, uow=uow)
        since = uow.mark()
        published = rdm.publish(system_identity, draft.id, uow=uow)
        event.listen(db.engine, "before_cursor_execute", note_reads)
        try:
            PidRegistrationInBatch(rdm).take_over(uow, since, published._record)
        finally:
            event.remove(db.engine, "before_cursor_execute", note_reads)
        uow.commit()

    assert len(reads) == 1
    pids = rdm.read(system_identity, published.id).data["pids"]
    assert pid_status(pids, "doi") is PIDStatus.REGISTERED
    assert pid_status(pids, "oai") is PIDStatus.REGISTERED
    assert [task for task in sent_tasks if task[0] == PID_TASK] == []


def test_a_pid_of_a_remote_provider_is_left_to_rdms_task(
    app, rdm, provider, corpus, sent_tasks, monkeypatch
):
    """A provider that registers at a remote service (DataCite, Crossref) overrides PIDProvider's
    register and update: its PIDs stay with the worker's task, after the commit."""
    from invenio_rdm_records.services.pids.providers import ExternalPIDProvider

    registered: list[str] = []

    class RemoteRegistry(ExternalPIDProvider):
        """Registers its DOIs at a remote service first, as DataCite's provider does."""

        def register(self, pid, **kwargs):
            registered.append(pid.pid_value)
            return super().register(pid, **kwargs)

        def update(self, pid, **kwargs):
            raise AssertionError("only a registered PID is updated")

    providers = [
        RemoteRegistry("external", "doi") if p.name == "external" else p
        for p in app.config["RDM_PERSISTENT_IDENTIFIER_PROVIDERS"]
    ]
    monkeypatch.setitem(app.config, "RDM_PERSISTENT_IDENTIFIER_PROVIDERS", providers)
    with_doi = sorted(corpus.live_identifiers())[0]
    edit_at_source(corpus, with_doi, identifier=[DOI])
    harvester(provider)

    summary = run_harvest("test")

    assert summary.counts.created == 6
    pid = tracking()[with_doi].local_pid
    pids = rdm.read(system_identity, pid).data["pids"]
    assert [task for task in sent_tasks if task[0] == PID_TASK] == [(PID_TASK, [pid, "doi"], {})]
    assert registered == [DOI]  # by the task, after the commit
    assert pid_status(pids, "doi") is PIDStatus.REGISTERED


# -- deleted by a curator ----------------------------------------------------------------------
def test_a_record_deleted_by_a_curator_is_reported_not_resurrected(rdm, provider, corpus):
    harvester(provider)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[4]
    pid = tracking()[identifier].local_pid
    rdm.delete_record(system_identity, pid, {"note": "Withdrawn by the curator."})

    edit_at_source(corpus, identifier, title=["Changed at the source"])
    summary = harvest_again(corpus)

    assert summary.counts.failed == 1 and summary.counts.updated == 0
    error = tracking()[identifier].errors[0]
    assert f"Record {pid} was deleted in this repository" in error
    assert "Withdrawn by the curator." in error
    with pytest.raises(RecordDeletedException):
        rdm.read(system_identity, pid)
    current_search.flush_and_refresh(RDMRecord.index._name)
    assert pid not in {hit["id"] for hit in rdm.search(system_identity).hits}


def test_sets_into_communities_and_pausing_on_every_surface(
    app, client, rdm, provider, community, owner, tmp_path
):
    """REST, the command line and fixtures set the set-to-community mapping and `active`,
    and each refuses a community that does not exist, naming the field."""
    from invenio_access.models import ActionUsers
    from invenio_access.permissions import superuser_access
    from invenio_accounts.testutils import login_user_via_session

    from oarepo_oaipmh_harvester.cli import oai
    from oarepo_oaipmh_harvester.fixtures import load_harvesters

    db.session.add(ActionUsers.allow(superuser_access, user=owner.user))
    db.session.commit()
    login_user_via_session(client, email=owner.email)
    # The API application of this module: its routes have no /api prefix.
    body = harvester_data(
        "rest", provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER,
        set_communities={"phys": "harvested"}, active=False,
    )  # fmt: skip
    res = client.post("/oai-harvest/harvesters?check=false", json=body)
    assert res.status_code == 201, res.json
    assert (res.json["set_communities"], res.json["active"]) == ({"phys": "harvested"}, False)
    res = client.put(
        "/oai-harvest/harvesters/rest?check=false",
        json={**body, "set_communities": {"math": "nowhere"}, "active": True},
    )
    assert res.status_code == 400
    assert [e["field"] for e in res.json["errors"]] == ["set_communities"]
    assert "math: No community 'nowhere'" in str(res.json["errors"])

    runner = app.test_cli_runner()
    common = ["--base-url", provider.base_url, "--metadata-prefix", "oai_dc", "--no-check"]
    result = runner.invoke(
        oai,
        ["harvester", "create", "--id", "cli", "--name", "CLI", *common,
         "--target", RDM_TARGET, "--transformer", TRANSFORMER,
         "--set-community", "phys = harvested", "--set-community", "math = harvested",
         "--paused"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    item = current_harvester_service.read(system_identity, "cli").data
    assert item["set_communities"] == {"phys": "harvested", "math": "harvested"}
    assert item["active"] is False
    result = runner.invoke(oai, ["harvester", "update", "cli", "--set-community", "x = nowhere"])
    assert result.exit_code != 0 and "--set-community" in result.output, result.output
    assert "No community 'nowhere'" in result.output

    fixture = tmp_path / "oai_harvesters.yaml"
    fixture.write_text(
        f"- id: fixture\n  name: Fixture\n  base_url: {provider.base_url}\n"
        f"  metadata_prefix: oai_dc\n  target: {RDM_TARGET}\n  transformer: {TRANSFORMER}\n"
        "  active: false\n  set_communities:\n    phys: harvested\n"
    )
    result = load_harvesters(fixture, check=False)
    assert not result.errors, result.errors
    item = current_harvester_service.read(system_identity, "fixture").data
    assert (item["set_communities"], item["active"]) == ({"phys": "harvested"}, False)
