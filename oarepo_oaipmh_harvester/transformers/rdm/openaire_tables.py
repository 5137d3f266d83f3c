"""The COAR vocabularies of OpenAIRE Guidelines v4 records, as InvenioRDM values (no application).

Decision owned here: which RDM resource type a COAR resource type URI becomes (docs/openaire.rst
shows the same table), which ``access.files`` value a COAR access right gives, which label a
COAR version URI has, and which RDM resource type an ``oaire:file``'s ``objectType`` names.
RDM's own resource type vocabulary carries no COAR URIs (only eu-repo and DataCite terms), so
the table is ours; each entry lists candidates in order because sites trim the vocabulary and
RDM 12 has ``publication-thesis`` where later releases have ``publication-dissertation``.
"""

from __future__ import annotations

COAR_RESOURCE_TYPE = "http://purl.org/coar/resource_type/"
COAR_ACCESS_RIGHT = "http://purl.org/coar/access_right/"
COAR_VERSION = "http://purl.org/coar/version/"

# COAR resource type id -> (its label, the RDM resource type ids to try in order).
COAR_RESOURCE_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "c_6501": ("journal article", ("publication-article",)),
    "c_2df8fbb1": ("research article", ("publication-article",)),
    "c_dcae04bc": ("review article", ("publication-article",)),
    "c_beb9": ("data paper", ("publication-datapaper", "publication-article")),
    "c_3e5a": ("contribution to journal", ("publication-article",)),
    "c_545b": ("letter to the editor", ("publication-article",)),
    "c_b239": ("editorial", ("publication-article",)),
    "c_998f": ("newspaper article", ("publication-article",)),
    "c_0640": ("journal", ("publication-journal",)),
    "c_2f33": ("book", ("publication-book",)),
    "c_3248": ("book part", ("publication-section",)),
    "c_86bc": ("bibliography", ("publication-other", "publication")),
    "c_ba08": ("book review", ("publication-peerreview",)),
    "c_efa0": ("review", ("publication-peerreview",)),
    "c_f744": ("conference proceedings", ("publication-conferenceproceeding",)),
    "c_5794": ("conference paper", ("publication-conferencepaper",)),
    "c_18cp": ("conference paper not in proceedings", ("publication-conferencepaper",)),
    "c_c94f": ("conference object", ("publication-conferencepaper",)),
    "c_6670": ("conference poster", ("poster",)),
    "c_18co": ("conference poster not in proceedings", ("poster",)),
    "c_8544": ("lecture", ("presentation", "lesson")),
    "c_46ec": ("thesis", ("publication-thesis", "publication-dissertation")),
    "c_db06": ("doctoral thesis", ("publication-dissertation", "publication-thesis")),
    "c_bdcc": ("master thesis", ("publication-thesis", "publication-dissertation")),
    "c_7a1f": ("bachelor thesis", ("publication-thesis", "publication-dissertation")),
    "c_93fc": ("report", ("publication-report",)),
    "c_18gh": ("technical report", ("publication-technicalnote", "publication-report")),
    "c_18ws": ("research report", ("publication-report",)),
    "c_18hj": ("report to funding agency", ("publication-report",)),
    "c_18wq": ("other type of report", ("publication-report",)),
    "c_186u": ("policy report", ("publication-report",)),
    "c_ba1f": ("project deliverable", ("publication-deliverable", "publication-report")),
    "c_baaf": ("research proposal", ("publication-proposal",)),
    "c_8042": ("working paper", ("publication-workingpaper",)),
    "c_816b": ("preprint", ("publication-preprint",)),
    "c_15cd": ("patent", ("publication-patent",)),
    "c_18cf": ("text", ("publication",)),
    "c_ddb1": ("dataset", ("dataset",)),
    "c_5ce6": ("software", ("software",)),
    "c_393c": ("workflow", ("workflow", "software")),
    "c_c513": ("image", ("image",)),
    "c_ecc8": ("still image", ("image",)),
    "c_12cd": ("map", ("image",)),
    "c_12ce": ("video", ("video",)),
    "c_8a7e": ("moving image", ("video",)),
    "c_18cc": ("sound", ("audio",)),
    "c_e059": ("learning object", ("lesson",)),
    "c_7ad9": ("website", ("other",)),
    "c_e9a0": ("interactive resource", ("other",)),
    "c_1843": ("other", ("other",)),
}

# oaire:resourceType's resourceTypeGeneral -> RDM ids to try when the URI says nothing we know.
GENERAL_RESOURCE_TYPES: dict[str, tuple[str, ...]] = {
    "literature": ("publication",),
    "publication": ("publication",),
    "dataset": ("dataset",),
    "software": ("software",),
    "other research product": ("other",),
}

# COAR access right id -> (label, access.files). The record stays public whatever the files'
# right: its metadata was published over OAI-PMH, and a harvested record has no files.
COAR_ACCESS_RIGHTS: dict[str, tuple[str, str]] = {
    "c_abf2": ("open access", "public"),
    "c_f1cf": ("embargoed access", "restricted"),
    "c_16ec": ("restricted access", "restricted"),
    "c_14cb": ("metadata only access", "restricted"),
}
EMBARGOED = "c_f1cf"

# COAR version id -> its abbreviation (RDM's version is free text; the URI itself has no home).
COAR_VERSIONS: dict[str, str] = {
    "c_b1a7d7d4d402bcce": "AO",
    "c_71e4c1898caa6e32": "SMUR",
    "c_ab4af688f83e57aa": "AM",
    "c_fa2ee174bc00049f": "P",
    "c_970fb48d4fbd8a85": "VoR",
    "c_e19f295774971610": "CVoR",
    "c_dc82b40f9837b551": "EVoR",
    "c_be7fb7dd8ff6fe43": "NA",
}

# oaire:file objectType -> RDM resource type ids of the file's related identifier.
FILE_OBJECT_TYPES: dict[str, tuple[str, ...]] = {
    "fulltext": ("publication",),
    "dataset": ("dataset",),
    "software": ("software",),
    "other": ("other",),
}


def coar_id(uri: str, base: str) -> str | None:
    """The id (``c_6501``) of a COAR URI under `base`, http or https, with or without a
    trailing slash; None for any other value."""
    value = uri.strip().rstrip("/")
    plain = base.removeprefix("http://")
    for prefix in (base, "https://" + plain):
        if value.startswith(prefix):
            return value[len(prefix) :] or None
    return None
