"""The benchmark's processes and meters: provider, search server, database, worker processes."""
