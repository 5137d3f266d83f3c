"""Response parsing: malformed documents, forbidden characters, encodings, hostile XML."""

from __future__ import annotations

import pytest
from lxml import etree

from oarepo_oaipmh_harvester.protocol.errors import MalformedResponse
from oarepo_oaipmh_harvester.protocol.parsing import detect_encoding, parse_document

from .wire import Reply, envelope, record, records_page, token

DC = "{http://purl.org/dc/elements/1.1/}"


def title(record) -> str:
    return record.metadata.find(f"{DC}title").text


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (records_page(record("a"))[:-40], "not well-formed"),
        ("<html><body><h1>Service Unavailable</h1><br></body></html>", "not well-formed"),
        ("<html><body>Maintenance</body></html>", "not an OAI-PMH 2.0 document"),
        ('<OAI-PMH xmlns="http://www.openarchives.org/OAI/1.1/"/>', "not an OAI-PMH 2.0"),
        ("", "empty"),
        ("   \n", "empty"),
    ],
)
def test_malformed_response(server, client, body: str, expected: str) -> None:
    server.answer(lambda hit: Reply(body=body, headers={"Content-Type": "text/xml"}))
    with pytest.raises(MalformedResponse, match=expected) as caught:
        client.list_records("oai_dc")
    assert server.base_url in str(caught.value)


def test_malformed_second_page_raises_rather_than_ending_silently(server, client) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption=token("t1")),
        {"t1": records_page(record("b"), record("c"))[:-60]},
    )
    stream = client.list_records("oai_dc")
    assert next(stream).identifier == "a"
    with pytest.raises(MalformedResponse, match="not well-formed"):
        next(stream)


def test_forbidden_control_characters_are_removed_and_reported(server, client) -> None:
    server.answer(
        lambda hit: records_page(
            record("clean", "Žluťoučký kůň 数据 Ωmega"),
            record("dirty", "Vertical\x0btab and unit\x1fseparator\x1f"),
            record("referenced", "escaped&#x1A;control&#11;", raw_title=True),
            record("c1", "next line\x85 is legal XML"),
        )
    )
    clean, dirty, referenced, c1 = client.list_records("oai_dc")
    assert clean.errors == () and title(clean) == "Žluťoučký kůň 数据 Ωmega"
    assert title(dirty) == "Verticaltab and unitseparator"
    assert dirty.errors == ("removed 3 characters that XML forbids (U+000B, U+001F)",)
    assert title(referenced) == "escapedcontrol"
    assert referenced.errors == ("removed 2 characters that XML forbids (U+000B, U+001A)",)
    assert "\x0b" not in dirty.xml and "Verticaltab" in dirty.xml
    # C1 controls are legal XML 1.0: kept as sent, nothing to report
    assert c1.errors == () and title(c1) == "next line\x85 is legal XML"


def test_forbidden_characters_in_attributes_and_headers(server, client) -> None:
    body = records_page(
        record("x\x01y", sets=["set\x02"]),
        record("ok"),
    ).replace("<dc:title>", '<dc:title xml:lang="e\x03n">', 1)
    server.answer(lambda hit: body)
    first, second = client.list_records("oai_dc")
    assert first.identifier == "xy" and first.set_specs == ("set",)
    assert (
        first.metadata.find(f"{DC}title").get("{http://www.w3.org/XML/1998/namespace}lang") == "en"
    )
    assert first.errors == ("removed 3 characters that XML forbids (U+0001, U+0002, U+0003)",)
    assert second.errors == ()


def test_invalid_bytes_become_replacement_characters(server, client) -> None:
    body = records_page(record("bad", "caf\u00e9 PLACEHOLDER"), record("good", "café")).encode(
        "utf-8"
    )
    body = body.replace(b"PLACEHOLDER", b"\xff\xfe!")
    server.answer(lambda hit: Reply(body=body, headers={"Content-Type": "text/xml; charset=utf-8"}))
    bad, good = client.list_records("oai_dc")
    assert title(bad) == "café \ufffd\ufffd!"
    assert bad.errors == ("replaced 2 bytes that are not valid utf-8 with U+FFFD",)
    assert good.errors == () and title(good) == "café"


def test_declared_encoding_is_respected(server, client) -> None:
    text = records_page(record("a", "Žluťoučký kůň úpěl")).replace(
        '<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="windows-1250"?>'
    )
    body = text.encode("windows-1250")
    # The HTTP header lies (a common server default); the document's declaration wins.
    server.answer(
        lambda hit: Reply(body=body, headers={"Content-Type": "text/xml; charset=ISO-8859-1"})
    )
    (only,) = client.list_records("oai_dc")
    assert title(only) == "Žluťoučký kůň úpěl" and only.errors == ()


