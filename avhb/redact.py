"""Remove secrets from text and JSON-like objects before logging or writing.

What counts as a secret:

1. the value of any environment variable whose name contains KEY, TOKEN,
   SECRET or PASSWORD (case-insensitive), if it is at least 8 characters
   long (shorter values such as ``TOKENIZERS_PARALLELISM=false`` are not
   secrets and would mangle ordinary text); variables naming paths
   (``*_PATH``, ``*_FILE``, ``*_DIR``) are skipped;
   and every credential a backend or judge of this process uses
   (:func:`add_secret`: a URL's password, a credential header's value, the
   value an ``api_key_env`` names; 8 characters or more too), with the
   forms a reply can echo it in (URL-encoded, base64): together
   :func:`secrets`, the one set every writer redacts against;
2. token-shaped strings: ``sk-...`` (OpenAI/Anthropic style), ``hf_...``
   (Hub), ``AIza...`` (Google), ``xox[abp]-...`` (Slack), ``ghp_...`` (GitHub);
3. credentials after ``Bearer``/``Basic``, after an ``Authorization:``
   header, or in ``api_key=``/``key=``/``token=`` query parameters;
4. in dicts, the whole value under a credential-named key: ``authorization``,
   ``api_key``, ``x-api-key``, ``password``, ``*_secret``, ``*_token``
   (singular; ``max_tokens``/``prompt_tokens`` are counts, not secrets;
   ``eos_token`` and other tokenizer fields are not secrets either).

``redact`` returns a new object of the same shape (dataclass instances
become dicts, as they would in JSON); other non-string leaves are kept.

Case: one folding (:func:`fold`) for the patterns, the credential names
and the fast path's triggers: the patterns' own (``re.IGNORECASE``, which
reads ``ſ`` as ``s``, the Kelvin sign as ``k``, ``İ`` and ``ı`` as ``i``), so
``redact`` and the line's fast path decide alike on any text (``str.lower``
would not: it leaves ``ſ`` and ``ı`` and turns ``İ`` into two characters).
"""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
from functools import lru_cache
from typing import Any, Mapping
from urllib.parse import quote, quote_plus, unquote, urlsplit

from avhb.json_text import dumps

MASK = "***"

_NAME_HINTS = ("key", "token", "secret", "password")
_NAME_SKIP = ("_path", "_file", "_dir", "_dirs", "_url_path")
_MIN_SECRET_LEN = 8

_FOLDED = re.IGNORECASE  # the case folding fold() reproduces (module docstring)
_PATTERNS = [
    # header lines / JSON fields: Authorization: Bearer xyz, "authorization": "xyz"
    (re.compile(r"((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(bearer|basic|token)\s+)?[^\s\"',;}]+", _FOLDED),
     lambda m: m.group(1) + (m.group(2) + " " if m.group(2) else "") + MASK),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}", _FOLDED), lambda m: m.group(1) + " " + MASK),
    (re.compile(r"([?&](?:api[_-]?key|key|access[_-]?token|token)=)[^&\s\"'#]+", _FOLDED), lambda m: m.group(1) + MASK),
    (re.compile(r"\b((?:x-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{6,}", _FOLDED), lambda m: m.group(1) + MASK),
    # user:password@ in URLs
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@", _FOLDED), lambda m: m.group(1) + MASK + "@"),
    # key=value arguments in command lines (--model-args password=..., hf_token=...)
    (re.compile(r"\b([a-z_]*(?:password|passwd|secret|token|api_key|apikey)=)[^,\s\"']+", _FOLDED),
     lambda m: m.group(1) + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"), lambda m: "sk-" + MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), lambda m: "hf_" + MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), lambda m: MASK),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), lambda m: MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), lambda m: MASK),
]


# the letters outside ASCII that ``re.IGNORECASE`` matches to an ASCII letter (tests/redact/test_redact_folding.py
# proves the list complete against the running Python's regex engine)
_ASCII_FOLDS = (("\u017f", "s"), ("\u212a", "k"), ("\u0130", "i"), ("\u0131", "i"))


