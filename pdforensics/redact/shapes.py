"""Secrets known by their shape: provider tokens, PEM keys, URL passwords, HTTP credentials,
and command lines that carry a password (`curl -u`, `mysql -pV`, `sshpass -p V`).

Every pattern is linear (pdforensics.linear, RE2). A pattern that needs the character before a
token to be no letter or digit consumes it (`(?:^|[^A-Za-z0-9])`) and puts the secret in group 1;
a right-hand boundary is checked in Python. Each finder yields (kind, start, end) spans.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from pdforensics import linear

Span = tuple[str, int, int]
_B = rb"(?:^|[^A-Za-z0-9])"  # the boundary before a token (consumed; the token is a group)

# kind -> body; one alternation scans the text once for all of them
TOKEN_SHAPES: tuple[tuple[str, bytes], ...] = (
    ("huggingface-token", rb"(?:hf_|api_org_)[A-Za-z0-9]{16,}"),
    ("openai-key", rb"sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    ("github-token", rb"gh[pousr]_[A-Za-z0-9]{20,}"),
    ("github-pat", rb"github_pat_[A-Za-z0-9_]{20,}"),
    ("gitlab-token", rb"gl(?:pat|dt|rt|cbt|ptt|ft|imt|oas|soat|agent|sa|c)-[A-Za-z0-9_\-]{16,}"),
    ("slack-token", rb"(?:xox[abposre]|xapp|xoxe\.xox[bp])-[A-Za-z0-9\-]{10,}"),
    ("stripe-key", rb"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{16,}"),
    ("google-api-key", rb"AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-]{20,}"),
    ("npm-token", rb"npm_[A-Za-z0-9]{30,}"),
    ("pypi-token", rb"pypi-AgE[A-Za-z0-9_\-]{30,}"),
    ("vault-token", rb"hv[sbr]\.[A-Za-z0-9_\-]{20,}"),
    ("sendgrid-key", rb"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    # a 4-letter prefix and 32 hex characters: Databricks (either case) and Mailgun's key-
    ("databricks-token", rb"dapi[0-9a-fA-F]{32}(?:-[0-9])?"),
    ("mailgun-key", rb"key-[0-9a-f]{32}"),
    # shapes nobody had planted before issue 32: LLM providers, infra and SaaS tokens
    ("llm-provider-key", rb"(?:gsk_|pplx-|r8_|xai-|fw_)[A-Za-z0-9]{20,}"),
    ("infra-token", rb"(?:dop_v1_[a-f0-9]{64}|tskey-[A-Za-z0-9\-]{20,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|"
                    rb"lin_api_[A-Za-z0-9]{32,}|sntrys_[A-Za-z0-9+/=_\-]{32,}|PMAK-[0-9a-f]{24}-[0-9a-f]{34}|"
                    rb"NRAK-[A-Z0-9]{27}|ATATT3[A-Za-z0-9_\-=]{32,}|SK[0-9a-f]{32})"),
    # base64 of a docker config.json: {"auths": ... (compact, pretty, or with a space)
    ("docker-config", rb"(?:eyJhdXRocyI6|ewogICJhdXRocyI6|ewoJImF1dGhzIjo|eyAiYXV0aHMiOi)[A-Za-z0-9+/=]*"),
    ("aws-access-key-id", rb"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    ("jwt", rb"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
)
_TOKENS = linear.compile(_B + rb"(?:" + rb"|".join(rb"(" + body + rb")" for _k, body in TOKEN_SHAPES) + rb")")
_ALNUM_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def token_shapes(data: bytes) -> Iterator[Span]:
    for m in _TOKENS.finditer(data):
        i = m.lastindex or 0
        kind = TOKEN_SHAPES[i - 1][0]
        start, end = m.span(i)
        if kind == "aws-access-key-id" and end < len(data) and data[end] in _ALNUM_UPPER:
            continue  # a longer upper-case word, not a key id
        yield kind, start, end


_PEM_BEGIN = linear.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = linear.compile(rb"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = linear.compile(rb"[A-Za-z0-9+/=\s\\?]*")  # a block whose END was cut: its base64 run
_B64_TAIL = linear.compile(rb"([A-Za-z0-9+/]{16,}={0,2})[ \t\\]*\r?$")


def pem(data: bytes) -> Iterator[Span]:
    if b"PRIVATE KEY" not in data:
        return
    # each BEGIN to the first END after it (found by bisection over one pass of ENDs: a text of
    # many BEGINs and no END is read once, not once per BEGIN), else to the end of its base64
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(data)]
    covered = 0
    for m in _PEM_BEGIN.finditer(data):
        if m.start() < covered:
            continue
        i = bisect.bisect_left(ends, (m.end(), 0))
        end = ends[i][1] if i < len(ends) else _PEM_BODY.match(data, m.end()).end()  # type: ignore[union-attr]
        covered = end
        yield "pem-private-key", m.start(), end
    # a PEM body whose BEGIN line was cut off (a log tail): base64 lines before an END line
    floor = 0
    for m in _PEM_END.finditer(data):
        line_end = data.rfind(b"\n", floor, m.start())
        for _ in range(200):  # a 16 kbit key is ~50 lines
            if line_end < floor:
                break
            line_start = data.rfind(b"\n", floor, line_end) + 1
            line = data[line_start:line_end]
            if b"-----BEGIN" in line:
                break
            b64 = _B64_TAIL.search(line)
            if b64 is None:
                break
            yield "pem-body", line_start + b64.start(1), line_start + b64.end(1)
            line_end = line_start - 1
        floor = m.end()


# (kind, pattern, needle in the lower-cased text): group 1 is the secret
_PATTERNS: tuple[tuple[str, linear.Pattern[bytes], bytes], ...] = (
    ("webhook-url", linear.compile(
        rb"(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks|"
        rb"outlook\.office\.com/webhook|webhook\.office\.com/webhookb2)/([^\s\"'<>\x00]+)", linear.I), b"hook"),
    ("aws-secret-access-key", linear.compile(
        rb"(?:aws[_\-]?secret[_\-]?(?:access[_\-]?)?key|secret[_\-]?access[_\-]?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
        rb"([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)", linear.I), b"secret"),
    # scheme://user:PASSWORD@host: the password runs to the last @ of the authority (u:p@q@db)
    ("url-password", linear.compile(
        rb"(?:^|[^A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,32}://[^\s:/@\"'<>\x00]*:([^\s/\"'<>\x00]+)@"), b"://"),
    # ?key=AIza..., &sig=... (Azure SAS), X-Amz-Signature=...: query parameters that are secrets
    ("url-query", linear.compile(
        rb"[?&;](?:key|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|"
        rb"x-goog-signature|x-goog-credential|access_token|id_token|refresh_token|token|apikey|api_key|"
        rb"code|password|secret|client_secret)=([^&\s\"'<>#\x00]+)", linear.I), b"="),
    ("http-header", linear.compile(
        rb"(?:^|[^A-Za-z0-9\-])(?:proxy-authorization|authorization|x-api-key|api-key|x-auth-token|"
        rb"x-access-token|private-token|x-vault-token|set-cookie|cookie)[ \t]*:[ \t]*"
        rb"(?:(?:bearer|basic|token|digest|negotiate)[ \t]+)?([^\r\n\x00\"']*[^\s\x00\"'])", linear.I), b":"),
    # a bearer token anywhere (`Bearer abc` in a repr or an error message)
    ("bearer", linear.compile(rb"(?:^|[^A-Za-z0-9])bearer[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)", linear.I), b"bearer"),
    # curl -u user:pass, --user 'u:p a', --proxy-user
    ("basic-auth-option", linear.compile(
        rb"(?:^|[^A-Za-z0-9_\-])(?:-u|-U|--user|--proxy-user)(?:[ \t\x00]+|=)"
        rb"('[^'\r\n\x00]*:[^'\r\n\x00]*'|\"[^\"\r\n\x00]*:[^\"\r\n\x00]*\"|[^\s\x00\"':]+:[^\s\x00\"']*)"), b"-u"),
    # mysql -pVALUE (the password glued to -p), within a dozen arguments of the client's name
    ("short-option", linear.compile(
        rb"(?:^|[\s\x00/])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|mariadb-dump)"
        rb"(?:[ \t\x00]+[^\s\x00]+){0,12}?[ \t\x00]+-p([^\s\x00]+)"), b"-p"),
    # sshpass -p V, redis-cli -a V: a flag whose next argument is a password
    ("short-option", linear.compile(
        rb"(?:^|[\s\x00/])(?:sshpass[ \t\x00]+-p|redis-cli(?:[ \t\x00]+[^\s\x00]+){0,12}?[ \t\x00]+-a)"
        rb"[ \t\x00]*([^\s\x00]+)"), b"-"),
    # SQL: CREATE USER u IDENTIFIED BY 'V'
    ("sql-password", linear.compile(
        rb"identified[ \t]+(?:with[ \t]+[^\s]{1,64}[ \t]+)?by[ \t]+('[^'\r\n\x00]*'|\"[^\"\r\n\x00]*\")", linear.I),
     b"identified"),
)


def patterns(data: bytes, lowered: bytes) -> Iterator[Span]:
    for kind, pattern, needle in _PATTERNS:
        if needle in lowered:
            for m in pattern.finditer(data):
                yield kind, m.start(1), m.end(1)


SHAPE_KINDS = tuple(dict.fromkeys(
    [k for k, _b in TOKEN_SHAPES] + ["pem-private-key", "pem-body"] + [k for k, _p, _n in _PATTERNS]))


def shape_spans(data: bytes, lowered: bytes) -> Iterator[Span]:
    """Every shape hit in data (lowered: data.lower(), shared by the caller)."""
    yield from token_shapes(data)
    yield from pem(data)
    yield from patterns(data, lowered)
