"""Hostile text: strings that break naive parsers, shared by the hostile-input tests."""

from __future__ import annotations

HOSTILE_TEXT = ["", " ", "'", '"', "\\", ")", "(", ",", "%", "%2C", "%00", "\x00", "\u202e", "\ufeff", "🦄",
                "\U0010ffff", "a" * 5000, "' OR 1=1 --", "'; DROP TABLE aspects; --", "*:*", '{"match_all": {}}',
                "name:(a OR b)", 'a" OR "b', "NEAR(a b)", "a AND (", "^x", "../../etc/passwd", "${jndi:ldap://x}"]