def fold(text: str) -> str:
    """``text`` as the patterns read it: each character that ``re.IGNORECASE``
    matches to an ASCII letter is that letter in lower case (``A``-``Z``,
    and ``ſ``, the Kelvin sign, ``İ``, ``ı``), every other character as it is.  The one
    case folding of every check in this module (triggers, the fast path,
    credential names), so none can miss what a pattern matches."""
    if text.isascii():
        return text.lower()
    text = text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")  # bytes: ASCII only
    for char, letter in _ASCII_FOLDS:
        if char in text:
            text = text.replace(char, letter)
    return text

_SECRET_KEYS = frozenset({
    "authorization", "proxy_authorization", "api_key", "apikey", "x_api_key", "api_token",
    "password", "passwd", "secret", "client_secret", "token", "access_token", "refresh_token",
    "id_token", "auth_token", "session_token", "bearer", "x_goog_api_key", "cookie", "set_cookie",
})
_NOT_SECRET_TOKENS = frozenset({"bos_token", "eos_token", "pad_token", "unk_token", "sep_token",
                                "cls_token", "mask_token", "stop_token"})


@lru_cache(maxsize=4096)
def secret_key(name: str) -> bool:
    """Is a dict key / argument name a credential?"""
    k = fold(name).replace("-", "_")
    if k in _SECRET_KEYS:
        return True
    if k in _NOT_SECRET_TOKENS:
        return False
    return k.endswith(("_api_key", "_apikey", "_secret", "_password", "_token", "_key_value"))


_env_cache: tuple[dict[Any, Any], list[str]] | None = None  # (a copy of os.environ's data, its secrets)


