"""Celery worker app of an InvenioRDM records service outside InvenioRDM (benchmark, tests).

    celery -A oaiharvest_test_support.rdm_celery worker ...

`invenio_app.celery` with what ``oaiharvest_test_support.rdm`` adds: RDM's
configuration (its values are classes and functions, which INVENIO_* environment variables
cannot carry), the stand-ins of invenio-app-rdm's UI endpoints and the quiet statistics log.
Everything else comes from the environment, as for `invenio_app.celery`.
"""

from __future__ import annotations

import os

from flask_celeryext import create_celery_app
from invenio_app.factory import create_ui

from .rdm import prepare_app, rdm_config

# The benchmark's workers search where it does: OAIHARVEST_BENCH_SEARCH=osmem for osmem-server.
OSMEM = os.environ.get("OAIHARVEST_BENCH_SEARCH") == "osmem"
flask_app = create_ui(RATELIMIT_ENABLED=False, **rdm_config(external_dois=True, osmem=OSMEM))
prepare_app(flask_app)
celery = create_celery_app(flask_app)
