"""A site without a default files location, named with its fix.

Decision owned here: how the failure invenio-files-rest gives for a draft's bucket when the
site has no default location ("'NoneType' object has no attribute 'id'") reaches operators.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class NoDefaultFilesLocation(Exception):
    """The site has no default files location, which every draft's files bucket needs."""

    def __init__(self) -> None:
        super().__init__(
            "InvenioRDM has no default files location, which every draft needs for its files "
            "bucket (metadata-only records too): create one with `invenio files location "
            "create --default <name> <uri>`, e.g. `invenio files location create --default "
            "default-location file:///var/data/invenio-files`, then harvest again."
        )


@contextmanager
def files_location_named() -> Iterator[None]:
    """Around what makes a draft: invenio-files-rest's Bucket.create takes the default
    location's id, and without one fails with "'NoneType' object has no attribute 'id'",
    which names neither the cause nor the fix."""
    try:
        yield
    except AttributeError as error:
        if "'NoneType' object has no attribute 'id'" in str(error) and _no_default_location():
            raise NoDefaultFilesLocation() from error
        raise


def _no_default_location() -> bool:
    from invenio_files_rest.models import Location

    return Location.get_default() is None
