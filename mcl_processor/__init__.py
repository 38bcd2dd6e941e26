"""The MCL processor and the read models it maintains: search index, lineage graph, timeseries.

Entry points: `processor.MclProcessor` (consume, restore, check, wait for indexing) and
`embedded.SqliteReadModels` (the read models in `<data dir>/readmodels.db`), whose
`search`, `lineage` and `timeseries` answer queries.
"""
