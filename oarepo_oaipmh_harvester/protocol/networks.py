"""Which addresses a client may connect to.

Decision owned here: whether an IP address, or every address a host name resolves to, is
allowed.  A harvest manager chooses the provider URL, and a provider chooses its redirect
targets: without a check, either could point the harvester at the cloud metadata service
or at an internal system.  The check runs after DNS resolution, on the address actually
connected to (see :mod:`.adapter`), so a name that resolves differently between a check
and the connection (DNS rebinding) cannot slip through.

:data:`DEFAULT_FORBIDDEN_NETWORKS` forbids link-local addresses and the cloud metadata
addresses only; loopback and private networks stay allowed, because a site may harvest its
own intranet (and the bundled demo provider runs on 127.0.0.1).  A site that harvests
only public providers adds :data:`LOOPBACK_AND_PRIVATE_NETWORKS`::

    OAIClient(url, forbidden_networks=DEFAULT_FORBIDDEN_NETWORKS + LOOPBACK_AND_PRIVATE_NETWORKS)
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from .errors import ForbiddenAddress, OAITransportError

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_FORBIDDEN_NETWORKS: tuple[str, ...] = (
    "169.254.0.0/16",  # IPv4 link-local, with the metadata service of most clouds (.169.254)
    "fe80::/10",  # IPv6 link-local
    "fd00:ec2::254/128",  # AWS metadata service over IPv6
    "100.100.100.200/32",  # Alibaba Cloud metadata service
)
"""Forbidden unless the caller says otherwise: link-local and cloud metadata addresses."""

LOOPBACK_AND_PRIVATE_NETWORKS: tuple[str, ...] = (
    "127.0.0.0/8",
    "::1/128",
    "0.0.0.0/8",  # "this host": connecting to 0.0.0.0 reaches the local machine
    "::/128",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "fc00::/7",  # IPv6 unique local
)
"""Add these to forbid the harvester's own machine and private (intranet) networks."""


@lru_cache(maxsize=64)
def parse_networks(networks: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """CIDR strings as networks; ValueError names a string that is not one."""
    parsed = []
    for text in networks:
        try:
            parsed.append(ipaddress.ip_network(str(text).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{text!r} is not a network (CIDR, e.g. '10.0.0.0/8')") from None
    return tuple(parsed)


def forbidden_network(address: str | IPAddress, networks: Iterable[IPNetwork]) -> IPNetwork | None:
    """The first of ``networks`` that contains ``address`` (an IPv4-mapped IPv6 address
    counts as its IPv4 address), or None."""
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 scope
    candidates: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        candidates.append(address.ipv4_mapped)
    for network in networks:
        for candidate in candidates:
            if candidate.version == network.version and candidate in network:
                return network
    return None


def check_address(
    address: str, networks: Iterable[IPNetwork], *, host: str | None = None, url: str | None = None
) -> None:
    """ForbiddenAddress if ``address`` is in one of ``networks``."""
    network = forbidden_network(address, networks)
    if network is not None:
        raise ForbiddenAddress.for_address(address, str(network), host=host, url=url)


def resolve(host: str, port: int) -> list[tuple[int, int, int, str, tuple]]:
    """``getaddrinfo`` for a TCP connection; the host may be an IP literal (with brackets)."""
    return socket.getaddrinfo(host.strip("[]"), port, 0, socket.SOCK_STREAM)


def check_url_allowed(
    url: str, forbidden_networks: Iterable[str] = DEFAULT_FORBIDDEN_NETWORKS
) -> None:
    """Raise ForbiddenAddress if the URL's host is, or resolves to, a forbidden address.

    Every address the name resolves to is checked, not only the first.  For a preflight
    check (before a harvester is saved); a client checks again on every connection.
    OAITransportError if the name cannot be resolved.
    """
    networks = parse_networks(tuple(forbidden_networks))
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise ValueError(f"{url!r} has no host")
    if not networks:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = resolve(host, port)
    except socket.gaierror:
        raise OAITransportError(
            f"The host name {host} of {url} could not be resolved.", url=url
        ) from None
    for info in infos:
        check_address(info[4][0], networks, host=host, url=url)


__all__ = [
    "DEFAULT_FORBIDDEN_NETWORKS",
    "LOOPBACK_AND_PRIVATE_NETWORKS",
    "check_address",
    "check_url_allowed",
    "forbidden_network",
    "parse_networks",
]
