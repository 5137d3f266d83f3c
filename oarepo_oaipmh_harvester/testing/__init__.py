"""A local OAI-PMH data provider and its synthetic corpus.

Shipped in the wheel so that a site can test its own setup against a provider it controls
(``python -c "from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider"``); the
demo, the admin panel runner, the RDM bootstrap and the sample target are test support
(``tests/support``, the ``oaiharvest-test-support`` distribution).
"""
