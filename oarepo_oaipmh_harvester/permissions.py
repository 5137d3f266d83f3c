"""Who may do what with harvesters, the records they track and their runs.

- Administrators (the ``administration-access`` action, or superusers) and the system manage
  everything.
- A harvester's ``harvest_managers`` (user ids) may see that harvester, its records and its
  runs, and start it (run now, re-harvest a record); they may not change or delete it.
- Everybody else is refused.

What a refusal looks like is decided by the services, not here: callers who may use the API
at all (administrators and anybody who manages some harvester) get 404 for a harvester they
may not see, exactly as for one that does not exist, so that the names of other harvesters
do not leak; everybody else gets 403 on every endpoint before anything is looked up.

Both policies can be replaced in configuration (``OAI_HARVESTER_PERMISSION_POLICY``,
``OAI_HARVESTER_RECORDS_PERMISSION_POLICY``).
"""

from __future__ import annotations

from typing import Any

from flask_principal import UserNeed
from invenio_administration.generators import Administration
from invenio_db import db
from invenio_records_permissions.generators import Generator, SystemProcess
from invenio_records_permissions.policies import BasePermissionPolicy

from .models import OAIHarvester


def manager_ids(harvester: OAIHarvester | None) -> list[int]:
    """User ids of a harvester's harvest managers."""
    if harvester is None:
        return []
    return [int(user_id) for user_id in harvester.harvest_managers or []]


class HarvestManagers(Generator):
    """The harvest managers of the harvester given as ``harvester=``."""

    def needs(self, harvester: OAIHarvester | None = None, **kwargs: Any) -> list[UserNeed]:
        return [UserNeed(user_id) for user_id in manager_ids(harvester)]


class AnyHarvestManager(Generator):
    """Users who manage at least one harvester: they may use the API at all.

    Harvesters are few (a handful per repository), so reading their manager lists is cheap.
    """

    def needs(self, **kwargs: Any) -> list[UserNeed]:
        user_ids: set[int] = set()
        for managers in db.session.scalars(db.select(OAIHarvester.harvest_managers)):
            user_ids.update(int(user_id) for user_id in managers or [])
        return [UserNeed(user_id) for user_id in sorted(user_ids)]


class HarvesterPermissionPolicy(BasePermissionPolicy):
    """Harvesters and their runs."""

    # May call the API at all; checked first, before anything is looked up.
    can_use = [Administration(), SystemProcess(), AnyHarvestManager()]
    # Sees every harvester (no filtering of lists).
    can_manage = [Administration(), SystemProcess()]

    can_search = can_use
    can_read = [Administration(), SystemProcess(), HarvestManagers()]
    can_create = can_manage
    can_update = can_manage
    can_delete = can_manage
    can_run = [Administration(), SystemProcess(), HarvestManagers()]


class HarvestedRecordPermissionPolicy(BasePermissionPolicy):
    """Tracking rows of harvested records; ``harvester=`` is the record's harvester."""

    can_use = [Administration(), SystemProcess(), AnyHarvestManager()]
    can_manage = [Administration(), SystemProcess()]

    can_search = can_use
    can_read = [Administration(), SystemProcess(), HarvestManagers()]
    can_reharvest = [Administration(), SystemProcess(), HarvestManagers()]
