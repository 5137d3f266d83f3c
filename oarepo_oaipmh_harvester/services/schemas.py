"""Validation of harvester input and the JSON shapes of harvesters, records and runs."""

from __future__ import annotations

from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

from flask import current_app
from invenio_accounts.models import User
from invenio_db import db
from invenio_i18n import lazy_gettext as _
from marshmallow import (
    Schema,
    ValidationError,
    fields,
    pre_load,
    validate,
    validates,
    validates_schema,
)
from marshmallow_utils.fields import TZDateTime

from ..arguments import PlainList
from ..credentials import summary as credentials_summary
from ..harvest.targets.options import MATCH_SCHEMES, POLICY_FIELDS, TargetOptions
from ..models import OAIHarvester
from ..proxies import current_oai_harvester
from ..text import StorableText, echoed, field_reference
from .fields import (
    AuthSchema,
    FieldPolicyMapping,
    MissingCreatorPolicy,
    RequestHeaders,
    SetCommunities,
)
from .files_words import files_in_words
from .targets import writable_target_ids
from .transformer_fit import (  # noqa: F401 (their home was here; imported from here too)
    default_transformer,
    missing_creator_in_words,
    target_is_rdm,
    transformer_misfit,
)
from .users import UserReference, user_with_email  # noqa: F401 (imported from here too)

FILES_HOST_PATTERN = r"^(\*\.)?[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$"
FILES_HOST_ERROR = (
    "Give a host name such as files.example.org, or *.example.org for its subdomains."
)

HARVESTER_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$"


def column_length(column: Any) -> int:
    """The length of a String column: what the database refuses beyond (with a 500)."""
    return column.property.columns[0].type.length


BASE_URL_LENGTH = column_length(OAIHarvester.base_url)
TEXT_LENGTH = column_length(OAIHarvester.name)
"""name and metadata_prefix; each set spec is held to it too."""


class ProviderUrl(fields.Url):
    """An http(s) URL that fits its column, measured before the URL pattern is tried on it,
    and that holds no credentials (every page shows the base URL)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        url = super()._deserialize(value, attr, data, **kwargs)
        if len(url) > BASE_URL_LENGTH:
            raise ValidationError(
                f"Give a URL of at most {BASE_URL_LENGTH} characters (this one has {len(url)})."
            )
        if "@" in urlsplit(url).netloc:
            raise ValidationError(
                "Give the URL without a user name or password (every page shows it); give "
                f"them as the harvester's credentials ({field_reference('auth')}) instead."
            )
        return url


OPTIONAL_FIELDS = (
    "comment",
    "set_communities",
    "transformer",
    "batch_size",
    "request_delay",
    "owner",
    "community",
    "missing_creator",
    "files_max_size",
    "deletion_guard",
    "match_on",
    "field_policy",
    *POLICY_FIELDS,
)


def _policy(name: str) -> fields.String:
    """A policy field: one of its enum's values; left out or empty, the default."""
    choices = [member.value for member in POLICY_FIELDS[name]]
    return fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.OneOf(choices, error=f"Choose one of: {', '.join(choices)}."),
    )


