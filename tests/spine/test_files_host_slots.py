"""Where a harvest counts its downloads at once per host: the site's Redis (InvenioRDM's cache)
so that OAI_HARVESTER_FILES_PER_HOST holds across worker processes, else each process."""

from __future__ import annotations

import logging

from oarepo_oaipmh_harvester import config as defaults
from oarepo_oaipmh_harvester.harvest.files_fetching import host_slots_for
from oarepo_oaipmh_harvester.protocol.host_slots import ProcessHostSlots, RedisHostSlots

SITE = {
    "OAI_HARVESTER_FILES_PER_HOST": 3,
    "OAI_HARVESTER_FILES_DEADLINE": 100.0,
    "OAI_HARVESTER_FILES_SLOTS_REDIS_URL": defaults.OAI_HARVESTER_FILES_SLOTS_REDIS_URL,
}


def test_an_invenio_rdm_site_counts_in_its_cache_redis() -> None:
    slots = host_slots_for(
        {**SITE, "CACHE_TYPE": "redis", "CACHE_REDIS_URL": "redis://127.0.0.1:6379/7"}
    )
    assert isinstance(slots, RedisHostSlots)
    assert (slots.per_host, slots.lease) == (3, 160.0)
    with slots.hold("files.example.org"):
        assert slots.client.zcard("oai-harvester:file-slots:files.example.org") == 1
    assert slots.client.zcard("oai-harvester:file-slots:files.example.org") == 0


def test_without_a_redis_cache_or_with_the_setting_empty_each_process_counts() -> None:
    assert isinstance(host_slots_for({**SITE, "CACHE_TYPE": "SimpleCache"}), ProcessHostSlots)
    redis_cache = {"CACHE_TYPE": "redis", "CACHE_REDIS_URL": "redis://127.0.0.1:6379/7"}
    empty = {**SITE, **redis_cache, "OAI_HARVESTER_FILES_SLOTS_REDIS_URL": ""}
    assert isinstance(host_slots_for(empty), ProcessHostSlots)


def test_a_redis_that_does_not_answer_is_logged_and_each_process_counts(caplog) -> None:
    silent = {**SITE, "OAI_HARVESTER_FILES_SLOTS_REDIS_URL": "redis://127.0.0.1:1/0"}
    with caplog.at_level(logging.WARNING):
        slots = host_slots_for(silent)
    assert isinstance(slots, ProcessHostSlots)
    assert "Redis at redis://127.0.0.1:1/0 does not answer" in caplog.text
