"""The harvest benchmark's code; `benchmarks/harvest.py` is its entry point.

- `settings`: the names and defaults every process of a run shares, and the log;
- `harness`: the processes and what they measure: the provider process (`harness.provider`),
  the search server and the database (`harness.services`), a fresh worker process per phase
  that boots the Invenio app (`harness.worker`), CPU, RSS, SQL and search counters
  (`harness.meters`), the profiler (`harness.profiler`), SQL and time attributed to labelled
  code (`harness.attribution`) and the code and package versions (`harness.environment`);
- `phases`: what each phase measures, run inside its worker process: `phases.limits` (fetch,
  write, naive), `phases.ours` (ours, batch), `phases.workers` (workers, rdm_workers),
  `phases.rdm` (rdm), `phases.rdm_grown` (rdm_grown), `phases.rdm_profile`
  (`benchmarks/profile_rdm.py`) and, used by several, `phases.shared` (the transformed corpus,
  the harvester, one harvest run);
- `summary`: the ratios the issues set targets for, and what `--compare` reads of another
  run's JSON; `report`: the printed report.

The package is imported from `benchmarks/` (the entry point's directory, which spawned worker
processes inherit on their `sys.path`), as `rdm_target` is.
"""
