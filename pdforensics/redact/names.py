"""Which names hold a credential: env vars, flags, JSON/YAML/XML keys, `k=v` names."""

from __future__ import annotations

from functools import lru_cache

_STRONG = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY",
           "COOKIE", "CONNECTIONSTRING", "PASSPHRASE")
# words every secret-looking name contains (lower case): what the assignment pass looks for
NAME_WORDS = (b"token", b"key", b"secret", b"pass", b"pwd", b"credential", b"auth", b"cookie",
              b"session", b"private", b"dsn", b"connection")
MAX_NAME = 128  # a longer run of name characters is data, not a name


def _secret_segment(seg: str, last: bool, alone: bool) -> bool:
    if seg.endswith(("TOKEN", "KEY")):  # HF_TOKEN, HFTOKEN, API_KEY, apiKey, TOKEN
        # a word that names the value itself: not HF_TOKEN_PATH, KEY_ID, or a bare `key`
        return last and not (alone and seg == "KEY")
    if seg in ("PASS", "PWD", "DSN", "PRIVATE", "AUTH", "OAUTH", "AUTHN", "AUTHZ"):
        return True
    return "SESSION" in seg or seg.startswith(("AUTHORIZ", "AUTHENTICAT"))


def segments(name: str) -> list[str]:
    """The words of a name, upper-cased: `apiKey` -> API KEY, `HTTPServer` -> HTTP SERVER,
    `--admin-api-key` -> ADMIN API KEY (one pass, no regex)."""
    words: list[str] = []
    cur = ""
    for i, c in enumerate(name):
        if not c.isascii() or not c.isalnum():
            words.append(cur)
            cur = ""
            continue
        prev = name[i - 1] if i else ""
        nxt = name[i + 1] if i + 1 < len(name) else ""
        if cur and (
            (c.isdigit() != prev.isdigit())  # 2FA, md5sum
            or (c.isupper() and prev.islower())  # apiKey
            or (c.isupper() and prev.isupper() and nxt.islower())  # HTTPServer
        ):
            words.append(cur)
            cur = ""
        cur += c
    words.append(cur)
    return [w.upper() for w in words if w]


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether an env var, flag, JSON key or `k=v` name holds a credential.

    TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE (as
    words of the name: `HF_TOKEN`, `apiKey`, `--admin-api-key`; TOKEN/KEY as its last word).
    Counts, paths and tools that only contain the letters (`--max-total-tokens`,
    `--tokenizer-path`, `HF_TOKEN_PATH`, `key_id`, a bare `key`, `PWD`) are not secrets.
    """
    bare = name.lstrip("-")
    if bare in ("PWD", "OLDPWD") or len(bare) > MAX_NAME:
        return False
    segs = segments(bare)
    joined = "".join(segs)
    return any(w in joined for w in _STRONG) or any(
        _secret_segment(s, i == len(segs) - 1, len(segs) == 1) for i, s in enumerate(segs))
