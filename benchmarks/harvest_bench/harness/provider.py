"""The provider process: the bundled OAI-PMH provider serving a synthetic oai_dc corpus.

It runs in a process of its own, as a remote provider would: inside the harvesting process it
would compete for the GIL. A control listener lets the phases change records, advance the
corpus clock and read the provider's request log.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from datetime import UTC, datetime
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

AUTHKEY = b"oai-harvest-benchmark"


def serve_provider(
    records: int, page_size: int, ready: Connection, file_size: int | None = None
) -> None:
    """Serve `records` synthetic oai_dc records; obey commands on a control listener.

    With `file_size` the records are served as oai_openaire too, each naming one file of
    that many bytes that the provider serves itself (`harvest_bench.files_content`, made
    chunk by chunk as it is sent).

    The provider's base URL and the listener's address are sent through `ready`. Commands:
    `("stop",)`, `("requests",)` (the request log), `("file_requests",)` ((path, status) of
    every file request), `("change", fraction, seed)` (change that fraction of the live
    records an hour later), `("handles",)` (give every live record a Handle besides its DOI
    and URL, an hour later) and `("tick", minutes)`.
    """
    import random

    from oarepo_oaipmh_harvester.testing.corpus import Corpus, synthetic_metadata
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    corpus = Corpus.generate(records, start=datetime(2023, 1, 1, tzinfo=UTC))
    corpus.set_clock(datetime(2024, 1, 1, tzinfo=UTC))
    if file_size is None:
        provider = OAIPMHProvider(corpus, page_size=page_size)
    else:
        from harvest_bench.files_content import openaire_formats, streamed_file

        started: list[OAIPMHProvider] = []
        provider = OAIPMHProvider(
            corpus,
            page_size=page_size,
            formats=openaire_formats(lambda name: started[0].file_url(name), file_size),
        )
        started.append(provider)
        provider.file_maker = streamed_file
    provider.start()
    listener = Listener(("127.0.0.1", 0), authkey=AUTHKEY)
    ready.send((provider.base_url, listener.address))
    ready.close()

    def change(fraction: float, seed: int) -> dict[str, Any]:
        # Later clock: the changes are an hour after the last harvest; then a minute passes
        # before the next harvest (so that the changes are strictly before its responseDate).
        rng = random.Random(seed)
        live = sorted(corpus.live_identifiers())
        chosen = rng.sample(live, max(1, round(len(live) * fraction)))
        corpus.advance_clock(hours=1)
        for identifier in chosen:
            index = int(identifier.rsplit(":", 1)[-1])
            corpus.update(identifier, metadata=synthetic_metadata(rng, index, revision=1))
        corpus.advance_clock(minutes=1)
        return {"changed": len(chosen), "clock": corpus.now().isoformat()}

    def handles() -> dict[str, Any]:
        corpus.advance_clock(hours=1)
        live = sorted(corpus.live_identifiers())
        for identifier in live:
            record = corpus.get(identifier)
            index = identifier.rsplit(":", 1)[-1]
            identifiers = [*record.metadata.get("identifier", ()), f"hdl:11025/bench.{index}"]
            corpus.update(identifier, metadata={**record.metadata, "identifier": identifiers})
        corpus.advance_clock(minutes=1)
        return {"records": len(live)}

    try:
        while True:
            with listener.accept() as connection:
                command, *args = connection.recv()
                if command == "stop":
                    connection.send("stopped")
                    break
                if command == "requests":
                    with provider._lock:
                        connection.send([dict(item) for item in provider.requests])
                elif command == "file_requests":
                    with provider._lock:
                        answered = [(path, status) for path, _, status in provider.file_requests]
                    connection.send(answered)
                elif command == "change":
                    connection.send(change(*args))
                elif command == "handles":
                    connection.send(handles())
                elif command == "tick":
                    connection.send(corpus.advance_clock(minutes=args[0]).isoformat())
                else:
                    connection.send({"error": f"unknown command {command!r}"})
    finally:
        provider.stop()
        listener.close()


def provider_command(address: tuple[str, int] | list[Any], *command: Any) -> Any:
    """Send one command to a provider's control listener; its answer."""
    with Client(tuple(address), authkey=AUTHKEY) as connection:
        connection.send(command)
        return connection.recv()


class ProviderProcess:
    """A provider process, started (corpus generated, server listening) when constructed."""

    def __init__(self, records: int, page_size: int, file_size: int | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(
            target=serve_provider,
            args=(records, page_size, sender, file_size),
            name="oai-provider",
        )
        self.process.start()
        sender.close()
        self.base_url, self.address = receiver.recv()
        receiver.close()

    def command(self, *command: Any) -> Any:
        """Send one command to this provider (see `serve_provider`); its answer."""
        return provider_command(self.address, *command)

    def stop(self) -> None:
        """Ask the provider to stop; terminate it if it does not within 10 s."""
        if self.process.is_alive():
            with contextlib.suppress(OSError, EOFError):
                self.command("stop")
            self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