def env_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Secret values from the environment, longest first.  For the live
    ``os.environ`` the answer is cached until the environment changes
    (its data compared with a copy: one dict comparison per call, every
    name and value, no tuple built)."""
    global _env_cache
    if environ is None:
        raw = getattr(os.environ, "_data", None)
        if not isinstance(raw, dict):
            return _scan(os.environ)
        if _env_cache is not None and _env_cache[0] == raw:
            return _env_cache[1]
        found = _scan(os.environ)
        _env_cache = (dict(raw), found)
        return found
    return _scan(environ)


def _scan(env: Any) -> list[str]:
    found = set()
    for name, value in env.items():
        folded = fold(name)
        if not any(h in folded for h in _NAME_HINTS) or folded.endswith(_NAME_SKIP):
            continue
        value = value.strip()
        if len(value) >= _MIN_SECRET_LEN:
            found.add(value)
    return sorted(found, key=len, reverse=True)


# -- the credentials this process's backends and judges use ------------------------------------------------
_added: dict[str, None] = {}  # every added credential's forms, in order
_secrets_cache: tuple[list[str], int, list[str]] | None = None  # (env_secrets' list, len(_added), the union)


def add_secret(value: str | None) -> None:
    """Keep ``value`` out of everything this process writes from now on
    (a backend or judge adds its credentials when it is built: a URL's
    password, a credential header's value, the key its ``api_key_env``
    names), with the forms a reply can echo it in (:func:`secret_forms`).
    As for the environment's secrets, a value shorter than 8 characters is
    not kept: masking it would mask ordinary words in the answers, which
    are scored as journaled (``EMPTY``, a local server's placeholder key,
    is no secret either); a URL's short password still has its Basic token
    kept (:func:`add_arg_secrets`) and its ``user:password@`` masked by the
    patterns."""
    if not value or len(value) < _MIN_SECRET_LEN:
        return
    for form in secret_forms(value):
        _added.setdefault(form, None)


def add_arg_secrets(args: Mapping[str, Any]) -> None:
    """The credentials a backend's or judge's arguments carry, added
    (:func:`add_secret`) before the backend is built, wherever it runs (in
    this process or on an executor's worker): the password of every URL
    argument with one (``http://user:password@host/v1``) and the Basic
    auth token made of it, and the value of the environment variable
    ``api_key_env`` names."""
    for value in args.values():
        if not isinstance(value, str) or "@" not in value:
            continue
        try:
            parts = urlsplit(value.strip())
            user, password = parts.username, parts.password
        except ValueError:  # not a URL after all
            continue
        if password:
            user, password = unquote(user or ""), unquote(password)
            add_secret(password)
            add_secret(base64.b64encode(f"{user}:{password}".encode("utf-8", "surrogatepass")).decode("ascii"))
    name = args.get("api_key_env")
    if isinstance(name, str) and name:
        add_secret(os.environ.get(name, "").strip())


def secret_forms(value: str) -> list[str]:
    """``value`` and the forms of it a reply can hold: URL-encoded (``%XX``,
    and ``+`` for spaces), base64 (standard and URL-safe; the whole, and the
    characters that hold only ``value``'s bits at each of base64's three
    alignments, so that the value inside a longer encoded text such as
    ``user:password`` is found too).  Forms shorter than 8 characters are
    left out (they could be any word)."""
    forms = {value}
    for encoded in (quote(value, safe=""), quote_plus(value, safe="")):
        forms.add(encoded)
    raw = value.encode("utf-8", "surrogatepass")
    for shift in (0, 1, 2):
        padded = base64.b64encode(bytes(shift) + raw).decode("ascii")
        first = -(-8 * shift // 6)  # the first character all of whose 6 bits come from value
        last = 8 * (shift + len(raw)) // 6  # one past the last such character
        whole = padded if shift == 0 else None
        for text in filter(None, (padded[first:last], whole, whole and whole.rstrip("="))):
            forms.add(text)
            forms.add(text.replace("+", "-").replace("/", "_"))
    return sorted(sorted(f for f in forms if len(f) >= _MIN_SECRET_LEN), key=len, reverse=True)


def secrets() -> list[str]:
    """Every secret value redaction removes, longest first: the
    environment's (:func:`env_secrets`) and the added credentials' forms
    (:func:`add_secret`); the same list object until either changes."""
    global _secrets_cache
    env = env_secrets()
    cached = _secrets_cache
    if cached is not None and cached[0] is env and cached[1] == len(_added):
        return cached[2]
    merged = sorted(set(env) | set(_added), key=len, reverse=True) if _added else env
    _secrets_cache = (env, len(_added), merged)
    return merged


# cheap pre-check: a string with none of these cannot match any pattern
_TRIGGERS = ("sk-", "hf_", "aiza", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "bearer", "basic",
             "authorization", "key", "token", "password", "passwd", "secret", "://")


def redact_text(text: str, values: list[str] | None = None) -> str:
    """``text`` without secrets: the values (default :func:`secrets`), then
    the patterns."""
    for value in secrets() if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    return _redact_patterns(text)


def _redact_patterns(text: str) -> str:
    folded = fold(text)
    for t in _TRIGGERS:
        if t in folded:
            break
    else:
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


@lru_cache(maxsize=4096)
def _redact_key(key: str) -> str:
    return _redact_patterns(key)


def redact(obj: Any, *, extra: list[str] | tuple[str, ...] = ()) -> Any:
    """A copy of ``obj`` (str, dict, list, tuple, nested) without secrets.
    ``extra``: more literal secret values to remove."""
    values = secrets()
    if extra:
        values = sorted(set(values) | {e for e in extra if e}, key=len, reverse=True)
    return _walk(obj, values)


def _walk(obj: Any, secrets: list[str]) -> Any:
    if isinstance(obj, str):
        return redact_text(obj, secrets) if len(obj) >= 6 else obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(k, str):
                if secret_key(k) and ((isinstance(v, str) and v) or isinstance(v, (dict, list, tuple, bytes))):
                    out[k] = MASK
                    continue
                if len(k) >= 6:
                    k = _redact_key(k)
                    for value in secrets:
                        if value in k:
                            k = k.replace(value, MASK)
            out[k] = _walk(v, secrets)
        return out
    if isinstance(obj, list):
        return [_walk(v, secrets) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, secrets) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _walk(dataclasses.asdict(obj), secrets)
    return obj


# -- one JSON line, redacted --------------------------------------------------
# The journal and the samples file write one JSON line per record; walking every record (``redact``)
# costs more than writing it.  ``redacted_json`` serializes the record once and proves from the line
# that the walk would change nothing, else it walks.  Every change ``redact`` makes is
# (a) a secret value (``secrets``) inside a string or a dict key: its JSON-escaped form is then in the
#     line (JSON escapes character by character);
# (b) a pattern matching a string or a key: each needs one of ``_TRIGGERS`` in the string as ``fold``
#     folds it (the patterns' own case folding), and folding commutes with the escaping for these ASCII
#     triggers;
# (c) a value masked under a credential-named key (``secret_key``, which folds the name the same way):
#     every such name holds one of ``_TRIGGERS`` or "cookie".
# So a line with no secret value and no trigger is what ``redact`` would write, with two exceptions:
# - "key" inside the journal's own key (``"key": ``) does not count: that key is neither a credential
#   name nor changed by any pattern, whatever its case, and the text ``"key": `` only occurs in a line
#   as that key (inside a string a quote is escaped, and a string value is never followed by ": ");
#   no trigger straddles its end (no trigger holds a quote or a space).
# - "token" counts only where it ends a key (``token": ``) or comes before "=": every credential name
#   that holds "token" ends with it (``secret_key``: token, access_token, ..., *_token, a "-" read as
#   "_"), and every pattern that reads "token" needs "=" right after it, or "authorization" (a trigger
#   of its own) before it.  So ``"prompt_tokens": `` and a prompt about tokenizers walk nothing.
# Dataclasses (``redact`` makes them dicts) take the walk.
_JOURNAL_KEY = '"key": '  # the journal's own key: "key" occurs in a line only there
_TOKEN_ENDS = ('token": ', "token=")  # where "token" can make redact change something (above)
_OTHER_TRIGGERS = tuple(t for t in (*_TRIGGERS, "cookie") if t not in ("key", "token"))
# the scan of _OTHER_TRIGGERS, in fewer passes: "passw" for password and passwd; GitHub's five token
# prefixes (gh[pousr]_) by one pattern, searched only in a line that holds "gh" at all
_GITHUB = re.compile(r"gh[pousr]_")
_SCANNED = tuple(["passw", *(t for t in _OTHER_TRIGGERS if not t.startswith(("passw", "gh")))])


class _Walk(Exception):
    """The fast path cannot decide: walk the record."""


def redacted_json(obj: Any, default: Any = str) -> tuple[str, Any]:
    """``(json.dumps(redact(obj), ensure_ascii=False, default=default), the
    object as written)``: the same line ``redact`` then ``json.dumps``
    give (module comment above), most often without walking ``obj``."""
    try:
        text = dumps(obj, ensure_ascii=False, default=_guard(default))
    except _Walk:
        text = None
    if text is not None and _clean(text):
        return text, obj
    kept = redact(obj)
    return dumps(kept, ensure_ascii=False, default=default), kept


_GUARDS: dict[Any, Any] = {}


def _guard(default: Any) -> Any:
    """``default`` for the fast path's encoding: a dataclass (which
    ``redact`` turns into a dict) raises ``_Walk``; one function per
    ``default``, so the encoder is built once (avhb.json_text)."""
    guard = _GUARDS.get(default)
    if guard is None:
        def guard(value: Any, default: Any = default) -> Any:
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                raise _Walk
            return default(value)

        _GUARDS[default] = guard
    return guard


def _clean(text: str) -> bool:
    """Whether ``redact`` would leave the object serialized as ``text`` unchanged."""
    lower = fold(text)
    for trigger in _SCANNED:
        if trigger in lower:
            return False
    if "gh" in lower and _GITHUB.search(lower):
        return False
    # "key" only inside the journal's own key, "token" only where it cannot matter (comment above)
    if lower.count("key") != lower.count(_JOURNAL_KEY):
        return False
    if "token" in lower and (_TOKEN_ENDS[0] in lower or _TOKEN_ENDS[1] in lower):
        return False
    for form in _escaped_secrets():
        if form in text:
            return False
    return True


_escaped_cache: tuple[list[str], list[str]] = ([], [])


def _escaped_secrets() -> list[str]:
    """The secret values (:func:`secrets`) as a JSON line holds them
    (escaped), encoded once per change of the set."""
    global _escaped_cache
    values = secrets()
    if values is not _escaped_cache[0]:
        _escaped_cache = (values, [json.dumps(v, ensure_ascii=False)[1:-1] for v in values])
    return _escaped_cache[1]
