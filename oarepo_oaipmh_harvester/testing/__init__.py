"""Test and demo support: a synthetic corpus and a local OAI-PMH data provider.

Shipped in the package because the demo command and the benchmark use them too.
"""
