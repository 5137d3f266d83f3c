"""DataCite geo locations -> RDM ``locations`` (GeoJSON features).

Decision owned here: a place's name and its geometries - a point as a GeoJSON ``Point``, a
box or a polygon as a ``Polygon`` with its ring closed, kernel 3's ``lat lon`` text read too -;
coordinates out of range are no geometry (a warning); a second geometry of one location makes
a feature of its own, because RDM holds one geometry a feature. No vocabulary is involved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .xml import children, first_text, text_of

if TYPE_CHECKING:
    from lxml import etree


def locations(
    resource: etree._Element, metadata: dict[str, Any], warn: Callable[[str], None]
) -> None:
    features = []
    for element in children(resource, "geoLocations", "geoLocation"):
        place = first_text(element, "geoLocationPlace")
        geometries = []
        for kind, reader in (
            ("geoLocationPoint", point),
            ("geoLocationBox", box),
            ("geoLocationPolygon", polygon),
        ):
            for found in children(element, kind):
                geometry = reader(found)
                if geometry is None:
                    warn(
                        f"{kind} {' '.join(' '.join(found.itertext()).split())!r}: "
                        "not valid coordinates; dropped."
                    )
                else:
                    geometries.append(geometry)
        # RDM holds one geometry a feature: a second one makes a feature of its own.
        feature: dict[str, Any] = {"place": place} if place else {}
        for geometry in geometries:
            features.append({**feature, "geometry": geometry})
            feature = {}
        if feature:
            features.append(feature)
    if features:
        metadata["locations"] = {"features": features}


def coordinate(value: str, limit: float) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if -limit <= number <= limit else None


def position(element: etree._Element) -> list[float] | None:
    """[longitude, latitude] of a point (kernel 4 children, kernel 3 "lat lon" text)."""
    longitude, latitude = (
        first_text(element, "pointLongitude"),
        first_text(element, "pointLatitude"),
    )
    if not (longitude or latitude):
        parts = text_of(element).split()
        latitude, longitude = parts if len(parts) == 2 else ("", "")
    lon, lat = coordinate(longitude, 180), coordinate(latitude, 90)
    return [lon, lat] if lon is not None and lat is not None else None


def point(element: etree._Element) -> dict[str, Any] | None:
    found = position(element)
    return {"type": "Point", "coordinates": found} if found else None


def box(element: etree._Element) -> dict[str, Any] | None:
    names = (
        "westBoundLongitude",
        "eastBoundLongitude",
        "southBoundLatitude",
        "northBoundLatitude",
    )
    values = [first_text(element, name) for name in names]
    if not any(values):  # kernel 3: "south west north east"
        parts = text_of(element).split()
        if len(parts) == 4:
            south, west, north, east = parts
            values = [west, east, south, north]
    if len(values) != 4:
        return None
    west, east = (coordinate(value, 180) for value in values[:2])
    south, north = (coordinate(value, 90) for value in values[2:])
    if None in (west, east, south, north):
        return None
    ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
    return {"type": "Polygon", "coordinates": [ring]}


def polygon(element: etree._Element) -> dict[str, Any] | None:
    ring = [position(found) for found in children(element, "polygonPoint")]
    if not ring or None in ring:
        return None
    if ring[0] != ring[-1]:
        ring.append(ring[0])  # GeoJSON rings are closed
    return {"type": "Polygon", "coordinates": [ring]} if len(ring) >= 4 else None
