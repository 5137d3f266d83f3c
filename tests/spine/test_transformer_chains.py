"""Transformers with options and chains of them, as a site configures them."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree

from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.transformers import (
    DublinCoreTransformer,
    TransformerChain,
    TransformerRegistry,
    TransformError,
    with_transform_warnings,
)

DC = """<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"
    xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:title>Spectral lattice models</dc:title>
  <dc:creator>Novák, Jan</dc:creator>
  <dc:subject>lattice</dc:subject>
</oai_dc:dc>"""


def record(identifier: str = "oai:x:1") -> OAIRecord:
    return OAIRecord(identifier, "2024-01-01", False, (), metadata=etree.fromstring(DC))


class Flattening:
    """A first step of a site's own: single values instead of lists, warns about subjects."""

    def __init__(self, keep: tuple[str, ...] = ("title", "creator")) -> None:
        self.keep = keep
        self.last_warnings: list[str] = []

    def transform(self, rec: OAIRecord) -> dict[str, Any]:
        dc = DublinCoreTransformer().transform(rec)["metadata"]
        self.last_warnings = [f"{key} dropped" for key in dc if key not in self.keep]
        return {"metadata": {key: dc[key][0] for key in self.keep if key in dc}}


class Community:
    """A later step: files the record under a community and says so."""

    def __init__(self, community: str, refuse: str | None = None) -> None:
        self.community = community
        self.refuse = refuse
        self.last_warnings: list[str] = []

    def adjust(self, rec: OAIRecord, data: dict[str, Any]) -> dict[str, Any]:
        self.last_warnings = [f"filed under {self.community}"]
        if rec.identifier == self.refuse:
            raise TransformError(f"{rec.identifier} is not for {self.community}")
        return {**data, "community": self.community}


class Stamp:
    """A later step without warnings of its own (no last_warnings attribute at all)."""

    def adjust(self, rec: OAIRecord, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "source": rec.identifier}


CONFIGURED = {
    "flat": Flattening,
    "flat-titles": {"transformer": "flat", "options": {"keep": ("title",)}},
    "site": {
        "chain": [
            "flat",
            {"transformer": Community, "options": {"community": "physics"}},
            Stamp,
        ]
    },
    "site-on-titles": {"chain": ["flat-titles", {"transformer": Community, "options": {}}]},
    "dc-stamped": {"chain": ["oarepo_oaipmh_harvester.transformers:DublinCoreTransformer", Stamp]},
}


def test_a_chain_passes_the_data_on_and_collects_every_steps_warnings():
    chain = TransformerRegistry(CONFIGURED).get("site")

    assert isinstance(chain, TransformerChain)
    assert chain.transform(record()) == {
        "metadata": {"title": "Spectral lattice models", "creator": "Novák, Jan"},
        "community": "physics",
        "source": "oai:x:1",
    }
    assert chain.last_warnings == ["subject dropped", "filed under physics"]
    # What the writer stores on the tracking row.
    assert with_transform_warnings(["protocol note"], chain) == [
        "protocol note",
        "subject dropped",
        "filed under physics",
    ]


def test_options_make_a_named_transformer_and_a_step_may_name_a_configured_one():
    registry = TransformerRegistry(CONFIGURED)

    titles_only = registry.get("flat-titles")
    assert isinstance(titles_only, Flattening) and titles_only.keep == ("title",)
    assert titles_only.transform(record()) == {"metadata": {"title": "Spectral lattice models"}}

    with pytest.raises(ValueError, match=r"'site-on-titles', step 2: options .*community"):
        registry.get("site-on-titles")  # Community needs its option
    fixed = TransformerRegistry(
        {
            **CONFIGURED,
            "site-on-titles": {
                "chain": [
                    {"transformer": "flat-titles", "options": {"keep": ("creator",)}},
                    {"transformer": Community, "options": {"community": "math"}},
                ]
            },
        }
    ).get("site-on-titles")
    assert fixed.transform(record()) == {
        "metadata": {"creator": "Novák, Jan"},  # the step's options win over the named ones
        "community": "math",
    }


