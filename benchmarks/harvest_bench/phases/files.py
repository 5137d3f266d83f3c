"""A harvested record's files into InvenioRDM (phase `files`, issue 36): throughput against a
plain download, and the memory a very large file takes.

Two providers in processes of their own (`harvest_bench.harness.provider`, with `file_size`)
serve synthetic records as oai_openaire, each naming one open-access file the provider makes
chunk by chunk (`harvest_bench.files_content`): `file_records` records with files of
`file_size` bytes, and one record with a file of `big_file_size` bytes.

Steps, each into a fresh database (the big one into the copy step's):

- warm-up (not reported): a harvest of the records with `files` copy, so that neither side
  runs cold;
- plain: every file downloaded with `requests` (stream=True, iter_content of 1 MiB into a
  temporary file), one after another: the concurrency the harvest has in its own process
  (a record's files are fetched in order, records one after another; the per-host limit,
  OAI_HARVESTER_FILES_PER_HOST=2, only binds Celery workers writing batches at once);
- fetcher: the same files through the harvest's own downloader alone (`FileFetcher`: a
  temporary file, size and MD5), one after another, nothing written into InvenioRDM;
- none: a full harvest of the records with `files` none (metadata only);
- copy: the same harvest with `files` copy; every copied file is then read back from
  InvenioRDM's storage and checked against the source's MD5 (not timed);
- big: a harvest of the one record with the large file with `files` copy while a thread reads
  VmRSS from /proc/self/status every 50 ms; the growth over the RSS before the run is the
  memory the file took.

The files' part of the copy harvest is its time less the none harvest's; the ratio
plain / (copy - none) is the issue's target (at least 0.8).
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harvest_bench.files_content import file_key, file_name, md5_of, record_number
from harvest_bench.harness.provider import provider_command
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker

PREFIX = "oai_openaire"
TRANSFORMER = "oai_openaire_rdm"
CHUNK = 1 << 20


def phase_files(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    worker.boot()
    try:
        return _measure(worker, params)
    finally:
        _remove_storage()


def _measure(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    from oaiharvest_test_support.rdm import MUSEUM_VOCABULARY_ENTRIES, load_vocabularies

    size = params["file_size"]
    numbers = _numbers(params["base_url"])
    urls = [_file_url(params["base_url"], file_name(number, size)) for number in numbers]
    steps: dict[str, Any] = {}

    def fresh_site() -> None:
        worker.reset_storage()
        _note_storage()
        load_vocabularies(MUSEUM_VOCABULARY_ENTRIES)

    fresh_site()
    log(f"files: warm-up, {len(numbers)} records with files copy (not reported)")
    _create_harvester("bench-files-warm", params["base_url"], "copy", params["batch_size"])
    _harvest("bench-files-warm")

    log(f"files: plain download of {len(urls)} files of {size:,} bytes, one at a time")
    with worker.step({}) as plain:
        plain.update(_plain_download(urls))
    plain["concurrency"] = 1
    steps["plain"] = plain

    log(f"files: the harvester's downloader alone (FileFetcher), the same {len(urls)} files")
    with worker.step({}) as fetcher:
        fetcher.update(_fetcher_download(params["base_url"], urls))
    steps["fetcher"] = fetcher

    for mode in ("none", "copy"):
        fresh_site()
        harvester_id = f"bench-files-{mode}"
        _create_harvester(harvester_id, params["base_url"], mode, params["batch_size"])
        downloads_before = len(_downloads(params["provider_address"]))
        log(f"files: harvest of {len(numbers)} records with files {mode}")
        with worker.step({}) as result:
            result.update(_harvest(harvester_id))
        result["downloads"] = len(_downloads(params["provider_address"])) - downloads_before
        result["stored"] = worker.stored()
        if mode == "copy":
            result["verified"] = _verify(harvester_id, size)
        steps[mode] = result

    # The same site (the memory step does not depend on what it holds; a reset costs time).
    big = params["big_file_size"]
    log(f"files: harvest of one record with a file of {big:,} bytes, files copy")
    _create_harvester("bench-files-big", params["big_base_url"], "copy", params["batch_size"])
    sampler = VmRssSampler()
    sampler.start()
    try:
        with worker.step({}) as result:
            result.update(_harvest("bench-files-big"))
    finally:
        sampler.stop()
    result.update(sampler.summary())
    result["file_bytes"] = big
    result["verified"] = _verify("bench-files-big", big)
    steps["big"] = result

    steps["summary"] = _summary(steps, len(numbers), size)
    return {"steps": steps}


# The files locations of the phase's sites (a fresh temporary directory each): removed at its
# end, the copied files with them (more than 1 GiB a run).
_LOCATIONS: list[str] = []


def _note_storage() -> None:
    from invenio_files_rest.models import Location

    location = Location.get_default()
    if location is not None:
        _LOCATIONS.append(location.uri)


def _remove_storage() -> None:
    import shutil
    from pathlib import Path

    temporary = Path(tempfile.gettempdir()).resolve()
    for uri in _LOCATIONS:
        path = Path(uri).resolve()
        if path.parent == temporary and path.name.startswith("rdm-files-"):
            shutil.rmtree(path, ignore_errors=True)


def _summary(steps: dict[str, Any], files: int, size: int) -> dict[str, Any]:
    """The numbers the report and docs quote: files/s and bytes/s of the plain download and
    of the copy harvest's files part, and plain / (copy - none)."""
    plain = steps["plain"]["seconds"]
    fetcher = steps["fetcher"]["seconds"]
    copy = steps["copy"]["seconds"]
    none = steps["none"]["seconds"]
    file_part = copy - none
    total = files * size
    big = steps["big"]
    return {
        "files": files,
        "file_size": size,
        "concurrency": 1,
        "plain_seconds": plain,
        "copy_seconds": copy,
        "none_seconds": none,
        "file_part_seconds": file_part,
        "plain_files_per_second": files / plain if plain > 0 else None,
        "plain_bytes_per_second": total / plain if plain > 0 else None,
        "copy_files_per_second": files / copy if copy > 0 else None,
        "copy_bytes_per_second": total / copy if copy > 0 else None,
        "file_part_files_per_second": files / file_part if file_part > 0 else None,
        "file_part_bytes_per_second": total / file_part if file_part > 0 else None,
        "fetcher_seconds": fetcher,
        "fetcher_files_per_second": files / fetcher if fetcher > 0 else None,
        "fetcher_bytes_per_second": total / fetcher if fetcher > 0 else None,
        "plain_over_fetcher": plain / fetcher if fetcher > 0 else None,
        # What the files cost the harvest besides downloading them: InvenioRDM's file writes.
        "attach_seconds": file_part - fetcher,
        "attach_ms_per_file": (file_part - fetcher) / files * 1000 if files else None,
        "plain_over_file_part": plain / file_part if file_part > 0 else None,
        "file_part_over_plain": file_part / plain if plain > 0 else None,
        "big_file_bytes": big["file_bytes"],
        "big_seconds": big["seconds"],
        "big_bytes_per_second": big["file_bytes"] / big["seconds"] if big["seconds"] else None,
        "big_rss_growth_mb": big["vmrss_growth_mb"],
    }


