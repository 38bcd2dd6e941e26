"""What the read models' OpenSearch adapters share: `indices` (index families under a prefix,
bulk writes, refreshes, searches that fail whole, and the client), used by the search and
timeseries adapters (`search/opensearch.py`, `timeseries/opensearch.py`) and by
`distributed.py`, which opens the client."""