class HarvesterSchema(Schema):
    """A harvester as operators write it (load) and as the API shows it (dump)."""

    id = fields.String(
        required=True,
        validate=validate.Regexp(
            HARVESTER_ID_PATTERN,
            error="Use 1-64 lowercase letters, digits, '-' or '_' (a short slug).",
        ),
        metadata={"create_only": True, "title": _("Id")},
    )
    name = fields.String(
        required=True, validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()]
    )
    comment = fields.String(load_default=None, allow_none=True, validate=StorableText())
    base_url = ProviderUrl(
        required=True,
        schemes={"http", "https"},
        require_tld=False,
        validate=StorableText(),
        error_messages={"invalid": "Give an http:// or https:// URL of the OAI-PMH endpoint."},
    )
    metadata_prefix = fields.String(
        # None: the check picks the richest format the provider offers (prefix_choice.py).
        load_default=None,
        allow_none=True,
        validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()],
    )
    metadata_prefix_choice = fields.String(dump_only=True)
    setspecs = PlainList(
        fields.String(validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()]),
        load_default=list,
    )
    target = fields.String(required=True)
    transformer = fields.String(load_default=None, allow_none=True)
    batch_size = fields.Integer(
        load_default=None, allow_none=True, validate=validate.Range(min=1, max=10000)
    )
    # User ids or e-mail addresses, as `owner`: ids differ between instances.
    harvest_managers = PlainList(UserReference(), load_default=list)
    request_delay = fields.Float(
        load_default=None, allow_none=True, validate=validate.Range(min=0, max=600)
    )
    # How records are written into the target (harvest/targets/options.py).
    owner = UserReference(load_default=None, allow_none=True)
    community = fields.String(
        load_default=None, allow_none=True, validate=[validate.Length(max=255), StorableText()]
    )
    target_adapter = _policy("target_adapter")
    local_drafts = _policy("local_drafts")
    invalid_drafts = _policy("invalid_drafts")
    doi_conflicts = _policy("doi_conflicts")
    dedupe = _policy("dedupe")
    set_communities = SetCommunities(load_default=None, allow_none=True)
    # What an InvenioRDM transformer makes of a record without a creator; None: its default.
    missing_creator = MissingCreatorPolicy(
        load_default=None, allow_none=True, validate=[validate.Length(max=255), StorableText()]
    )
    missing_creator_text = fields.Method("_missing_creator_text", dump_only=True)
    # What becomes of a record's files (FilesOptions); None: the defaults.
    files = _policy("files")
    files_failure = _policy("files_failure")
    files_changes = _policy("files_changes")
    files_max_size = fields.Integer(
        load_default=None, allow_none=True, validate=validate.Range(min=1)
    )
    files_hosts = PlainList(
        fields.String(validate=[validate.Regexp(FILES_HOST_PATTERN, error=FILES_HOST_ERROR)]),
        load_default=None,
        allow_none=True,
    )
    files_restricted = fields.Boolean(load_default=False)
    files_text = fields.Method("_files_text", dump_only=True)
    # Percent of the live records one run may delete before it holds them; None: the site's.
    deletion_guard = fields.Float(
        load_default=None, allow_none=True, validate=validate.Range(min=0, max=100)
    )
    # Identifier schemes a new record is matched to a local one by, in order; None: the site's.
    match_on = PlainList(fields.String(validate=validate.OneOf(MATCH_SCHEMES)), allow_none=True)
    # Metadata path -> source | local | merge (harvest/field_policy.py); None: source for all.
    field_policy = FieldPolicyMapping(load_default=None, allow_none=True)
    # The panel's create form starts from metadata["default"] (else a checkbox starts unticked).
    active = fields.Boolean(load_default=True, metadata={"default": True})
    # The provider's credentials: written, never shown (`credentials` says what is set).
    auth = fields.Nested(AuthSchema, load_only=True, allow_none=True)
    # The panel's form has no widget for a nested object: it sends these two instead.
    auth_username = fields.String(load_only=True)
    auth_password = fields.String(load_only=True)
    headers = RequestHeaders(load_only=True, allow_none=True)
    clear_credentials = fields.Boolean(load_only=True)
    credentials = fields.Method("_credentials", dump_only=True)
    # At creation: take over the records a deleted harvester of the same provider, prefix
    # and target left, though its sets were others (services/released.py).
    take_over_records = fields.Boolean(
        load_only=True, load_default=False, metadata={"create_only": True}
    )
    taken_over = fields.Raw(dump_only=True)

    # Shown, never written by a client.
    watermark = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    created = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    updated = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    job = fields.Raw(dump_only=True)
    jobs = fields.Raw(dump_only=True)
    # In words, for pages that show values as text.
    setspecs_text = fields.Method("_setspecs_text", dump_only=True)
    harvest_managers_text = fields.Method("_harvest_managers_text", dump_only=True)
    owner_text = fields.Method("_owner_text", dump_only=True)

    def _setspecs_text(self, harvester: Any) -> str:
        return ", ".join(harvester.setspecs or []) or "all (no set)"

    def _harvest_managers_text(self, harvester: Any) -> str:
        ids = list(harvester.harvest_managers or [])
        if not ids:
            return "none"
        emails = dict(
            db.session.execute(db.select(User.id, User.email).where(User.id.in_(ids))).all()
        )
        return ", ".join(f"{emails.get(user_id, '?')} (id {user_id})" for user_id in ids)

    def _owner_text(self, harvester: Any) -> str:
        if harvester.owner is None:
            return "the system"
        email = db.session.scalar(db.select(User.email).where(User.id == harvester.owner))
        return f"{email or '?'} (id {harvester.owner})"

    def _files_text(self, harvester: Any) -> str:
        return files_in_words(harvester)

    def _missing_creator_text(self, harvester: Any) -> str:
        return missing_creator_in_words(harvester.transformer, harvester.missing_creator)

    last_run = fields.Raw(dump_only=True)

    def _credentials(self, harvester: Any) -> dict[str, Any]:
        return credentials_summary(harvester.credentials)

    @pre_load
    def _drop_dump_only(self, data: Any, **kwargs: Any) -> Any:
        # What the API returned may be sent back (admin edit form, scripts doing GET-edit-PUT).
        if not isinstance(data, dict):
            return data
        ignored = {name for name, field in self.fields.items() if field.dump_only} | {"links"}
        cleaned = {key: value for key, value in data.items() if key not in ignored}
        # Forms send empty optional fields as "": that means "not set" (use the default).
        for name in OPTIONAL_FIELDS:
            if cleaned.get(name) == "":
                cleaned[name] = None
        # An edit form shows the credentials empty: left so, they stay as they are.
        username = cleaned.pop("auth_username", None)
        password = cleaned.pop("auth_password", None)
        if username and not password and "auth" not in cleaned:
            # The form cannot tell an empty password from one left out: a provider that
            # wants no password is set up through REST ("password": "") or the command line.
            raise ValidationError(
                "Give the provider's password with its user name.", field_name="auth_password"
            )
        if (username or password) and "auth" not in cleaned:
            cleaned["auth"] = {"username": username or "", "password": password or ""}
        auth = cleaned.get("auth")
        if isinstance(auth, dict) and not any(auth.get(k) for k in ("username", "password")):
            del cleaned["auth"]
        if cleaned.get("headers") in ("", {}):
            del cleaned["headers"]
        for name in ("set_communities", "field_policy"):
            if cleaned.get(name) == "":
                cleaned[name] = None
        return cleaned

    @validates("target")
    def _known_target(self, value: str, **kwargs: Any) -> None:
        writable = writable_target_ids()
        if value not in writable:
            known = ", ".join(writable) or "none"
            raise ValidationError(
                f"No record service with id {echoed(value)} can be written to; "
                f"choose one of: {known}."
            )

    @validates("harvest_managers")
    def _known_users(self, value: list[int], **kwargs: Any) -> None:
        wanted = set(value or [])
        if not wanted:
            return
        known = set(db.session.scalars(db.select(User.id).where(User.id.in_(wanted))))
        missing = sorted(wanted - known)
        if missing:
            raise ValidationError(f"No user with id {', '.join(map(str, missing))}.")

    @validates("owner")
    def _known_owner(self, value: int | None, **kwargs: Any) -> None:
        if value is None:
            return
        user = db.session.get(User, value)
        if user is None or not user.active:
            raise ValidationError(f"No active user with id {value}.")

    @validates_schema
    def _target_options_fit_the_target(self, data: dict, **kwargs: Any) -> None:
        """The adapter, and a community, must suit the target service (when it is known)."""
        from invenio_records_resources.proxies import current_service_registry

        from ..harvest.targets import (
            AdapterKind,
            AdapterNotApplicable,
            adapter_for,
            is_draft_service,
        )

        target = data.get("target")
        if target not in writable_target_ids():
            return  # reported on the target field
        service = current_service_registry.get(target)
        options = TargetOptions(adapter=AdapterKind(data.get("target_adapter") or "auto"))
        try:
            adapter_for(service, None, options=options)
        except AdapterNotApplicable as error:
            raise ValidationError(str(error), field_name="target_adapter") from None
        drafts = options.adapter is AdapterKind.DRAFTS or (
            options.adapter is AdapterKind.AUTO and is_draft_service(service)
        )
        community = data.get("community")
        if community:
            problem = community_problem(community, is_drafts=drafts)
            if problem:
                raise ValidationError(problem, field_name="community")
        problems = [
            f"{spec}: {problem}"
            for spec, joined in (data.get("set_communities") or {}).items()
            if (problem := community_problem(joined, is_drafts=drafts))
        ]
        if problems:
            # On the field itself, not per set: a form shows errors by field.
            raise ValidationError(problems, field_name="set_communities")

    @validates_schema
    def _transformer_fits_the_target(self, data: dict, **kwargs: Any) -> None:
        """InvenioRDM's records take only what an InvenioRDM transformer makes, and nothing
        else takes that; a transformer the site registered itself is trusted to know."""
        if data.get("metadata_prefix") is None and data.get("transformer") is None:
            return  # both are picked from the provider's formats, to fit
        problem = transformer_misfit(
            data.get("target"), data.get("metadata_prefix"), data.get("transformer")
        )
        if problem:
            raise ValidationError(problem, field_name="transformer")

    @validates_schema
    def _missing_creator_fits_the_transformer(self, data: dict, **kwargs: Any) -> None:
        if data.get("missing_creator") is None:
            return
        if data.get("metadata_prefix") is None and data.get("transformer") is None:
            return  # checked again once the transformer is picked
        transformer = data.get("transformer") or default_transformer(
            data.get("target"), data.get("metadata_prefix")
        )
        if not current_oai_harvester.transformers.takes(transformer, "missing_creator"):
            raise ValidationError(
                f"Transformer {echoed(transformer)} has no use for it (only the InvenioRDM "
                f"transformers do, such as oai_dc_rdm or marcxml_rdm); leave "
                f"{field_reference('missing_creator')} empty.",
                field_name="missing_creator",
            )

    @validates_schema
    def _files_fit_the_target(self, data: dict, **kwargs: Any) -> None:
        mode = data.get("files")
        if mode in (None, "none") or not data.get("target"):
            return
        if not target_is_rdm(data["target"]):
            raise ValidationError(
                f"files {mode} needs an InvenioRDM records target (the files are attached to "
                f"its drafts); {echoed(data['target'])} is not one. Leave files at none.",
                field_name="files",
            )

    @validates("transformer")
    def _known_transformer(self, value: str | None, **kwargs: Any) -> None:
        transformers = current_oai_harvester.transformers
        if value is not None and value not in transformers:
            raise ValidationError(
                f"Unknown transformer {echoed(value)} (known: {', '.join(transformers.names())})."
            )


