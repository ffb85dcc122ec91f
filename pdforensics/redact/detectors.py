"""The shapes a secret takes in host text, shared by the redactor and `verify --secrets`.

Each detector marks the span of the secret value only (names, flags and quotes stay, so
the evidence still says *which* setting was there). Values are taken whole: quoted values
up to their closing quote, argv values up to the NUL that ends them, URL passwords up to
the last `@` of the authority, YAML values to the end of the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

MARKER = re.compile(rb"<redacted:[0-9a-f]{10}>")
_M = rb"<redacted:[0-9a-f]{10}>"
# Values that say "no secret set": kept, so the evidence shows a key is absent.
EMPTY_VALUES = frozenset({b"", b"none", b"null", b"nil", b"true", b"false", b"0", b"1", b"''", b'""',
                          b"~", b"<none>", b"[]", b"{}"})

# -- names: env vars, flags, JSON keys, key=value ----------------------------------------------
_STRONG = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY",
           "COOKIE", "CONNECTIONSTRING", "PASSPHRASE")
_SEGMENTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _secret_segment(seg: str, last: bool, alone: bool) -> bool:
    if seg.endswith(("TOKEN", "KEY")):  # HF_TOKEN, HFTOKEN, API_KEY, apiKey, TOKEN
        # a word that names the value itself: not HF_TOKEN_PATH, KEY_ID, or a bare `key`
        return last and not (alone and seg == "KEY")
    if seg in ("PASS", "PWD", "DSN", "PRIVATE", "AUTH", "OAUTH", "AUTHN", "AUTHZ"):
        return True
    return "SESSION" in seg or seg.startswith(("AUTHORIZ", "AUTHENTICAT"))


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether an env var, flag, JSON key or `k=v` name holds a credential.

    TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE (as
    words of the name: `HF_TOKEN`, `apiKey`, `--admin-api-key`; TOKEN/KEY as its last word).
    Counts, paths and tools that only contain the letters (`--max-total-tokens`,
    `--tokenizer-path`, `HF_TOKEN_PATH`, `key_id`, a bare `key`, `PWD`) are not secrets.
    """
    bare = name.lstrip("-")
    if bare in ("PWD", "OLDPWD"):
        return False
    segs = [s.upper() for s in _SEGMENTS.findall(bare)]
    joined = "".join(segs)
    return any(w in joined for w in _STRONG) or any(
        _secret_segment(s, i == len(segs) - 1, len(segs) == 1) for i, s in enumerate(segs))


Finder = Callable[[bytes], Iterator[tuple[int, int]]]


@dataclass(frozen=True)
class Detector:
    """One way a secret shows up: `group` of `pattern` is the secret; `name_group`, when set,
    must be a secret-looking name (is_secret_name) for the match to count. Patterns that
    follow a name put the value in a lookahead, so `Environment=HF_TOKEN=V` is seen twice.
    `needles`: one of them must occur (lower-cased text when `fold`) or the regex is skipped.
    `finder`, when set, replaces the regex: it yields the (start, end) spans itself."""

    kind: str
    pattern: re.Pattern[bytes]
    group: int = 0
    name_group: int = 0
    needles: tuple[bytes, ...] = ()
    fold: bool = False
    finder: Finder | None = None

    def may_match(self, data: bytes, lowered: bytes) -> bool:
        hay = lowered if self.fold else data
        return not self.needles or any(n in hay for n in self.needles)


def _shape(kind: str, body: bytes, *needles: bytes, fold: bool = False) -> Detector:
    return Detector(kind, re.compile(rb"(?<![A-Za-z0-9])" + body), needles=needles, fold=fold)


def _named(kind: str, pattern: bytes, *needles: bytes, flags: int = 0) -> Detector:
    """A value after a name: group 1 is the name, group 2 (in a lookahead) the value."""
    return Detector(kind, re.compile(pattern, flags), group=2, name_group=1,
                    needles=needles or _NAME_WORDS, fold=True)