def test_http_charset_is_used_without_declaration(server, client) -> None:
    text = records_page(record("a", "Łódź żółć")).split("\n", 1)[1]  # no XML declaration
    body = text.encode("iso-8859-2")
    server.answer(
        lambda hit: Reply(body=body, headers={"Content-Type": "text/xml; charset=ISO-8859-2"})
    )
    (only,) = client.list_records("oai_dc")
    assert title(only) == "Łódź żółć"


def test_utf16_with_bom(server, client) -> None:
    text = records_page(record("a", "数据 Ωmega")).replace("UTF-8", "UTF-16")
    body = text.encode("utf-16")
    server.answer(lambda hit: Reply(body=body, headers={"Content-Type": "text/xml"}))
    (only,) = client.list_records("oai_dc")
    assert title(only) == "数据 Ωmega"


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b'<?xml version="1.0" encoding="ISO-8859-2"?><a/>', None, "iso8859-2"),
        (b"<a/>", "text/xml; charset=windows-1250", "cp1250"),
        (b"<a/>", "text/xml", "utf-8"),
        (b'<?xml version="1.0" encoding="bogus"?><a/>', "text/xml; charset=latin-1", "iso8859-1"),
        (b"\xef\xbb\xbf<a/>", "text/xml; charset=latin-1", "utf-8"),
    ],
)
def test_detect_encoding(body: bytes, content_type: str | None, expected: str) -> None:
    assert detect_encoding(body, content_type) == expected


def test_external_entities_are_not_resolved(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    body = (
        f'<?xml version="1.0"?><!DOCTYPE OAI-PMH [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        + envelope("<ListRecords>" + record("a", "&xxe;", raw_title=True) + "</ListRecords>").split(
            "\n", 1
        )[1]
    )
    document = parse_document(body.encode("utf-8"))
    assert b"TOP-SECRET" not in etree.tostring(document.root)


def test_entity_expansion_bomb_is_not_expanded() -> None:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    )
    body = (
        f'<?xml version="1.0"?><!DOCTYPE OAI-PMH [{entities}]>'
        + envelope(
            "<ListRecords>" + record("a", "&lol9;", raw_title=True) + "</ListRecords>"
        ).split("\n", 1)[1]
    )
    try:
        document = parse_document(body.encode("utf-8"))
    except MalformedResponse as error:  # libxml2 refuses the amplification outright
        assert "entity" in str(error).lower()
    else:  # or leaves the references unexpanded: nothing grew
        serialized = etree.tostring(document.root, encoding="unicode")
        assert "lollol" not in serialized
        assert len(serialized) < len(body)


def test_page_is_parsed_once(server, client) -> None:
    server.answer(lambda hit: records_page(record("a")))
    page = client._harvest({"verb": "ListRecords", "metadataPrefix": "oai_dc"})
    assert page.xml is page.xml
    assert page.http_response.body == b""  # the bytes are not kept next to the tree


def test_dublin_core_without_its_oai_dc_element_is_read_as_one_record() -> None:
    """A provider (recorded by B2FIND: Denmark's Slots- og Kulturstyrelsen) put its dc: and
    dcterms: elements straight into <metadata>: the record was read as its first element,
    a dc:identifier, and failed for "no Dublin Core elements". Any other several elements
    are still read by the first."""
    from oarepo_oaipmh_harvester.protocol.items import record_from_xml

    unwrapped = record_from_xml(
        '<record xmlns="http://www.openarchives.org/OAI/2.0/"><header><identifier>oai:x:1'
        "</identifier><datestamp>2020-03-06</datestamp></header><metadata"
        ' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/">'
        "<dc:identifier>x</dc:identifier><dc:title>080112-47 Mejlø</dc:title>"
        "<dcterms:spatial>Mejlø</dcterms:spatial><dc:creator>Arkæologi Sydfyn</dc:creator>"
        "</metadata></record>"
    )
    assert unwrapped.metadata.tag == "{http://www.openarchives.org/OAI/2.0/oai_dc/}dc"
    assert [etree.QName(child).localname for child in unwrapped.metadata] == [
        "identifier",
        "title",
        "spatial",
        "creator",
    ]
    assert unwrapped.errors == (
        "<metadata> holds Dublin Core elements without their oai_dc:dc element; read as one",
    )
    two = record_from_xml(
        '<record xmlns="http://www.openarchives.org/OAI/2.0/"><header><identifier>oai:x:2'
        "</identifier><datestamp>2020-03-06</datestamp></header><metadata>"
        '<a xmlns="urn:a"/><b xmlns="urn:b"/></metadata></record>'
    )
    assert two.metadata.tag == "{urn:a}a"
    assert two.errors == ("<metadata> has 2 elements instead of one; using the first",)
