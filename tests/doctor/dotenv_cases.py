"""`.env` lines and the value Docker Compose gives each, typed by hand from compose's documented
rules (docs.docker.com, "Syntax for environment files in Docker Compose" and "Interpolation"):
read by j0.compose.dotenv in tests/doctor/test_compose_env.py, and by the real
`docker compose config` in tests/compose/test_compose_dotenv.py, so both are held to one table.

The environment of both readers holds OTHER=from-env (and no UNSET_KNOB).
"""

from __future__ import annotations

ENVIRONMENT = {"OTHER": "from-env"}

# (the .env text, {variable: the value compose gives it})
CASES: list[tuple[str, dict[str, str]]] = [
    ("PLAIN=value\n", {"PLAIN": "value"}),
    ('DQ="value"\n', {"DQ": "value"}),
    ("SQ='value'\n", {"SQ": "value"}),
    ("INLINE=value # comment\n", {"INLINE": "value"}),
    ("HASH=value# not a comment\n", {"HASH": "value# not a comment"}),
    ("HASH_FIRST=#novalue\n", {"HASH_FIRST": "#novalue"}),
    ('DQ_HASH="value # not a comment"\n', {"DQ_HASH": "value # not a comment"}),
    ('DQ_COMMENT="value" # comment\n', {"DQ_COMMENT": "value"}),
    ("SQ_LITERAL='$OTHER'\n", {"SQ_LITERAL": "$OTHER"}),
    ("SQ_BRACED='${OTHER}'\n", {"SQ_BRACED": "${OTHER}"}),
    ("SQ_ESCAPED='Let\\'s go!'\n", {"SQ_ESCAPED": "Let's go!"}),
    ('DQ_JSON="{\\"hello\\": \\"json\\"}"\n', {"DQ_JSON": '{"hello": "json"}'}),
    ('DQ_TAB="some\\tvalue"\n', {"DQ_TAB": "some\tvalue"}),
    ("SQ_TAB='some\\tvalue'\n", {"SQ_TAB": "some\\tvalue"}),
    ("UQ_TAB=some\\tvalue\n", {"UQ_TAB": "some\\tvalue"}),
    ('DQ_NEWLINE="a\\nb"\n', {"DQ_NEWLINE": "a\nb"}),
    ('DQ_BACKSLASH="a\\\\b"\n', {"DQ_BACKSLASH": "a\\b"}),
    ('MULTI="line one\nline two"\n', {"MULTI": "line one\nline two"}),
    ("SQ_MULTI='one\ntwo'\n", {"SQ_MULTI": "one\ntwo"}),
    ("export EXPORTED=yes\n", {"EXPORTED": "yes"}),
    ("SPACED = spaced value  \n", {"SPACED": "spaced value"}),
    ("EMPTY=\n", {"EMPTY": ""}),
    ("# KEY=commented\n\n   \nAFTER=blank lines\n", {"AFTER": "blank lines"}),
    ("UQ_REF=$OTHER/x\n", {"UQ_REF": "from-env/x"}),
    ("BRACED=${OTHER}/x\n", {"BRACED": "from-env/x"}),
    ("DEFAULT=${UNSET_KNOB:-fallback}\n", {"DEFAULT": "fallback"}),
    ("DASH_DEFAULT=${UNSET_KNOB-fallback}\n", {"DASH_DEFAULT": "fallback"}),
    ("NESTED=${UNSET_KNOB:-${OTHER:-no}/hub}\n", {"NESTED": "from-env/hub"}),
    ("ALT=${OTHER:+set}\n", {"ALT": "set"}),
    ("NO_ALT=${UNSET_KNOB:+set}\n", {"NO_ALT": ""}),
    ('DQ_REF="${OTHER} y"\n', {"DQ_REF": "from-env y"}),
    ('DQ_DOLLAR="\\$OTHER"\n', {"DQ_DOLLAR": "$OTHER"}),
    ("DOLLARS=$$OTHER\n", {"DOLLARS": "$OTHER"}),
    ("FIRST=one\nEARLIER=${FIRST}-two\n", {"FIRST": "one", "EARLIER": "one-two"}),
    ("OTHER=from-file\nENV_FIRST=${OTHER}\n", {"OTHER": "from-file", "ENV_FIRST": "from-env"}),
    ("HF_TOKEN_FILE='~/my token'\n", {"HF_TOKEN_FILE": "~/my token"}),
    ("TRAILING_CR=value\r\n", {"TRAILING_CR": "value"}),
]