# -- a PEM body whose BEGIN line was cut off (a log tail): base64 lines before an END line -----
_PEM_END = re.compile(rb"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_B64_TAIL = re.compile(rb"([A-Za-z0-9+/]{16,}={0,2})[ \t\\]*\r?$")


def _pem_body_before_end(data: bytes) -> Iterator[tuple[int, int]]:
    for m in _PEM_END.finditer(data):
        line_end = data.rfind(b"\n", 0, m.start())
        for _ in range(200):  # a 16 kbit key is ~50 lines
            if line_end < 0:
                break
            line_start = data.rfind(b"\n", 0, line_end) + 1
            line = data[line_start:line_end]
            if b"-----BEGIN" in line:
                break
            b64 = _B64_TAIL.search(line)
            if b64 is None:
                break
            yield line_start + b64.start(1), line_start + b64.end(1)
            line_end = line_start - 1


# words every secret-looking name contains (lower case), for the name-driven detectors
_NAME_WORDS = (b"token", b"key", b"secret", b"pass", b"pwd", b"credential", b"auth", b"cookie",
               b"session", b"private", b"dsn", b"connection")
_BARE = rb"[^\s\x00\"'&,;)}\]\\][^\s\x00\"'&,;)}\]]*"  # never begins with a backslash:
# inside JSON text a value is quoted with escaped quotes (`api_key=\"V\"`), taken whole here
_ESC_QUOTED = rb'\\"(?:[^"\\\r\n\x00]|\\[^"\r\n\x00])*\\"'
_QUOTED = rb"'[^'\r\n\x00]*'|\"(?:[^\"\\\r\n\x00]|\\.)*\""
_ESCAPED = rb"[^\"\\\x00]*(?:\\.[^\"\\\x00]*)*"
_PY_STR = rb"b?'(?:[^'\\\r\n\x00]|\\.)*'|b?\"(?:[^\"\\\r\n\x00]|\\.)*\""
# an inline `password: a b` runs to the next `,;)}]` or the line end (a log prefix may precede it)
_INLINE = rb"[^\s\x00\"',;)}\]](?:[^\r\n\x00,;)}\]]*[^\s\x00,;)}\]])?"
_NUL_ARG = rb"[^\x00\r\n]*[^\s\x00](?=\x00)"  # an argv/environ entry runs to its NUL
_NAME = rb"[A-Za-z_][A-Za-z0-9_.\-]*"
# an unquoted flag value in space-separated text (ps, logs) runs until the next flag or line end:
# `--api-key a b --port 1` leaves no word of `a b`
_WORDS = rb"(?!--)[^\s\x00\"']+(?:[ \t]+(?!-)[^\s\x00\"']+)*"
_FLAG_VALUE = rb"(?:" + _M + rb"|" + _QUOTED + rb"|" + _WORDS + rb")"
_ARGV_VALUE = rb"(?:" + _M + rb"|(?!--)[^\x00]+)"
# `Authorization: Bearer V`: the scheme word stays readable, the bearer/http-header detectors take V
_NO_SCHEME = rb"(?![Bb](?:earer|asic)[ \t]|[Tt]oken[ \t]|[Dd]igest[ \t]|[Nn]egotiate[ \t])"
_FLAG = rb"(?<![A-Za-z0-9_\-])(--?[A-Za-z][A-Za-z0-9_\-]*)"

DETECTORS: tuple[Detector, ...] = (
    Detector("pem-private-key", re.compile(
        rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        rb"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\?]*)", re.DOTALL),
        needles=(b"PRIVATE KEY",)),
    Detector("pem-body", re.compile(b"(?!)"), needles=(b"PRIVATE KEY",), finder=_pem_body_before_end),
    _shape("huggingface-token", rb"hf_[A-Za-z0-9]{16,}", b"hf_"),
    _shape("openai-key", rb"sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}", b"sk-"),
    _shape("github-token", rb"gh[pousr]_[A-Za-z0-9]{20,}", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
    _shape("github-pat", rb"github_pat_[A-Za-z0-9_]{20,}", b"github_pat_"),
    _shape("gitlab-token", rb"gl(?:pat|dt|rt|cbt|ptt|ft|imt|oas|soat|agent)-[A-Za-z0-9_\-]{16,}",
           *(b"gl%s-" % w for w in (b"pat", b"dt", b"rt", b"cbt", b"ptt", b"ft", b"imt", b"oas", b"soat", b"agent"))),
    _shape("slack-token", rb"xox[abposre]-[A-Za-z0-9\-]{10,}", b"xox"),
    _shape("stripe-key", rb"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{16,}",
           b"_live_", b"_test_", b"whsec_"),
    _shape("google-api-key", rb"AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-]{20,}", b"AIza", b"ya29."),
    _shape("npm-token", rb"npm_[A-Za-z0-9]{30,}", b"npm_"),
    _shape("pypi-token", rb"pypi-AgE[A-Za-z0-9_\-]{30,}", b"pypi-"),
    _shape("vault-token", rb"hv[sbr]\.[A-Za-z0-9_\-]{20,}", b"hvs.", b"hvb.", b"hvr."),
    _shape("sendgrid-key", rb"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", b"SG."),
    _shape("databricks-token", rb"dapi[0-9a-f]{32}", b"dapi"),
    # base64 of a docker config.json: {"auths": ... (compact, pretty, or with a space)
    _shape("docker-config", rb"(?:eyJhdXRocyI6|ewogICJhdXRocyI6|ewoJImF1dGhzIjo|eyAiYXV0aHMiOi)"
           rb"[A-Za-z0-9+/=]*", b"eyJhdXRocyI6", b"ewogICJhdXRocyI6", b"ewoJImF1dGhzIjo", b"eyAiYXV0aHMiOi"),
    _shape("aws-access-key-id", rb"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])", b"AKIA", b"ASIA"),
    _shape("jwt", rb"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", b"eyJ"),
    Detector("webhook-url", re.compile(
        rb"(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks|"
        rb"outlook\.office\.com/webhook|webhook\.office\.com/webhookb2)/([^\s\"'<>\x00]+)", re.IGNORECASE),
        group=1, needles=(b"hooks.slack.com", b"/api/webhooks", b"office.com/webhook"), fold=True),
    Detector("aws-secret-access-key", re.compile(
        rb"(?:aws[_\-]?secret[_\-]?(?:access[_\-]?)?key|secret[_\-]?access[_\-]?key)[\"']?\s*[:=]\s*[\"']?"
        rb"(?=(" + _M + rb"|[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])))", re.IGNORECASE), group=1,
        needles=(b"secret",), fold=True),
    # scheme://user:PASSWORD@host: the password runs to the last @ of the authority (u:p@q@db)
    Detector("url-password", re.compile(
        rb"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"'<>\x00]*:(?=(" + _M +
        rb"|[^\s/\"'<>\x00]+)@)"), group=1, needles=(b"://",)),
    # ?key=AIza..., &sig=... (Azure SAS), X-Amz-Signature=...: query parameters that are secrets
    Detector("url-query", re.compile(
        rb"[?&;](?:key|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|"
        rb"x-goog-signature|x-goog-credential|access_token|id_token|refresh_token|token|apikey|api_key|"
        rb"code|password|secret|client_secret)=(?=(" + _M + rb"|[^&\s\"'<>#\x00]+))", re.IGNORECASE),
        group=1, needles=(b"key=", b"sig=", b"signature=", b"credential=", b"token=", b"code=",
                          b"password=", b"secret="), fold=True),
    Detector("http-header", re.compile(
        rb"(?<![A-Za-z0-9\-])(?:proxy-authorization|authorization|x-api-key|api-key|x-auth-token|"
        rb"x-access-token|private-token|x-vault-token|set-cookie|cookie)[ \t]*:[ \t]*"
        rb"(?:(?:bearer|basic|token|digest|negotiate)[ \t]+)?"
        rb"(?=(" + _M + rb"|[^\r\n\x00\"']*[^\s\x00\"']))", re.IGNORECASE), group=1,
        needles=(b"authorization", b"api-key", b"-token", b"cookie"), fold=True),
    # a bearer token anywhere (`Bearer abc` in a repr or an error message)
    Detector("bearer", re.compile(rb"(?<![A-Za-z0-9])bearer[ \t]+(?=(" + _M + rb"|[A-Za-z0-9._~+/\-]{8,}=*))",
                                  re.IGNORECASE), group=1, needles=(b"bearer",), fold=True),
    # curl -u user:pass, --user 'u:p a', --proxy-user
    Detector("basic-auth-option", re.compile(
        rb"(?<![A-Za-z0-9_\-])(?:-u|-U|--user|--proxy-user)(?:[ \t\x00]+|=)(?=(" + _M +
        rb"|'[^'\r\n\x00]*:[^'\r\n\x00]*'|\"[^\"\r\n\x00]*:[^\"\r\n\x00]*\"|[^\s\x00\"':]+:[^\s\x00\"']*))"),
        group=1, needles=(b"-u", b"--user", b"-U", b"--proxy-user"), fold=False),
    # .netrc: `machine h login u password p` (one line or one token per line)
    Detector("netrc-password", re.compile(
        rb"(?:\blogin[ \t]+\S+[ \t]+|^[ \t]*)(?:password|passwd)[ \t]+(?=(" + _M + rb"|\S+))",
        re.MULTILINE), group=1, needles=(b"password", b"passwd")),
    # --api-key V, --api-key "a b", --api-key=V, argv NUL-separated, or a JSON list ["--hf-token", "V"]
    _named("flag", _FLAG + rb"(?:\x00(?=(" + _ARGV_VALUE + rb"))|=(?=(" + _M + rb"|" + _NUL_ARG + rb"|" + _QUOTED
           + rb"|" + _WORDS + rb"))|[ \t]+(?=(" + _FLAG_VALUE + rb"))|\"\s*,\s*\"(?=(" + _M + rb"|" + _ESCAPED
           + rb")\"(?!\s*:)))"),  # (a JSON object's next key, `"k":`, is no flag value)
    _named("json-field", rb"\"(" + _NAME + rb")\"\s*:\s*\"(?=(" + _M + rb"|" + _ESCAPED + rb")\")"),
    # Python reprs: {'api_key': 'V'}, {'Authorization': 'Bearer V'}, {"password": b'V'}
    _named("dict-field", rb"['\"](" + _NAME + rb")['\"]\s*:\s*(?=(" + _M + rb"|" + _PY_STR + rb"))"),
    # YAML-ish `api_key: V` / `  password: "a b"`: at a line start the value runs to the line end
    _named("yaml-field", rb"^[ \t]*(?:-[ \t]+)?(" + _NAME + rb")[ \t]*:[ \t]+" + _NO_SCHEME
           + rb"(?=(" + _M + rb"|" + _QUOTED + rb"|[^\s\x00#'\"][^\r\n\x00]*[^\s\x00]|[^\s\x00#'\"]))",
           flags=re.MULTILINE),
    _named("colon-field", rb"(?<=[ \t{,(])(" + _NAME + rb")[ \t]*:[ \t]+" + _NO_SCHEME
           + rb"(?=(" + _M + rb"|" + _QUOTED + rb"|" + _INLINE + rb"))"),
    # Environment="HF_TOKEN=a b", 'PASSWORD=x y': a quoted assignment runs to its closing quote
    Detector("quoted-assignment",  # (a value ending in a backslash is an escaped quote's: not this form)
             re.compile(rb"(?<=([\"']))(" + _NAME + rb")=(?=(" + _M + rb"|[^\"'\r\n\x00]*)(?<!\\)\1)"),
             group=3, name_group=2, needles=_NAME_WORDS, fold=True),
    # NAME=V in env blocks, unit files, logs, URLs (?token=V), Python reprs (api_key='V'),
    # Prometheus labels ({api_key="V"})
    _named("assignment", rb"(?<![A-Za-z0-9_.\-])(" + _NAME + rb")=(?=(" + _M + rb"|" + _QUOTED + rb"|" +
           _ESC_QUOTED + rb"|" + _NUL_ARG + rb"|" + _BARE + rb"))"),
)


# Every needle of every detector, lower-cased, in one regex: text in which none occurs (most
# command lines, stderr, short values) skips the detectors at once. Lower-casing a
# case-sensitive needle only widens the test, so nothing a detector would find is skipped.
ANY_NEEDLE = re.compile(b"|".join(re.escape(n.lower()) for d in DETECTORS for n in d.needles))


@dataclass(frozen=True)
class Hit:
    """A secret a detector found: where, of which kind (never the value itself)."""

    kind: str
    start: int
    end: int


def is_clear(value: bytes) -> bool:
    """A value that is no secret: already a marker, or an empty/None/boolean setting."""
    return MARKER.fullmatch(value) is not None or value.strip().lower() in EMPTY_VALUES


_PLAIN_NUMBER = re.compile(rb"-?\d{1,6}(?:\.\d{1,6})?")


def is_plain_number(value: bytes) -> bool:
    """A short number (`4096`, `0.85`, `-1`): a setting, never a secret worth hiding, so an
    unknown flag or env var with such a value stays readable unless its name looks secret."""
    return _PLAIN_NUMBER.fullmatch(value) is not None


def _hit(det: Detector, m: re.Match[bytes], data: bytes) -> Hit | None:
    name = m.group(det.name_group) if det.name_group else None
    if name is not None and not is_secret_name(name.decode("utf-8", "replace")):
        return None
    start, end = m.span(det.group)
    if det.name_group and start < 0:  # one regex, several forms: the form that matched
        start, end = next(m.span(i) for i in range(det.group, len(m.groups()) + 1) if m.start(i) >= 0)
    value = data[start:end]
    if value[:2] in (b"b'", b'b"') and len(value) >= 3 and value[-1:] == value[1:2]:
        start, value = start + 1, value[1:]  # b'V' -> 'V'
    if len(value) >= 2 and value[:1] == value[-1:] and value[:1] in (b"'", b'"'):
        start, end, value = start + 1, end - 1, value[1:-1]  # api_key='V' -> V
    if len(value) >= 4 and value[:2] == value[-2:] == b'\\"':
        start, end, value = start + 2, end - 2, value[2:-2]  # JSON text: api_key=\"V\" -> V
    if is_clear(value):
        return None
    return Hit(det.kind, start, end)


def detector_hits(det: Detector, data: bytes, lowered: bytes | None = None) -> list[Hit]:
    if not det.may_match(data, data.lower() if lowered is None and det.fold else lowered or b""):
        return []
    if det.finder is not None:
        return [Hit(det.kind, s, e) for s, e in det.finder(data) if not is_clear(data[s:e])]
    return [h for h in (_hit(det, m, data) for m in det.pattern.finditer(data)) if h is not None]


def find_secrets(data: bytes, detectors: Iterable[Detector] = DETECTORS) -> Iterator[Hit]:
    """Every unredacted secret the detectors see in data (markers and empty values skipped)."""
    lowered = data.lower()
    for det in detectors:
        yield from detector_hits(det, data, lowered)
