"""Harvester fields that a JSON client sends as objects and the panel's form as text.

invenio-administration's form renderer has no widget for a mapping of free keys, so the
request headers and the set-to-community mapping are also accepted as text, one
``name: value`` pair per line; JSON clients send objects. Secrets (a password, a header's
value) may be, in fixture files, ``{"env": NAME}``: read from the environment at each run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validates

from ..harvest.field_policy import FieldPolicies, FieldPolicyError
from ..text import StorableText, echoed, field_reference
from ..transformers.rdm.base import MissingCreator

HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
"""An HTTP header name (RFC 9110 token)."""

RESERVED_HEADERS = frozenset({"host", "content-length", "user-agent", "authorization"})
"""Headers the client sets itself (Authorization: give `auth` instead)."""


def _pairs(
    value: Any, what: str, example: str, separator: str = ":", lines: str = r"\n"
) -> dict[str, Any]:
    """A mapping from an object, or from text of ``name<separator> value`` lines (`lines`:
    what separates them); `example` is one such line, shown when one is not."""
    if isinstance(value, Mapping):
        return dict(value)
    if not isinstance(value, str):
        raise ValidationError(f"Give {what} as an object, or as lines such as {example!r}.")
    pairs: dict[str, Any] = {}
    for number, line in enumerate(re.split(lines, value), start=1):
        if not line.strip():
            continue
        name, found, rest = line.partition(separator)
        if not found or not name.strip():
            raise ValidationError(
                f"{echoed(line.strip(), 60)} (line {number}) is not written as {example!r} is."
            )
        pairs[name.strip()] = rest.strip()
    return pairs


class Secret(fields.String):
    """Text, or ``{"env": NAME}``: the value of an environment variable at each run (a String
    to the panel, whose forms know no other kind of field)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if isinstance(value, Mapping):
            name = value.get("env")
            if set(value) != {"env"} or not isinstance(name, str) or not name:
                raise ValidationError('Give the text, or {"env": "VARIABLE_NAME"}.')
            return {"env": name}
        if not isinstance(value, str):
            raise ValidationError("Give the text.")
        StorableText()(value)
        if len(value) > 4096:
            raise ValidationError("At most 4096 characters.")
        return value


class AuthSchema(Schema):
    """HTTP Basic credentials."""

    username = Secret(required=True, metadata={"title": "User name"})
    # Required: a user name alone used to store an empty password without a word. A provider
    # that wants a user name (an API key, say) and no password gets "" said explicitly.
    password = Secret(
        required=True,
        metadata={"title": "Password"},
        error_messages={
            "required": 'Give the password too ("" for a provider that wants a user name alone).'
        },
    )

    @validates("username")
    def _given(self, value: Any, **kwargs: Any) -> None:
        if value == "":
            raise ValidationError("Give the user name (with the password).")

    @pre_load
    def _empty_password(self, data: Any, **kwargs: Any) -> Any:
        if isinstance(data, dict) and data.get("password") is None:
            return {key: value for key, value in data.items() if key != "password"}
        return data


class RequestHeaders(fields.String):
    """``{name: value}``, or ``name: value`` lines (a form's textarea)."""

    def _deserialize(
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> dict[str, Any]:
        headers = _pairs(value, "the headers", "X-Api-Key: 0f1e2d")
        errors: dict[str, list[str]] = {}
        loaded: dict[str, Any] = {}
        for name, header_value in headers.items():
            if not HEADER_NAME.match(name):
                errors[echoed(name, 60)] = ["Not an HTTP header name."]
            elif name.lower() in RESERVED_HEADERS:
                errors[name] = [
                    "Set by the harvester itself (for a login, give the provider's user name "
                    f"and password as {field_reference('auth')})."
                ]
            else:
                try:
                    loaded[name] = Secret().deserialize(header_value)
                except ValidationError as error:
                    errors[name] = error.messages
                else:
                    if isinstance(header_value, str) and (
                        "\n" in header_value or "\r" in header_value
                    ):
                        errors[name] = ["A header value is one line."]
        if errors:
            raise ValidationError(errors)
        return loaded


def set_communities_text(mapping: Mapping[str, str] | None) -> str:
    """The text form of a set-to-community mapping (what the panel's form shows)."""
    return "\n".join(f"{spec} = {community}" for spec, community in (mapping or {}).items())


class SetCommunities(fields.String):
    """``{set spec: community}``, or ``set = community`` lines (a form's textarea). "=" is
    in no set spec (they are hierarchies of unreserved characters joined by ":")."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return dict(value) if value else None

    def _deserialize(
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> dict[str, str]:
        mapping = _pairs(
            value,
            "the communities of sets",
            "physics = physics-community",
            separator="=",
            lines=r"[\n,]",
        )
        for spec, community in mapping.items():
            if not isinstance(community, str) or not community.strip():
                raise ValidationError({spec: ["Give the community's slug or id."]})
            StorableText()(spec)
            StorableText()(community)
        return {spec: community.strip() for spec, community in mapping.items()}


class MissingCreatorPolicy(fields.String):
    """``fail``, ``contributors``, ``holder`` (any case) or a fixed name, stored as parsed."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return str(MissingCreator.parse(text))
        except ValueError as error:
            raise ValidationError(str(error)) from None


def field_policy_text(mapping: Mapping[str, str] | None) -> str:
    """The text form of a harvester's field policies (what the panel's form shows)."""
    return "\n".join(f"{path} = {policy}" for path, policy in (mapping or {}).items())


class FieldPolicyMapping(fields.String):
    """``{metadata path: policy}``, or ``path = policy`` lines (a form's textarea); each
    checked (:class:`..harvest.field_policy.FieldPolicies`; which decides where two name one
    field is its business, not their order)."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return dict(value) if value else None

    def _deserialize(
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> dict[str, str] | None:
        mapping = _pairs(
            value,
            "the field policies",
            "metadata.subjects = merge",
            separator="=",
            lines=r"[\n,]",
        )
        try:
            policies = FieldPolicies.of(mapping)
        except FieldPolicyError as error:
            raise ValidationError(str(error)) from None
        for path, _policy in policies.rules:
            StorableText()(path)
        return {path: str(policy) for path, policy in policies.rules} or None