def community_problem(community: str, *, is_drafts: bool) -> str | None:
    """Why records of a target cannot join `community` (None when they can)."""
    if not is_drafts:
        return "Only a draft-enabled target (InvenioRDM) can include records in a community."
    try:
        from invenio_communities.proxies import current_communities
    except ImportError:
        return "Communities need InvenioRDM (pip install oarepo-oaipmh-harvester[rdm])."
    from invenio_pidstore.errors import PIDDoesNotExistError
    from sqlalchemy.orm.exc import NoResultFound

    try:
        current_communities.service.record_cls.pid.resolve(community)
    except (PIDDoesNotExistError, NoResultFound):
        return f"No community {echoed(community)} (give its slug or id)."
    return None


def apply_defaults(data: dict) -> dict:
    """Fill what the operator left out from the configuration."""
    config = current_app.config
    data = dict(data)
    if data.get("transformer") is None:
        data["transformer"] = default_transformer(data.get("target"), data.get("metadata_prefix"))
    if data.get("batch_size") is None:
        data["batch_size"] = config["OAI_HARVESTER_DEFAULT_BATCH_SIZE"]
    defaults = TargetOptions()
    for name, attribute in (
        ("target_adapter", "adapter"),
        ("local_drafts", "local_drafts"),
        ("invalid_drafts", "invalid_drafts"),
        ("doi_conflicts", "doi_conflicts"),
        ("dedupe", "dedupe"),
    ):
        if data.get(name) is None:
            data[name] = getattr(defaults, attribute).value
    for name, attribute in (
        ("files", "mode"),
        ("files_failure", "failure"),
        ("files_changes", "changes"),
    ):
        if data.get(name) is None:
            data[name] = getattr(defaults.files, attribute).value
    if data.get("match_on") is not None:
        data["match_on"] = list(dict.fromkeys(data["match_on"]))
    if "files_hosts" in data:
        data["files_hosts"] = (
            list(dict.fromkeys(h.lower() for h in data["files_hosts"] or [])) or None
        )
    # Order kept, duplicates dropped: the same set twice would be harvested twice.
    data["setspecs"] = list(dict.fromkeys(data.get("setspecs") or []))
    data["harvest_managers"] = list(dict.fromkeys(data.get("harvest_managers") or []))
    return data
