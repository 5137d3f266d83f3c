"""Administration panel: "OAI-PMH harvesters" and "OAI-PMH harvested records"."""
