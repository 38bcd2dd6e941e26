"""A lineage neighbourhood of n datasets written as upstreamLineage: a root with a fifth of the
others one hop upstream, three tenths two hops up, a fifth one hop downstream and the rest two
hops down (n=100: 20, 30, 20 and 29), each two-hop dataset tied to one of the one-hop ones."""

from __future__ import annotations

from typing import Any

from tests.support.builders import mcp


def neighbourhood(n: int, prefix: str = "big") -> tuple[str, dict[str, list[str]]]:
    """(root, {dataset: its upstream datasets}) over n datasets (n >= 5) on postgres."""
    def ds(name: str) -> str:
        return f"urn:li:dataset:(urn:li:dataPlatform:postgres,{prefix}.{name},PROD)"

    rest = n - 1
    up1, up2, down1 = round(rest * 0.2), round(rest * 0.3), round(rest * 0.2)
    level = lambda name, count: [ds(f"{name}_{i:03}") for i in range(count)]  # noqa: E731
    root = ds("root_orders_summary")
    ups1, ups2 = level("upstream_level_one", up1), level("upstream_level_two", up2)
    downs1, downs2 = level("downstream_level_one", down1), level("downstream_level_two", rest - up1 - up2 - down1)
    upstream_of: dict[str, list[str]] = {root: ups1, **{u: [] for u in ups1}, **{d: [root] for d in downs1}}
    for j, u in enumerate(ups2):
        upstream_of[ups1[j % up1]].append(u)
    for j, d in enumerate(downs2):
        upstream_of[d] = [downs1[j % down1]]
    return root, upstream_of


def upstream_lineage(upstream_of: dict[str, list[str]]) -> list[dict[str, Any]]:
    """One upstreamLineage MCP per dataset with upstreams."""
    stamp = {"time": 0, "actor": "urn:li:corpuser:lineage"}
    return [mcp(d, "upstreamLineage", {"upstreams": [{"dataset": u, "type": "TRANSFORMED", "auditStamp": stamp}
                                                     for u in ups]})
            for d, ups in upstream_of.items() if ups]