def test_a_step_that_names_a_chain_brings_in_its_steps_and_import_strings_work():
    registry = TransformerRegistry(
        {**CONFIGURED, "site-and-more": {"chain": ["site", Stamp]}},
    )

    chain = registry.get("site-and-more")
    assert [type(step) for step in chain.steps] == [Flattening, Community, Stamp, Stamp]
    stamped = registry.get("dc-stamped").transform(record())
    assert stamped["source"] == "oai:x:1" and stamped["metadata"]["subject"] == ["lattice"]


def test_a_transform_error_in_any_step_fails_the_record_and_warnings_start_afresh():
    chain = TransformerRegistry(
        {
            "flat": Flattening,
            "site": {
                "chain": [
                    "flat",
                    {
                        "transformer": Community,
                        "options": {"community": "physics", "refuse": "oai:x:bad"},
                    },
                ]
            },
        }
    ).get("site")

    with pytest.raises(TransformError, match="oai:x:bad is not for physics"):
        chain.transform(record("oai:x:bad"))
    chain.transform(record())
    assert chain.last_warnings == ["subject dropped", "filed under physics"]

    no_metadata = OAIRecord("oai:x:empty", "2024-01-01", False, (), metadata=None)
    with pytest.raises(TransformError, match="no metadata"):
        chain.transform(no_metadata)
    assert chain.last_warnings == []


def test_every_get_makes_new_step_instances():
    registry = TransformerRegistry(CONFIGURED)

    one, other = registry.get("site"), registry.get("site")
    assert one is not other
    assert all(a is not b for a, b in zip(one.steps, other.steps, strict=True))


@pytest.mark.parametrize(
    ("configured", "error", "message"),
    [
        (
            {"site": {"chain": ["flat", "oai_datacite_rmd"]}},
            KeyError,
            r"'site', step 2: unknown transformer 'oai_datacite_rmd'; known: .*flat",
        ),
        (
            {"site": {"chain": ["flat", "my_site.adjust:Adjust"]}},
            KeyError,
            r"'site', step 2: cannot import 'my_site.adjust:Adjust'",
        ),
        (
            {"site": {"chain": ["flat", "oai_dc"]}},
            ValueError,
            r"'site', step 2: .*DublinCoreTransformer.* has no adjust\(record, data\) method",
        ),
        ({"site": {"chain": [Stamp]}}, ValueError, r"has no transform\(record\) method"),
        ({"site": {"chain": []}}, ValueError, "non-empty list"),
        ({"site": {"chain": "flat"}}, ValueError, "non-empty list"),
        (
            {"site": {"transformer": "flat", "chain": ["flat"]}},
            ValueError,
            r"'transformer' \(and optional 'options'\) or only 'chain'",
        ),
        (
            {"site": {"transformer": "flat", "options": {"colour": "red"}}},
            ValueError,
            r"options \['colour'\] of .*Flattening",
        ),
        (
            {"site": {"transformer": "flat", "options": ["keep"]}},
            ValueError,
            "'options' must be a mapping",
        ),
        (
            {"site": {"transformer": {"chain": ["flat", Stamp]}, "options": {"keep": ()}}},
            ValueError,
            "options are for one transformer, not for a chain",
        ),
        (
            {"a": {"chain": ["flat", "b"]}, "b": {"chain": ["a"]}, "site": "a"},
            ValueError,
            r"refer to each other \(site -> a -> b -> a\)",
        ),
        (
            {"site": {"transformer": Stamp(), "options": {"x": 1}}},
            ValueError,
            "options need a class",
        ),
    ],
)
def test_a_wrong_configuration_is_a_clear_error_when_the_name_is_asked_for(
    configured, error, message
):
    registry = TransformerRegistry({"flat": Flattening, **configured})

    assert "site" in registry.names()  # listed: the configuration is read only on use
    with pytest.raises(error, match=message):
        registry.get("site")
