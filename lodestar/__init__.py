"""The Lodestar application: the server and its processes, the command line, the HTTP APIs and
web UI, webhooks and the metrics registry, assembled above the write side (`gms`) and the read
side (`mcl_processor`)."""
