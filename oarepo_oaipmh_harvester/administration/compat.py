"""What differs between the invenio-administration releases of InvenioRDM 14 and 15."""

from __future__ import annotations

from typing import Any

from invenio_base import invenio_url_for


class ApiEndpointByName:
    """The API URL of a view, from the endpoint name in ``api_endpoint_name``.

    invenio-administration 7 (InvenioRDM 15) resolves ``api_endpoint_name`` itself; 6.1
    (InvenioRDM 14) knows only ``api_endpoint``, a URL path, and fails on None with
    ``AttributeError: 'NoneType' object has no attribute 'startswith'`` on every page. A path
    would repeat the resource's URL prefix, so both resolve the name here, as 7 does.
    """

    api_endpoint_name: str

    def get_api_endpoint(self, **kwargs: Any) -> str:
        return invenio_url_for(self.api_endpoint_name)