class VmRssSampler(threading.Thread):
    """VmRSS of this process from /proc/self/status every `interval` seconds."""

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__(daemon=True, name="vmrss-sampler")
        self.interval = interval
        self._stop_event = threading.Event()
        self.start_kb = self.peak_kb = self.read_kb()
        self.samples = 0

    @staticmethod
    def read_kb() -> int:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc/self/status")

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            rss = self.read_kb()
            self.samples += 1
            if rss > self.peak_kb:
                self.peak_kb = rss

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self.end_kb = self.read_kb()

    def summary(self) -> dict[str, Any]:
        return {
            "vmrss_start_mb": self.start_kb / 1024,
            "vmrss_peak_mb": self.peak_kb / 1024,
            "vmrss_end_mb": self.end_kb / 1024,
            "vmrss_growth_mb": (self.peak_kb - self.start_kb) / 1024,
            "vmrss_samples": self.samples,
            "vmrss_interval_s": self.interval,
        }


def _numbers(base_url: str) -> list[str]:
    """The numbers of the provider's records (their files' URLs name them)."""
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

    with OAIClient(base_url) as client:
        return [record_number(header) for header in client.list_identifiers(PREFIX)]


def _file_url(base_url: str, name: str) -> str:
    split = urlsplit(base_url)
    return f"{split.scheme}://{split.netloc}/files/{name}"


