"""Keep an Invenio repository in step with remote OAI-PMH data providers."""

__version__ = "0.1.0"
