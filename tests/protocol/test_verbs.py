"""Identify, GetRecord, ListSets, ListMetadataFormats and the OAI-PMH error codes."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest

from oarepo_oaipmh_harvester.protocol import errors as oai_errors
from oarepo_oaipmh_harvester.protocol.datestamps import Granularity
from oarepo_oaipmh_harvester.protocol.errors import (
    BadArgument,
    BadResumptionToken,
    BadVerb,
    CannotDisseminateFormat,
    ForbiddenAddress,
    IdDoesNotExist,
    MalformedResponse,
    NoMetadataFormats,
    NoProgress,
    NoRecordsMatch,
    NoSetHierarchy,
    OAIHarvestError,
    OAIProtocolError,
    OAITransportError,
    RedirectNotAllowed,
    RequestDeadlineExceeded,
    TokenLoopError,
    TooManyPages,
    TooManyRestarts,
)

from .wire import envelope, error, identify, list_page, record, token


def test_identify_profile(server, client) -> None:
    server.answer(lambda hit: identify())
    profile = client.identify()
    assert profile.repository_name == "Canned"
    assert profile.base_url == "http://example.org/oai"
    assert profile.protocol_version == "2.0"
    assert profile.granularity is Granularity.SECONDS
    assert profile.deleted_record == "persistent"
    assert profile.earliest_datestamp == "2001-02-03T04:05:06Z"
    assert profile.response_date == datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    assert profile.compression == ("gzip", "deflate")
    assert profile.admin_emails == ("a@example.org", "b@example.org")
    assert profile.errors == ()
    assert server.hits[0].args == {"verb": "Identify"}


def test_identify_day_granularity_and_offset_response_date(server, client) -> None:
    server.answer(
        lambda hit: identify(granularity="YYYY-MM-DD", response_date="2024-06-01T14:00:00+02:00")
    )
    profile = client.identify()
    assert profile.granularity is Granularity.DAY
    assert profile.response_date == datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def test_identify_without_granularity_fails_instead_of_guessing(server, client) -> None:
    server.answer(lambda hit: identify(granularity=None))
    with pytest.raises(MalformedResponse, match="does not state a granularity"):
        client.identify()
    server.answer(lambda hit: identify(granularity="YYYY"))
    with pytest.raises(MalformedResponse, match="Unknown datestamp granularity 'YYYY'"):
        client.identify()


def test_identify_tolerates_odd_deleted_record(server, client) -> None:
    server.answer(lambda hit: identify(deleted_record="sometimes"))
    profile = client.identify()
    assert profile.deleted_record == "no"
    assert len(profile.errors) == 1 and "sometimes" in profile.errors[0]


def test_identify_without_valid_response_date_fails(server, client) -> None:
    server.answer(lambda hit: identify(response_date="last tuesday"))
    with pytest.raises(MalformedResponse, match="responseDate"):
        client.identify()


def test_identify_of_a_non_oai_endpoint(server, client) -> None:
    server.answer(lambda hit: envelope("<Foo/>"))
    with pytest.raises(MalformedResponse, match="<Identify>"):
        client.identify()


def test_get_record(server, client) -> None:
    server.answer(
        lambda hit: envelope(
            f"<GetRecord>{record('oai:x:1', 'Title', sets=['a', 'a:b'])}</GetRecord>"
        )
    )
    found = client.get_record("oai:x:1", "oai_dc")
    assert server.hits[0].args == {
        "verb": "GetRecord",
        "identifier": "oai:x:1",
        "metadataPrefix": "oai_dc",
    }
    assert found.identifier == "oai:x:1"
    assert found.set_specs == ("a", "a:b")
    assert found.metadata.tag == "{http://www.openarchives.org/OAI/2.0/oai_dc/}dc"
    assert found.xml.startswith("<record") and found.xml.endswith("</record>")
    assert 'xmlns="http://www.openarchives.org/OAI/2.0/"' in found.xml  # self-contained
    assert found.datestamp_value == datetime(2024, 1, 1, tzinfo=UTC)
    assert found.header.identifier == "oai:x:1"


def test_get_record_tombstone(server, client) -> None:
    server.answer(lambda hit: envelope(f"<GetRecord>{record('gone', deleted=True)}</GetRecord>"))
    found = client.get_record("gone", "oai_dc")
    assert found.deleted and found.metadata is None and found.errors == ()


def test_get_record_unknown_identifier(server, client) -> None:
    server.answer(lambda hit: envelope(error("idDoesNotExist", "No such record")))
    with pytest.raises(IdDoesNotExist) as caught:
        client.get_record("nope", "oai_dc")
    assert caught.value.code == "idDoesNotExist"
    assert caught.value.message == "No such record"
    assert "idDoesNotExist" in str(caught.value) and "No such record" in str(caught.value)


def test_list_sets_follows_tokens(server, client) -> None:
    def page(*specs: str, resumption: str = "") -> str:
        return list_page(
            "ListSets",
            [f"<set><setSpec>{s}</setSpec><setName>Set {s}</setName></set>" for s in specs],
            resumption,
        )

    server.answer_tokens(page("a", "a:b", resumption=token("t1")), {"t1": page("c")})
    sets = list(client.list_sets())
    assert [(s.spec, s.name) for s in sets] == [("a", "Set a"), ("a:b", "Set a:b"), ("c", "Set c")]
    assert server.hits[1].args == {"verb": "ListSets", "resumptionToken": "t1"}


def test_list_sets_without_set_hierarchy_is_empty(server, client) -> None:
    server.answer(lambda hit: envelope(error("noSetHierarchy", "no sets")))
    assert list(client.list_sets()) == []


def test_list_metadata_formats(server, client) -> None:
    server.answer(
        lambda hit: list_page(
            "ListMetadataFormats",
            [
                "<metadataFormat><metadataPrefix>oai_dc</metadataPrefix>"
                "<schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</schema>"
                "<metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace>"
                "</metadataFormat>",
                "<metadataFormat><metadataPrefix>marc21</metadataPrefix><schema>s</schema>"
                "<metadataNamespace>n</metadataNamespace></metadataFormat>",
            ],
        )
    )
    formats = client.list_metadata_formats()
    assert [f.prefix for f in formats] == ["oai_dc", "marc21"]
    assert formats[0].namespace == "http://www.openarchives.org/OAI/2.0/oai_dc/"
    assert formats[1].schema == "s"
    client.list_metadata_formats("oai:x:1")
    assert server.hits[1].args == {"verb": "ListMetadataFormats", "identifier": "oai:x:1"}


def test_list_metadata_formats_errors(server, client) -> None:
    server.answer(lambda hit: envelope(error("noMetadataFormats")))
    assert client.list_metadata_formats("oai:x:1") == []
    server.answer(lambda hit: envelope(error("idDoesNotExist")))
    with pytest.raises(IdDoesNotExist):
        client.list_metadata_formats("oai:x:2")


@pytest.mark.parametrize(
    ("code", "exception"),
    [
        ("badArgument", BadArgument),
        ("badResumptionToken", BadResumptionToken),
        ("badVerb", BadVerb),
        ("cannotDisseminateFormat", CannotDisseminateFormat),
        ("idDoesNotExist", IdDoesNotExist),
        ("noRecordsMatch", NoRecordsMatch),
        ("noMetadataFormats", NoMetadataFormats),
        ("noSetHierarchy", NoSetHierarchy),
    ],
)
def test_error_codes_map_to_exceptions(server, client, code, exception) -> None:
    server.answer(lambda hit: envelope(error(code, "details")))
    with pytest.raises(exception) as caught:
        client.get_record("x", "oai_dc")
    assert caught.value.code == exception.code == code
    assert caught.value.message == "details"
    assert isinstance(caught.value, OAIProtocolError)


def test_unknown_error_code(server, client) -> None:
    server.answer(lambda hit: envelope(error("quotaExceeded", "slow down")))
    with pytest.raises(OAIProtocolError) as caught:
        client.get_record("x", "oai_dc")
    assert type(caught.value) is OAIProtocolError
    assert caught.value.code == "quotaExceeded"
    assert "quotaExceeded" in str(caught.value) and "slow down" in str(caught.value)


def test_several_errors_in_one_response(server, client) -> None:
    server.answer(
        lambda hit: envelope(
            error("badArgument", "from is bad") + error("badArgument", "until too")
        )
    )
    with pytest.raises(BadArgument) as caught:
        client.list_records("oai_dc")
    assert "from is bad" in caught.value.message and "until too" in caught.value.message


@pytest.mark.parametrize(
    "raised",
    [
        IdDoesNotExist("gone", url="http://x/oai"),
        OAIProtocolError("odd", code="weird", url="http://x/oai"),
        OAITransportError("HTTP 503", url="http://x/oai", status_code=503),
        MalformedResponse("bad xml", url="http://x/oai"),
        TokenLoopError("loop", url="http://x/oai", token="t"),
        TooManyRestarts("restarts", url="http://x/oai", restarts=3),
        ForbiddenAddress.for_address("169.254.169.254", "169.254.0.0/16", host="meta", url="u"),
        RedirectNotAllowed("moved", url="u", status_code=302, target_origin="http://y:80"),
        RequestDeadlineExceeded("slow", url="u", deadline=5.0),
        TooManyPages("long", url="u", token="t", pages=9),
        NoProgress("stuck", url="u", token="t", limit="completeListSize"),
    ],
)
def test_errors_pickle_with_their_attributes(raised: OAIHarvestError) -> None:
    copy = pickle.loads(pickle.dumps(raised))
    assert type(copy) is type(raised)
    assert str(copy) == str(raised)
    assert copy.__dict__ == raised.__dict__


def test_every_error_is_an_oai_harvest_error() -> None:
    for name in oai_errors.__all__:
        value = getattr(oai_errors, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, OAIHarvestError)