def _plain_download(urls: list[str]) -> dict[str, Any]:
    """Each URL streamed into a temporary file with `requests`, one after another."""
    import requests

    received = 0
    with requests.Session() as session:
        for url in urls:
            with (
                session.get(url, stream=True, timeout=60) as response,
                tempfile.TemporaryFile(prefix="bench-plain-") as body,
            ):
                response.raise_for_status()
                for chunk in response.iter_content(CHUNK):
                    body.write(chunk)
                    received += len(chunk)
    return {"records": len(urls), "files": len(urls), "bytes": received}


def _fetcher_download(base_url: str, urls: list[str]) -> dict[str, Any]:
    """Each URL through the harvest's own downloader (`FileFetcher.download`: a temporary
    file, the size and MD5 checked), one after another; nothing written to InvenioRDM."""
    from oarepo_oaipmh_harvester.protocol.download_body import FileSource
    from oarepo_oaipmh_harvester.protocol.downloads import FileFetcher

    received = 0
    fetcher = FileFetcher(base_url, max_size=2**40, forbidden_networks=())
    try:
        for url in urls:
            with fetcher.download(FileSource(url)) as (fetched, _body):
                received += fetched.size
    finally:
        fetcher.close()
    return {"records": len(urls), "files": len(urls), "bytes": received}


def _downloads(address: Any) -> list[str]:
    """Paths of the provider's file requests answered with bytes."""
    return [path for path, status in provider_command(address, "file_requests") if status == 200]


def _create_harvester(harvester_id: str, base_url: str, files: str, batch_size: int) -> None:
    import rdm_target
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.create(
        system_identity,
        {
            "id": harvester_id,
            "name": f"Benchmark files {files}",
            "base_url": base_url,
            "metadata_prefix": PREFIX,
            "target": rdm_target.TARGET,
            "transformer": TRANSFORMER,
            "batch_size": batch_size,
            "files": files,
        },
    )


def _harvest(harvester_id: str) -> dict[str, Any]:
    """A full harvest in this process, as `invenio oai harvest` runs one; its counts."""
    import rdm_target
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    run = current_harvest_runs_service.harvest_in_process(system_identity, harvester_id)
    result = {
        "run_status": str(getattr(run.status, "name", run.status)),
        "run_message": run.message,
        "records": run.total_entries or 0,
        "inserted_entries": run.inserted_entries,
        "errored_entries": run.errored_entries,
    }
    result["queued_documents"] = rdm_target.index_queued_documents()
    return result


def _verify(harvester_id: str, size: int) -> dict[str, Any]:
    """Every tracking row's published record holds its one file, whose bytes in InvenioRDM's
    storage have the source's MD5 (read back and hashed here)."""
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_rdm_records.proxies import current_rdm_records_service as service

    from oarepo_oaipmh_harvester.models import OAIHarvestedRecord

    db.session.expire_all()
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
    ).all()
    right = wrong = 0
    problems: list[str] = []
    for row in rows:
        number = row.oai_identifier.rsplit(":", 1)[-1]
        key = file_key(number)
        listing = service.files.list_files(system_identity, row.local_pid).to_dict()
        keys = [entry["key"] for entry in listing.get("entries") or ()]
        if keys != [key]:
            wrong += 1
            problems.append(f"{row.oai_identifier}: files {keys}, expected [{key}]")
            continue
        item = service.files.get_file_content(system_identity, row.local_pid, key)
        digest = hashlib.md5(usedforsecurity=False)
        stored = 0
        with item.get_stream("rb") as stream:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                stored += len(chunk)
        if "md5:" + digest.hexdigest() == md5_of(number, size) and stored == size:
            right += 1
        else:
            wrong += 1
            problems.append(f"{row.oai_identifier}: {stored} bytes, not the source's")
    db.session.rollback()
    return {"records": len(rows), "right": right, "wrong": wrong, "problems": problems[:3]}
