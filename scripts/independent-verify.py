#!/usr/bin/env python3
"""Independent verifier for Oxagen export bundles.

Written from docs/record-format.md alone (sections 1-10), without reading the
reference implementation, to show the written format is precise enough to
implement. Standard library only (Python 3.11+).

Usage:
  python3 scripts/independent-verify.py BUNDLE (--server-key KEYFILE_OR_HEX ... | --server-keys FILE)
                                        [--bodies DIR] [--expect-head HEX]
  python3 scripts/independent-verify.py --wycheproof FILE   (self-test of Ed25519)

Reads both bundle layouts of section 9: version 2 (JSON lines) is read a line at a time and
hashed as it is read; version 1 (one JSON document) is read whole.

--batch reads bundle paths from standard input, one a line (a tab and an expected head may
follow each), and prints one exit code a line: many bundles in one process, each checked as
if it were the only one.

--schema also checks each payload against the per-kind members of section 4 (path,
unknown members, enumerated values). Section 10 step 4 does not list that check (it asks
only for a known kind and Record JSON of an object), so it is off by default.

Prints one line per finding, "CODE where message", and exits
0 valid and complete, 1 tampered, 2 cannot verify, 3 valid but incomplete.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys

# --------------------------------------------------------------------------
# Section 1: conventions
# --------------------------------------------------------------------------

MAX_SAFE = 2**53 - 1
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX16 = re.compile(r"[0-9a-f]{16}")
HEX128 = re.compile(r"[0-9a-f]{128}")


def H(tag: str, x: bytes) -> bytes:
    return hashlib.sha256(tag.encode("utf-8") + b"\x00" + x).digest()


def u8(n: int) -> bytes:
    return n.to_bytes(1, "big")


def u16(n: int) -> bytes:
    return n.to_bytes(2, "big")


def u64(n: int) -> bytes:
    return n.to_bytes(8, "big")


def is_hex64(v) -> bool:
    return isinstance(v, str) and HEX64.fullmatch(v) is not None


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_uint(v) -> bool:
    return is_int(v) and 0 <= v <= MAX_SAFE


# --------------------------------------------------------------------------
# Section 7: Ed25519 (RFC 8032 section 5.1.7), strict and cofactored
# --------------------------------------------------------------------------

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

# Extended homogeneous coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, xy = T/Z.
IDENTITY = (0, 1, 1, 0)


def pt_add(p1, p2):
    X1, Y1, Z1, T1 = p1
    X2, Y2, Z2, T2 = p2
    A = (Y1 - X1) * (Y2 - X2) % P
    B = (Y1 + X1) * (Y2 + X2) % P
    C = 2 * T1 * T2 * D % P
    Dd = 2 * Z1 * Z2 % P
    E, F, G, Hh = B - A, Dd - C, Dd + C, B + A
    return (E * F % P, G * Hh % P, F * G % P, E * Hh % P)


def pt_neg(p1):
    X, Y, Z, T = p1
    return ((-X) % P, Y, Z, (-T) % P)


def pt_mul(s: int, p1):
    q = IDENTITY
    while s > 0:
        if s & 1:
            q = pt_add(q, p1)
        p1 = pt_add(p1, p1)
        s >>= 1
    return q


def pt_is_identity(p1) -> bool:
    X, Y, Z, _ = p1
    return X % P == 0 and (Y - Z) % P == 0


def pt_decode_strict(b: bytes):
    """Decode a 32-byte point strictly: y < p, on the curve, and not x = 0
    with the sign bit set. Returns None if the encoding is refused."""
    if len(b) != 32:
        return None
    n = int.from_bytes(b, "little")
    sign = n >> 255
    y = n & ((1 << 255) - 1)
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    # x = sqrt(u / v), RFC 8032 section 5.1.3
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    vx2 = v * x * x % P
    if vx2 == u:
        pass
    elif vx2 == (-u) % P:
        x = x * SQRT_M1 % P
    else:
        return None
    if x == 0 and sign == 1:
        return None
    if (x & 1) != sign:
        x = P - x
    return (x, y, 1, x * y % P)


BY = 4 * pow(5, P - 2, P) % P
B_POINT = pt_decode_strict(int.to_bytes(BY, 32, "little"))


def key_acceptable(pub: bytes) -> bool:
    """Section 7: 32 bytes, canonical encoding of a curve point, not of small order."""
    if len(pub) != 32:
        return False
    A = pt_decode_strict(pub)
    if A is None:
        return False
    return not pt_is_identity(pt_mul(8, A))


@functools.lru_cache(maxsize=4096)
def ed25519_verify(pub: bytes, msg: bytes, sig: bytes) -> bool:
    """Pure and slow, so remembered: --batch checks many bundles that share most signatures."""
    if len(pub) != 32 or len(sig) != 64:
        return False
    A = pt_decode_strict(pub)
    if A is None or pt_is_identity(pt_mul(8, A)):
        return False
    R = pt_decode_strict(sig[:32])
    if R is None:
        return False
    S = int.from_bytes(sig[32:], "little")
    if S >= L:
        return False
    k = int.from_bytes(hashlib.sha512(sig[:32] + pub + msg).digest(), "little") % L
    # [8][S]B == [8]R + [8][k]A  <=>  [8](R + kA - SB) == identity
    Q = pt_add(pt_add(R, pt_mul(k, A)), pt_neg(pt_mul(S, B_POINT)))
    return pt_is_identity(pt_mul(8, Q))


def key_id(pub: bytes) -> str:
    return H("oxagen/key/v1", pub)[:8].hex()


# --------------------------------------------------------------------------
# Section 2: Record JSON
# --------------------------------------------------------------------------


class RecordJSONError(Exception):
    pass


def _no_dupes(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise RecordJSONError(f"duplicate member name {k!r}")
        seen.add(k)
    return dict(pairs)


def _refuse_float(s):
    raise RecordJSONError(f"number {s} has a fraction or exponent")


def _refuse_const(s):
    raise RecordJSONError(f"{s} is not JSON")


def _int(s):
    n = int(s)
    if not -MAX_SAFE <= n <= MAX_SAFE:
        raise RecordJSONError(f"integer {s} is outside +/-(2^53 - 1)")
    return n


ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


def _has_lone_surrogate(s: str) -> bool:
    # Python str holds code points; a JSON \\ud800-style escape that is not part of a
    # pair decodes to a lone surrogate code point, a pair decodes to one astral code point.
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _check_value(v, depth: int):
    if depth > 32:
        raise RecordJSONError("nesting deeper than 32 levels")
    if isinstance(v, dict):
        for k, x in v.items():
            if _has_lone_surrogate(k):
                raise RecordJSONError("lone surrogate in a member name")
            if ARRAY_INDEX.fullmatch(k) and int(k) <= 4294967294:
                raise RecordJSONError(f"member name {k!r} is an array index")
            _check_value(x, depth + 1)
    elif isinstance(v, list):
        for x in v:
            _check_value(x, depth + 1)
    elif isinstance(v, str):
        if _has_lone_surrogate(v):
            raise RecordJSONError("lone surrogate in a string")
    elif v is None or isinstance(v, bool):
        pass
    elif isinstance(v, int):
        if not -MAX_SAFE <= v <= MAX_SAFE:
            raise RecordJSONError("integer out of range")
    else:
        raise RecordJSONError(f"value of type {type(v).__name__} is not allowed")


_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def serialize_string(s: str) -> str:
    """RFC 8785 section 3.2.2.2 string escaping (non-ASCII left literal)."""
    out = ['"']
    for c in s:
        e = _ESC.get(c)
        if e is not None:
            out.append(e)
        elif ord(c) < 0x20 or 0xD800 <= ord(c) <= 0xDFFF:
            out.append("\\u%04x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def serialize(v) -> str:
    """ECMAScript JSON.stringify(v) for Record JSON values (section 2 rule 5)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return serialize_string(v)
    if isinstance(v, list):
        return "[" + ",".join(serialize(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(serialize_string(k) + ":" + serialize(x) for k, x in v.items()) + "}"
    raise RecordJSONError(f"cannot serialize {type(v).__name__}")


def parse_record_json(text: str):
    """Parse and check a Record JSON text; raise RecordJSONError on any violation."""
    if not isinstance(text, str):
        raise RecordJSONError("not a string")
    if _has_lone_surrogate(text):
        raise RecordJSONError("lone surrogate in the text")
    try:
        v = json.loads(
            text,
            object_pairs_hook=_no_dupes,
            parse_float=_refuse_float,
            parse_int=_int,
            parse_constant=_refuse_const,
        )
    except RecordJSONError:
        raise
    except RecursionError:
        raise RecordJSONError("nesting too deep")
    except ValueError as e:
        raise RecordJSONError(f"not JSON: {e}")
    _check_value(v, 1)
    if serialize(v) != text:
        raise RecordJSONError("text is not in its one written form (section 2 rule 5)")
    return v


def json_equal(a, b) -> bool:
    """JSON value equality (bool is not an integer; object member order ignored)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if a is None or b is None:
        return a is b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


# --------------------------------------------------------------------------
# Section 4: frame payload schemas (as far as the page states them)
# --------------------------------------------------------------------------

PATHS = {"hook", "gateway", "transcript", "worktree", "recorder", "backfill"}
ROLES = {"prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"}
WHYS = {"over_limit", "digest_only", "retention"}


def v_str(v):
    return isinstance(v, str)


def v_int(v):
    return is_int(v)


def v_uint(v):
    return is_uint(v)


def v_bool(v):
    return isinstance(v, bool)


def v_true(v):
    return v is True


def v_false(v):
    return v is False


def v_enum(*opts):
    return lambda v: isinstance(v, str) and v in opts


def v_h(v):
    return isinstance(v, dict) and set(v) == {"sha256", "size"} and is_hex64(v["sha256"]) and is_uint(v["size"])


def v_hex64(v):
    return is_hex64(v)


def v_str_or_int(v):
    return isinstance(v, str) or is_int(v)


def v_obj(required: dict, optional: dict):
    def check(v):
        if not isinstance(v, dict):
            return False
        if not set(required) <= set(v) or not set(v) <= set(required) | set(optional):
            return False
        return all((required.get(k) or optional.get(k))(x) for k, x in v.items())

    return check


def v_array(item):
    return lambda v: isinstance(v, list) and all(item(x) for x in v)


V_USAGE = v_obj(
    {"input_tokens": v_uint, "output_tokens": v_uint},
    {k: v_uint for k in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "thinking_tokens")},
)

# kind -> (required members, optional members), besides the common ones
KINDS = {
    "agent_start": (
        {"harness": v_str, "session_id": v_str},
        {"agent": v_str, "cwd": v_str, "source": v_str, "model": v_str, "pid": v_uint},
    ),
    "turn_start": ({"prompt": v_h}, {"turn_id": v_str}),
    "policy_decision": (
        {
            "subject": v_enum("tool", "model", "prompt", "session", "oxagen_tool"),
            "decision": v_enum("allow", "deny", "ask", "none"),
            "mode": v_enum("enforce", "observe"),
        },
        {
            "reason": v_str, "reason_sha256": v_hex64, "rule": v_str, "policy_etag": v_str,
            "tool_name": v_str, "tool_use_id": v_str, "model": v_str, "offline": v_true,
        },
    ),
    "tool_requested": ({"tool_name": v_str}, {"tool_use_id": v_str, "input": v_h}),
    "token_denied": ({"tool_name": v_str}, {"tool_use_id": v_str, "input": v_h, "reason": v_str}),
    "approval_request": ({"tool_name": v_str}, {"tool_use_id": v_str}),
    "harness_permission": (
        {"tool_name": v_str},
        {"tool_use_id": v_str, "decision": v_enum("deny", "ask", "allow")},
    ),
    "tool_call": (
        {"tool_name": v_str, "status": v_enum("ok", "error", "interrupted")},
        {"tool_use_id": v_str, "exit_code": v_int, "duration_ms": v_uint, "input": v_h, "output": v_h, "server": v_str},
    ),
    "command": ({"program": v_str, "command": v_h}, {"tool_use_id": v_str}),
    "file_io": (
        {"op": v_enum("read", "write", "edit", "delete", "list", "search"), "file": v_str},
        {"tool_use_id": v_str},
    ),
    "network": ({"host": v_str, "url": v_h}, {"method": v_str, "tool_use_id": v_str}),
    "turn_end": ({}, {"message": v_h, "turn_id": v_str}),
    "subagent_start": ({}, {"agent_id": v_str, "agent_type": v_str}),
    "subagent_stop": ({}, {"agent_id": v_str, "agent_type": v_str, "status": v_str}),
    "agent_stop": ({"reason": v_str, "outcome": v_enum("completed", "aborted", "error", "crashed")}, {}),
    "llm_call": (
        {"vendor": v_str, "model": v_str, "forwarded": v_true, "usage": V_USAGE},
        {
            "status": v_int, "latency_ms": v_uint, "ttfb_ms": v_uint, "client_closed": v_true,
            "stream": v_bool, "cost_microusd": v_uint,
            "request": v_h, "response": v_h, "message_id": v_str, "request_id": v_str,
        },
    ),
    "error": ({"code": v_str_or_int, "forwarded": v_false}, {"status": v_int, "vendor": v_str, "model": v_str}),
    "telemetry_gap": (
        {
            "cause": v_enum(
                "daemon_down", "spool_overflow", "unobserved_tail", "rebuilt", "hooks_missing",
                "log_unreadable", "clock_skew", "other",
            )
        },
        {"from_ms": v_uint, "to_ms": v_uint, "dropped": v_uint, "detail": v_str},
    ),
    "oxagen:worktree_reconciled": (
        {
            "root": v_str,
            "changed": v_array(v_obj({"file": v_str, "status": v_str}, {"added": v_uint, "removed": v_uint})),
            "commits": v_array(v_obj({"sha": v_str, "subject": v_h}, {})),
        },
        {"head": v_str, "truncated": v_true, "final": v_true},
    ),
}


def v_body_ref(v):
    if not isinstance(v, dict):
        return False
    if v.get("kept") is True:
        if set(v) != {"role", "sha256", "size", "kept"}:
            return False
    elif v.get("kept") is False:
        if set(v) != {"role", "sha256", "size", "kept", "why"} or v["why"] not in WHYS:
            return False
    else:
        return False
    return v["role"] in ROLES and is_hex64(v["sha256"]) and is_uint(v["size"])


V_REDACTION = v_obj({"role": v_enum(*ROLES), "kind": v_str, "sha256": v_hex64}, {})

COMMON_OPTIONAL = {"backfilled": v_true, "bodies": v_array(v_body_ref), "redactions": v_array(V_REDACTION)}


def payload_schema_problem(kind: str, p: dict):
    req, opt = KINDS[kind]
    if "path" not in p:
        return "payload has no path"
    if p["path"] not in PATHS:
        return f"unknown path {p['path']!r}"
    allowed = {"path"} | set(COMMON_OPTIONAL) | set(req) | set(opt)
    extra = [k for k in p if k not in allowed]
    if extra:
        return f"unknown member(s) {', '.join(extra)} for kind {kind}"
    missing = [k for k in req if k not in p]
    if missing:
        return f"missing member(s) {', '.join(missing)} for kind {kind}"
    for k, x in p.items():
        if k == "path":
            continue
        check = COMMON_OPTIONAL.get(k) or req.get(k) or opt.get(k)
        if not check(x):
            return f"member {k} has a value the format does not allow"
    return None


# --------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------

TAMPERED = {
    "SERVER_SIG_INVALID", "SERVER_KEY_MISMATCH", "HOST_KEY_INVALID", "FRAME_HASH_MISMATCH",
    "FRAME_INVALID", "SEQ_GAP", "SEQ_DUPLICATE", "SEQ_ORDER", "LOCK_FORMAT_INVALID",
    "LOCK_CHAIN_MISMATCH", "LOCK_SIG_INVALID", "LOCK_SEQ_GAP", "LOCK_SEQ_DUPLICATE",
    "LOCK_CHAIN_BREAK", "LOCK_REGRESSION", "LOCK_HEAD_MISMATCH", "LOCK_AFTER_FINAL",
    "FRAMES_AFTER_FINAL", "GAP_LIST_MISMATCH", "COVERAGE_MISMATCH", "TIER_MISMATCH",
    "GRADE_MISMATCH", "EXPECTED_HEAD_MISMATCH", "BODY_HASH_MISMATCH",
    # Not in the page's table; this verifier's own check (see report): run.id is not
    # the run id section 3 derives from run.host, run.harness and run.session_id.
    "RUN_ID_MISMATCH",
}
CANNOT = {
    "KEY_INVALID", "TOO_LARGE", "UNREADABLE", "BUNDLE_LAYOUT", "UNSUPPORTED_VERSION", "MANIFEST_INVALID", "BAD_ARGUMENTS",
    "SERVER_KEY_UNKNOWN", "SERVER_KEY_NOT_VALID",
}
INCOMPLETE = {"NOT_FINAL_LOCKED", "UNLOCKED_TAIL", "GAPS", "BODY_MISSING"}
NOTES = {"TIME_REGRESSION", "LOCK_TIME_REGRESSION", "EQUIVOCATION"}


class Findings:
    def __init__(self):
        self.items: list[tuple[str, str, str]] = []

    def add(self, code: str, where: str, message: str):
        assert code in TAMPERED | CANNOT | INCOMPLETE | NOTES, code
        self.items.append((code, where, message))

    def exit_code(self) -> int:
        codes = {c for c, _, _ in self.items}
        if codes & TAMPERED:
            return 1
        if codes & CANNOT:
            return 2
        if codes & INCOMPLETE:
            return 3
        return 0


# --------------------------------------------------------------------------
# Sections 9 and 10: bundle verification
# --------------------------------------------------------------------------

BUNDLE_PREFIX = b'{"oxagen_bundle":1,"payload_type":"application/vnd.oxagen.bundle.v1+json","manifest":'
V2_PREFIX = b'{"oxagen_bundle":2,"payload_type":"application/vnd.oxagen.bundle.v2+jsonl",'
VERSION_PREFIX = re.compile(rb'\{"oxagen_bundle":(-?[0-9]+),')
SIGNATURE_LINE = re.compile(rb'\{"signature":\{"key_id":"([0-9a-f]{16})","sig":"([0-9a-f]{128})"\}\}\n?\Z')
FRAME_LINE = re.compile(
    rb'\{"seq":(0|[1-9][0-9]*),"t":(0|[1-9][0-9]*),"kind":("(?:[^"\\\x00-\x1f]|\\.)*"),"hash":"([0-9a-f]{64})","payload":(.*)\}\Z',
    re.DOTALL,
)
MAX_LINE = 1024 * 1024
GAP_MEMBERS = {"kind", "source", "detail", "seq", "from_seq", "to_seq", "count", "bodies"}
SUFFIX = re.compile(rb',"signature":\{"key_id":"([0-9a-f]{16})","sig":"([0-9a-f]{128})"\}\}\n?\Z')
MAX_FILE = 256 * 1024 * 1024
LOCK_TYPE = "application/vnd.oxagen.lock.v1+json"

MANIFEST_MEMBERS = [
    "v", "run", "exported_ms", "server_key_id", "host_key", "frames", "locks",
    "equivocations", "gaps", "tier", "grade", "coverage",
]
RUN_MEMBERS = [
    "id", "workspace", "host", "harness", "agent", "session_id", "status", "outcome",
    "environment", "mode", "first_frame_ms", "last_frame_ms",
]
LOCK_MEMBERS = ["v", "chain", "lock_seq", "count", "head", "prev_lock", "t", "final", "signer", "host", "key_id"]
HOST_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SERVER_GAP_KINDS = {"broken_chain", "missing_frames", "body_refused", "frames_after_seal", "equivocation", "missing_bodies"}
TIERS = ["contained", "gateway", "harness", "observe"]
GRADES = ["inspect", "view", "fork", "retry"]


def pae(type_: str, body: bytes) -> bytes:
    t = type_.encode("utf-8")
    return b"DSSEv1 " + str(len(t)).encode() + b" " + t + b" " + str(len(body)).encode() + b" " + body


def genesis(chain: str) -> bytes:
    c = chain.encode("utf-8")
    return H("oxagen/genesis/v1", u16(len(c)) + c)


def frame_hash(chain: str, seq: int, prev: bytes, t: int, kind: str, payload: str) -> bytes:
    c = chain.encode("utf-8")
    k = kind.encode("utf-8")
    ph = H("oxagen/payload/v1", payload.encode("utf-8"))
    return H("oxagen/frame/v1", u16(len(c)) + c + u64(seq) + prev + u64(t) + u8(len(k)) + k + ph)


def run_id(host: str, harness: str, session_id: str) -> str | None:
    try:
        x = host.encode("utf-8") + b"\x00" + harness.encode("utf-8") + b"\x00" + session_id.encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate has no UTF-8 form, so no run id derives from it
    return "run_" + H("oxagen/run/v1", x)[:16].hex()


def code_unit_sorted(keys):
    return sorted(keys, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def load_key(arg: str):
    if os.path.isfile(arg):
        with open(arg, "rb") as f:
            raw = f.read(1024)
        try:
            text = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            return None
    else:
        text = arg
    if not HEX64.fullmatch(text):
        return None
    return bytes.fromhex(text)


def load_keys(key_args: list[str], key_list: str | None):
    """Section 10: the pinned keys, each {pub, key_id, use, from, to}; None when one is unusable."""
    keys = []
    for arg in key_args:
        pub = load_key(arg)
        if pub is None:
            return None
        keys.append({"pub": pub, "key_id": key_id(pub), "use": None, "from": None, "to": None})
    if key_list is not None:
        try:
            with open(key_list, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
            for k in doc["keys"]:
                pub = bytes.fromhex(k["pub"]) if is_hex64(k["pub"]) else None
                ok = (pub is not None and k["alg"] == "ed25519" and k["key_id"] == key_id(pub) and isinstance(k["use"], list)
                      and is_uint(k["not_before_ms"]) and (k["not_after_ms"] is None or is_uint(k["not_after_ms"])))
                if not ok:
                    return None
                keys.append({"pub": pub, "key_id": k["key_id"], "use": k["use"], "from": k["not_before_ms"], "to": k["not_after_ms"]})
        except (OSError, ValueError, KeyError, TypeError):
            return None
    if not keys or not all(key_acceptable(k["pub"]) for k in keys):
        return None
    return keys


def pick_key(keys, kid, use: str, at):
    """Section 10: (key, refusal): the pinned key named kid, and why it may not sign `use` at `at`."""
    named = [k for k in keys if k["key_id"] == kid]
    if not named:
        return None, ("SERVER_KEY_UNKNOWN", f"key {kid} is not a pinned server key")
    usable = [k for k in named if k["use"] is None or use in k["use"]]
    if not usable:
        return named[0]["pub"], ("SERVER_KEY_NOT_VALID", f"pinned key {kid} may not sign a {use}")
    for k in usable:
        if (k["from"] is None or (is_int(at) and at >= k["from"])) and (k["to"] is None or (is_int(at) and at <= k["to"])):
            return k["pub"], None
    return usable[0]["pub"], ("SERVER_KEY_NOT_VALID", f"pinned key {kid} may not sign a {use} at {at}")


def expected_gaps(frames_payloads):
    """Section 8: computer gaps (telemetry_gap frames), then chain gaps in rule order."""
    gaps = []
    for seq, kind, p in frames_payloads:
        if kind == "telemetry_gap":
            gaps.append({"source": "computer", "kind": p.get("cause"), "seq": seq})
    stops = [p for _, kind, p in frames_payloads if kind == "agent_stop"]
    if not stops or stops[-1].get("outcome") == "crashed":
        gaps.append({"source": "chain", "kind": "unobserved_tail"})
    refs = [b for _, _, p in frames_payloads for b in (p.get("bodies") or []) if isinstance(b, dict)]
    if any(b.get("why") == "digest_only" for b in refs):
        gaps.append({"source": "chain", "kind": "digest_only"})
    over = []
    for b in refs:
        if b.get("why") == "over_limit" and b.get("sha256") not in over:
            over.append(b.get("sha256"))
    if over:
        gaps.append({"source": "chain", "kind": "missing_bodies", "bodies": over})
    return gaps


def gap_key(g: dict):
    """What of a listed gap the frames determine: source, kind, seq (computer), bodies (missing_bodies)."""
    k = {"source": g.get("source"), "kind": g.get("kind")}
    if g.get("source") == "computer":
        k["seq"] = g.get("seq")
    if g.get("source") == "chain" and g.get("kind") == "missing_bodies":
        k["bodies"] = g.get("bodies")
    return k


def compute_coverage(frames_payloads):
    by_path: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    cov = {
        "frames": len(frames_payloads),
        "by_path": None,
        "by_kind": None,
        "llm_calls_gateway": 0,
        "llm_calls_transcript": 0,
        "llm_calls_replayable": 0,
        "enforced_hook_decisions": 0,
        "bodies_named": 0,
        "bodies_not_kept": 0,
        "backfilled_frames": 0,
    }
    llm_calls = 0
    for _, kind, p in frames_payloads:
        path = p.get("path")
        if isinstance(path, str):  # a payload without a path is already FRAME_INVALID
            by_path[path] = by_path.get(path, 0) + 1
        by_kind[kind] = by_kind.get(kind, 0) + 1
        bodies = [b for b in (p.get("bodies") or []) if isinstance(b, dict)]
        cov["bodies_named"] += len(bodies)
        cov["bodies_not_kept"] += sum(1 for b in bodies if b.get("kept") is not True)
        if p.get("backfilled") is True:
            cov["backfilled_frames"] += 1
        if kind == "llm_call":
            llm_calls += 1
            if path == "gateway":
                cov["llm_calls_gateway"] += 1
                kept_roles = {b.get("role") for b in bodies if b.get("kept") is True}
                if {"llm_request", "llm_response"} <= kept_roles:
                    cov["llm_calls_replayable"] += 1
            elif path == "transcript":
                cov["llm_calls_transcript"] += 1
        if kind == "policy_decision" and path == "hook" and p.get("mode") == "enforce":
            cov["enforced_hook_decisions"] += 1
    cov["by_path"] = {k: by_path[k] for k in code_unit_sorted(by_path)}
    cov["by_kind"] = {k: by_kind[k] for k in code_unit_sorted(by_kind)}
    return cov, llm_calls


def read_v1(bundle_path: str, size: int, F: Findings):
    """Section 9, version 1: {kid, sig, msg, manifest (None when invalid)}, or None when unreadable."""
    if size > MAX_FILE:
        F.add("TOO_LARGE", "bundle", f"the file is {size} bytes, over 256 MiB")
        return None
    with open(bundle_path, "rb") as f:
        raw = f.read()
    try:
        raw.decode("utf-8", "strict")
    except UnicodeDecodeError:
        F.add("UNREADABLE", "bundle", "the file is not valid UTF-8")
        return None
    sm = SUFFIX.search(raw)
    if sm is None or sm.start() < len(BUNDLE_PREFIX):
        F.add("BUNDLE_LAYOUT", "bundle", "the file is not in the layout of section 9")
        return None
    manifest_bytes = raw[len(BUNDLE_PREFIX): sm.start()]
    out = {
        "kid": sm.group(1).decode(),
        "sig": bytes.fromhex(sm.group(2).decode()),
        "msg": b"oxagen/bundle/v1\x00" + hashlib.sha256(manifest_bytes).digest(),
        "manifest": None,
    }
    manifest = parse_line(manifest_bytes)
    if manifest is None:
        F.add("MANIFEST_INVALID", "manifest", "the manifest is not JSON exactly as JSON.stringify writes it")
        return out
    if isinstance(manifest, dict) and "v" in manifest and manifest["v"] != 1:
        F.add("UNSUPPORTED_VERSION", "manifest", f"manifest v is {serialize(manifest['v'])}, not 1")
        return out
    out["manifest"] = manifest
    return out


def parse_line(body: bytes):
    """A version-2 line other than a frame line: its value, exactly as JSON.stringify writes it."""
    text = body.decode("utf-8")
    try:
        v = json.loads(text, object_pairs_hook=_no_dupes, parse_float=_refuse_float, parse_constant=_refuse_const)
    except (RecordJSONError, RecursionError, ValueError):
        return None
    try:
        if serialize(v) != text:
            return None
    except RecordJSONError:
        return None
    return v if isinstance(v, dict) and len(v) >= 1 else None


def read_v2(bundle_path: str, size: int, F: Findings):
    """Section 9, version 2, read a line at a time: {kid, sig, msg, manifest (None when invalid)}, or None."""
    with open(bundle_path, "rb") as f:
        f.seek(max(0, size - 512))
        tail = f.read()
    end = len(tail) - 1 if tail.endswith(b"\n") else len(tail)
    lf = tail.rfind(b"\n", 0, end)
    sm = SIGNATURE_LINE.match(tail[lf + 1:]) if lf >= 0 else None
    if sm is None:
        F.add("BUNDLE_LAYOUT", "bundle", "the file does not end with a signature line (section 9)")
        return None
    sig_start = size - len(tail) + lf + 1
    manifest = {"v": 1, "locks": [], "frames": [], "equivocations": [], "gaps": []}
    digest = hashlib.sha256()
    section, n, last_gap, problem = 0, 0, None, None
    with open(bundle_path, "rb") as f:
        pos = 0
        while pos < sig_start:
            line = f.readline(min(MAX_LINE + 1, sig_start - pos))
            if not line.endswith(b"\n"):
                F.add("BUNDLE_LAYOUT", "bundle", f"line {n + 1} is over 1 MiB or does not end with LF")
                return None
            pos += len(line)
            digest.update(line)
            n += 1
            if problem is not None:
                continue
            body = line[:-1]
            try:
                body.decode("utf-8", "strict")
            except UnicodeDecodeError:
                F.add("UNREADABLE", "bundle", "the file is not valid UTF-8")
                return None
            if body.startswith(b'{"seq":'):
                m = FRAME_LINE.match(body)
                kind = json.loads(m.group(3)) if m else None
                if section not in (1, 2) or not m or serialize_string(kind) != m.group(3).decode("utf-8") or not 1 <= len(kind) <= 64:
                    problem = f"line {n} is not a frame line of section 9 (or is out of its place)"
                    continue
                section = 2
                manifest["frames"].append({
                    "seq": int(m.group(1)), "t": int(m.group(2)), "kind": kind,
                    "hash": m.group(4).decode(), "payload": m.group(5).decode("utf-8"),
                })
                if not (is_uint(manifest["frames"][-1]["seq"]) and is_uint(manifest["frames"][-1]["t"])):
                    problem = f"line {n}: seq or t is over 2^53 - 1"
                continue
            v = parse_line(body)
            member = next(iter(v)) if v else None
            order = {"oxagen_bundle": 0, "lock": 1, "equivocation": 3, "gap": 4, "gap_bodies": 4, "end": 5}.get(member)
            if order is None or (order == 0) != (section == 0) or order < section or (member == "end" and section == 5) \
                    or (member != "oxagen_bundle" and len(v) != 1) or (member == "gap_bodies" and last_gap is None):
                problem = f"line {n} is not a line of section 9 in its place, in its exported form"
                continue
            section = max(order, 1)
            if member == "oxagen_bundle":
                if set(v) != {"oxagen_bundle", "payload_type", "run", "exported_ms", "server_key_id", "host_key"}:
                    problem = "the head line does not have the members of section 9"
                    continue
                for k in ("run", "exported_ms", "server_key_id", "host_key"):
                    manifest[k] = v[k]
            elif member == "lock":
                manifest["locks"].append(v["lock"])
            elif member == "equivocation":
                manifest["equivocations"].append(v["equivocation"])
            elif member == "gap":
                last_gap = v["gap"]
                manifest["gaps"].append(last_gap)
            elif member == "gap_bodies":
                if not isinstance(v["gap_bodies"], list) or not isinstance(last_gap, dict) or not isinstance(last_gap.get("bodies"), list):
                    problem = f"line {n}: gap_bodies does not continue a gap's bodies"
                    continue
                last_gap["bodies"].extend(v["gap_bodies"])
            elif member == "end":
                e = v["end"]
                if not (isinstance(e, dict) and set(e) == {"tier", "grade", "coverage"}):
                    problem = "the end line does not have the members of section 9"
                    continue
                manifest.update(e)
            if member != "gap":
                last_gap = None if member != "gap_bodies" else last_gap
    out = {
        "kid": sm.group(1).decode(),
        "sig": bytes.fromhex(sm.group(2).decode()),
        "msg": b"oxagen/bundle/v2\x00" + digest.digest(),
        "manifest": None,
    }
    if problem is None and section != 5:
        problem = "the bundle has no end line"
    if problem is not None:
        F.add("MANIFEST_INVALID", "manifest", problem)
        return out
    out["manifest"] = manifest
    return out


def verify(bundle_path: str, key_args: list[str], key_list: str | None, bodies_dir: str | None, expect_head: str | None, schema: bool = False) -> Findings:
    F = Findings()

    # ---- step 1: the pinned keys, the file, the layout
    keys = load_keys(key_args, key_list)
    if keys is None:
        F.add("KEY_INVALID", "server key", "a pinned server key is not 64 hex characters of an acceptable Ed25519 key, or the key list is not one")
        return F
    if expect_head is not None and not HEX64.fullmatch(expect_head):
        F.add("BAD_ARGUMENTS", "arguments", "--expect-head must be 64 lowercase hex characters")
        return F
    try:
        size = os.path.getsize(bundle_path)
        with open(bundle_path, "rb") as f:
            start = f.read(200)
    except OSError as e:
        F.add("UNREADABLE", "bundle", f"cannot read the file: {e.strerror}")
        return F
    m = VERSION_PREFIX.match(start)
    if m and m.group(1) not in (b"1", b"2"):
        F.add("UNSUPPORTED_VERSION", "bundle", f"oxagen_bundle is {m.group(1).decode()}, not 1 or 2")
        return F
    if start.startswith(BUNDLE_PREFIX):
        read = read_v1(bundle_path, size, F)
    elif start.startswith(V2_PREFIX):
        read = read_v2(bundle_path, size, F)
    elif m:
        F.add("UNSUPPORTED_VERSION", "bundle", "the payload type is not one of section 9")
        return F
    else:
        F.add("BUNDLE_LAYOUT", "bundle", "the file is not in a layout of section 9")
        return F
    if read is None:
        return F

    # ---- step 2: K and S (the pinned key named K, valid for a bundle at the export time)
    manifest = read["manifest"]
    sig_key_id = read["kid"]
    exported = manifest.get("exported_ms") if isinstance(manifest, dict) else None
    pinned, refusal = pick_key(keys, sig_key_id, "bundle", exported)
    if refusal and (manifest is not None or refusal[0] == "SERVER_KEY_UNKNOWN"):
        F.add(refusal[0], "bundle", refusal[1])
    if pinned is not None and not ed25519_verify(pinned, read["msg"], read["sig"]):
        F.add("SERVER_SIG_INVALID", "bundle", "the server signature does not verify over the bundle with the pinned key")

    # ---- step 3: the manifest
    if manifest is None:
        return F
    if not isinstance(manifest, dict):
        F.add("MANIFEST_INVALID", "manifest", "the manifest is not an object")
        return F
    if set(manifest) != set(MANIFEST_MEMBERS):
        F.add("MANIFEST_INVALID", "manifest", f"members are {sorted(manifest)}, not those of section 9")
        return F
    problems = []
    run = manifest["run"]
    if not isinstance(run, dict) or set(run) != set(RUN_MEMBERS):
        problems.append("run does not have the members of section 9")
    else:
        for k in ("id", "workspace", "host", "harness", "session_id", "status"):
            if not isinstance(run[k], str):
                problems.append(f"run.{k} is not a string")
        if not (run["agent"] is None or isinstance(run["agent"], str)):
            problems.append("run.agent is not a string or null")
        if run["environment"] not in ("customer_computer", "contained"):
            problems.append("run.environment is not customer_computer or contained")
        if run["mode"] not in ("enforce", "observe"):
            problems.append("run.mode is not enforce or observe")
        if isinstance(run["host"], str) and not HOST_ID.fullmatch(run["host"]):
            problems.append("run.host is not a host id")
    if manifest["server_key_id"] != sig_key_id:
        F.add("SERVER_KEY_MISMATCH", "manifest", "server_key_id is not the signature's key_id")
    hk = manifest["host_key"]
    if not (isinstance(hk, dict) and set(hk) == {"pub", "key_id"}):
        problems.append("host_key does not have members pub and key_id")
    for k in ("frames", "locks", "equivocations", "gaps"):
        if not isinstance(manifest[k], list):
            problems.append(f"{k} is not an array")
    for k in ("tier", "grade"):
        t = manifest[k]
        if not (isinstance(t, dict) and set(t) == {"value", "reason"} and isinstance(t["value"], str) and isinstance(t["reason"], str)):
            problems.append(f"{k} is not {{value, reason}}")
    if not isinstance(manifest["coverage"], dict):
        problems.append("coverage is not an object")
    if problems:
        for p in problems:
            F.add("MANIFEST_INVALID", "manifest", p)
        return F

    chain = run["id"]
    expected_run = run_id(run["host"], run["harness"], run["session_id"])
    if chain != expected_run:
        F.add("RUN_ID_MISMATCH", "manifest", f"run.id {chain} is not {expected_run}, the id of host, harness and session_id")

    # ---- step 4: frames
    frames = manifest["frames"]
    gen = genesis(chain)
    prev = gen
    prev_t = None
    recorded: list[str] = []  # recorded hash by position
    parsed: list[tuple[int, str, dict]] = []
    first_broken = None
    last_seq = -1
    for i, fr in enumerate(frames):
        where = f"frame {i}"
        if not (isinstance(fr, dict) and set(fr) == {"seq", "t", "kind", "payload", "hash"}
                and is_uint(fr["seq"]) and is_uint(fr["t"]) and isinstance(fr["kind"], str)
                and isinstance(fr["payload"], str) and is_hex64(fr["hash"])):
            F.add("FRAME_INVALID", where, "not a frame {seq, t, kind, payload, hash}")
            first_broken = i if first_broken is None else first_broken
            recorded.append(fr.get("hash") if isinstance(fr, dict) and is_hex64(fr.get("hash")) else "")
            prev = bytes.fromhex(recorded[-1]) if recorded[-1] else prev
            continue
        seq = fr["seq"]
        where = f"frame {seq}"
        if seq != i and (i == 0 or seq != last_seq + 1):
            # report each discontinuity once, not every later frame whose seq is off by the same amount
            if seq == last_seq:
                F.add("SEQ_DUPLICATE", where, f"seq {seq} repeats at position {i}")
            elif seq < i:
                F.add("SEQ_ORDER", where, f"seq {seq} at position {i}")
            else:
                F.add("SEQ_GAP", where, f"seq {seq} at position {i}: frames {i}..{seq - 1} are missing")
            first_broken = i if first_broken is None else first_broken
        last_seq = seq
        if prev_t is not None and fr["t"] < prev_t:
            F.add("TIME_REGRESSION", where, f"t {fr['t']} is before the previous frame's {prev_t}")
        prev_t = fr["t"]
        kind = fr["kind"]
        ok = True
        if kind not in KINDS or len(kind) > 64 or not kind.isascii():
            F.add("FRAME_INVALID", where, f"unknown kind {kind!r}")
            ok = False
        payload_obj = None
        if len(fr["payload"].encode("utf-16-le", "surrogatepass")) // 2 > 65536:
            F.add("FRAME_INVALID", where, "payload is over 65,536 characters")
            ok = False
        try:
            payload_obj = parse_record_json(fr["payload"])
            if not isinstance(payload_obj, dict):
                raise RecordJSONError("payload is not an object")
        except RecordJSONError as e:
            F.add("FRAME_INVALID", where, f"payload is not Record JSON: {e}")
            payload_obj = None
            ok = False
        if schema and payload_obj is not None and kind in KINDS:
            prob = payload_schema_problem(kind, payload_obj)
            if prob:
                F.add("FRAME_INVALID", where, prob)
                ok = False
        if not ok:
            first_broken = i if first_broken is None else first_broken
        try:
            h = frame_hash(chain, seq, prev, fr["t"], kind, fr["payload"]).hex()
        except (UnicodeEncodeError, OverflowError):
            h = None
        if h != fr["hash"]:
            F.add("FRAME_HASH_MISMATCH", where, f"recomputed hash {h} is not the recorded {fr['hash']}")
            first_broken = i if first_broken is None else first_broken
        recorded.append(fr["hash"])
        prev = bytes.fromhex(fr["hash"])  # section 10 step 4: link to the recorded hash
        parsed.append((seq, kind, payload_obj if payload_obj is not None else {}))

    n = len(frames)

    def head_at(count: int):
        if count == 0:
            return gen.hex()
        if count <= n:
            return recorded[count - 1]
        return None

    # ---- step 5: host key and locks
    host_pub = None
    if not (is_hex64(hk["pub"]) and key_acceptable(bytes.fromhex(hk["pub"]))):
        F.add("HOST_KEY_INVALID", "host key", "the host key is not an acceptable Ed25519 key")
    elif hk["key_id"] != key_id(bytes.fromhex(hk["pub"])):
        F.add("HOST_KEY_INVALID", "host key", f"key_id {hk['key_id']} is not the host key's id {key_id(bytes.fromhex(hk['pub']))}")
    else:
        host_pub = bytes.fromhex(hk["pub"])

    locks = manifest["locks"]
    prev_lock_hash = None
    prev_lock_seq = None
    prev_count = None
    prev_lock_t = None
    final_seen = None  # count of the final lock
    last_count = None
    lock_hashes = []
    for i, lk in enumerate(locks):
        if not (isinstance(lk, dict) and set(lk) == {"payload", "sig", "received_ms"} and isinstance(lk["payload"], str)
                and isinstance(lk["sig"], str) and HEX128.fullmatch(lk["sig"]) and is_uint(lk["received_ms"])):
            F.add("MANIFEST_INVALID", f"lock {i}", "not a lock {payload, sig (128 hex), received_ms} (section 9)")
            return F
    for i, lk in enumerate(locks):
        where = f"lock {i}"
        pae_bytes = pae(LOCK_TYPE, lk["payload"].encode("utf-8", "surrogatepass"))
        lh = hashlib.sha256(pae_bytes).hexdigest()
        lock_hashes.append(lh)
        try:
            lp = parse_record_json(lk["payload"])
        except RecordJSONError as e:
            F.add("LOCK_FORMAT_INVALID", where, f"payload is not Record JSON: {e}")
            continue
        if not (isinstance(lp, dict) and list(lp) == LOCK_MEMBERS):
            F.add("LOCK_FORMAT_INVALID", where, "payload does not have exactly the members of section 6")
            continue
        bad = []
        if lp["v"] != 1 or not is_int(lp["v"]):
            bad.append("v is not 1")
        if not isinstance(lp["chain"], str):
            bad.append("chain is not a string")
        if not is_uint(lp["lock_seq"]):
            bad.append("lock_seq is not an integer >= 0")
        if not is_uint(lp["count"]):
            bad.append("count is not an integer >= 0")
        if not is_hex64(lp["head"]):
            bad.append("head is not 64 hex")
        if not (lp["prev_lock"] is None or is_hex64(lp["prev_lock"])):
            bad.append("prev_lock is not 64 hex or null")
        if not is_uint(lp["t"]):
            bad.append("t is not an integer >= 0")
        if not isinstance(lp["final"], bool):
            bad.append("final is not a boolean")
        if lp["signer"] not in ("host", "server"):
            bad.append("signer is not host or server")
        if not isinstance(lp["host"], str):
            bad.append("host is not a string")
        if not (isinstance(lp["key_id"], str) and HEX16.fullmatch(lp["key_id"])):
            bad.append("key_id is not 16 hex")
        if bad:
            for b in bad:
                F.add("LOCK_FORMAT_INVALID", where, b)
            continue
        where = f"lock {lp['lock_seq']}"
        if lp["chain"] != chain or lp["host"] != run["host"]:
            F.add("LOCK_CHAIN_MISMATCH", where, f"lock is for chain {lp['chain']} host {lp['host']}, not {chain} host {run['host']}")
        if lp["signer"] == "host":
            signer_key = host_pub
        else:
            signer_key, refusal = pick_key(keys, lp["key_id"], "seal", lp["t"])
            if refusal:
                F.add(refusal[0], where, refusal[1])
        if signer_key is not None and not ed25519_verify(signer_key, pae_bytes, bytes.fromhex(lk["sig"])):
            F.add("LOCK_SIG_INVALID", where, f"signature does not verify under the {lp['signer']} key")
        if final_seen is not None:
            F.add("LOCK_AFTER_FINAL", where, "a lock follows a final lock")
        expected_seq = 0 if prev_lock_seq is None else prev_lock_seq + 1
        if lp["lock_seq"] != expected_seq:
            if prev_lock_seq is not None and lp["lock_seq"] <= prev_lock_seq:
                F.add("LOCK_SEQ_DUPLICATE", where, f"lock_seq {lp['lock_seq']} after lock_seq {prev_lock_seq}")
            else:
                F.add("LOCK_SEQ_GAP", where, f"lock_seq {lp['lock_seq']}, expected {expected_seq}")
        expected_prev = prev_lock_hash if i > 0 else None
        if lp["lock_seq"] == 0:
            expected_prev = None
        if lp["prev_lock"] != expected_prev:
            F.add("LOCK_CHAIN_BREAK", where, f"prev_lock {lp['prev_lock']} is not {expected_prev}")
        if prev_count is not None and lp["count"] < prev_count:
            F.add("LOCK_REGRESSION", where, f"count {lp['count']} is below the previous lock's {prev_count}")
        hd = head_at(lp["count"])
        if hd is None:
            F.add("LOCK_HEAD_MISMATCH", where, f"count {lp['count']} is beyond the bundle's {n} frames")
        elif hd != lp["head"]:
            F.add("LOCK_HEAD_MISMATCH", where, f"head {lp['head']} is not the chain's head at count {lp['count']} ({hd})")
        if prev_lock_t is not None and lp["t"] < prev_lock_t:
            F.add("LOCK_TIME_REGRESSION", where, f"t {lp['t']} is before the previous lock's {prev_lock_t}")
        prev_lock_t = lp["t"]
        prev_lock_hash = lh
        prev_lock_seq = lp["lock_seq"]
        prev_count = lp["count"]
        last_count = lp["count"]
        if lp["final"] and final_seen is None:
            final_seen = lp["count"]
    if final_seen is not None:
        if n > final_seen:
            F.add("FRAMES_AFTER_FINAL", f"frame {final_seen}", f"{n - final_seen} frame(s) beyond the final lock's count {final_seen}")
    else:
        F.add("NOT_FINAL_LOCKED", "bundle", "no final lock")
        if last_count is None or n > last_count:
            c = last_count or 0
            F.add("UNLOCKED_TAIL", f"frame {c}", f"{n - c} frame(s) after the last lock")

    for e in manifest["equivocations"]:
        if isinstance(e, dict):
            F.add("EQUIVOCATION", f"{e.get('what')} {e.get('seq')}", "the server kept evidence of a second, different version")
        else:
            F.add("MANIFEST_INVALID", "manifest", "an equivocation is not an object")

    # ---- step 6: gap list
    gaps = manifest["gaps"]
    listed_ok = True
    for j, g in enumerate(gaps):
        allowed = {"kind", "source", "detail", "seq", "from_seq", "to_seq", "count", "bodies"}
        if not (isinstance(g, dict) and {"kind", "source", "detail"} <= set(g) <= allowed
                and g["source"] in ("computer", "chain", "server") and isinstance(g["kind"], str)
                and isinstance(g["detail"], str)
                and all(is_uint(g[k]) for k in ("seq", "from_seq", "to_seq", "count") if k in g)
                and ("bodies" not in g or (isinstance(g["bodies"], list) and all(is_hex64(b) for b in g["bodies"])))):
            F.add("GAP_LIST_MISMATCH", "gap list", f"gap {j} is not a gap of section 8")
            listed_ok = False
    if listed_ok:
        exp = expected_gaps(parsed)
        own = [g for g in gaps if g["source"] != "server"]
        server = [g for g in gaps if g["source"] == "server"]
        if gaps[: len(own)] != own:
            F.add("GAP_LIST_MISMATCH", "gap list", "a server gap comes before a computer or chain gap")
        for g in server:
            if g["kind"] not in SERVER_GAP_KINDS:
                F.add("GAP_LIST_MISMATCH", "gap list", f"unknown server gap kind {g['kind']!r}")
        got = [gap_key(g) for g in own]
        if not json_equal(got, exp):
            missing = [e for e in exp if not any(json_equal(e, x) for x in got)]
            extra = [x for x in got if not any(json_equal(e, x) for e in exp)]
            detail = []
            if missing:
                detail.append("not listed: " + serialize(missing))
            if extra:
                detail.append("listed but not shown by the frames: " + serialize(extra))
            if not detail:
                detail.append("listed in a different order than section 8 gives")
            F.add("GAP_LIST_MISMATCH", "gap list", "; ".join(detail))
    if gaps:
        F.add("GAPS", "gap list", f"{len(gaps)} gap(s): " + ", ".join(f"{g.get('source')}/{g.get('kind')}" for g in gaps if isinstance(g, dict)))

    # ---- step 7: coverage, tier, grade
    cov, llm_calls = compute_coverage(parsed)
    got_cov = manifest["coverage"]
    if not json_equal(cov, got_cov):
        diff = [k for k in sorted(set(cov) | set(got_cov)) if k not in cov or k not in got_cov or not json_equal(cov[k], got_cov[k])]
        F.add("COVERAGE_MISMATCH", "coverage", "differs in " + ", ".join(diff) + "; recomputed " + serialize(cov))
    else:
        for k in ("by_path", "by_kind"):
            if list(got_cov[k]) != code_unit_sorted(got_cov[k]):
                F.add("COVERAGE_MISMATCH", "coverage", f"{k} keys are not in ascending code-unit order")
    if run["environment"] == "contained":
        tier = "contained"
    elif run["mode"] == "observe":
        tier = "observe"
    elif cov["llm_calls_gateway"] > 0:
        tier = "gateway"
    elif cov["enforced_hook_decisions"] > 0:
        tier = "harness"
    else:
        tier = "observe"
    if manifest["tier"]["value"] != tier:
        F.add("TIER_MISMATCH", "tier", f"tier is {manifest['tier']['value']!r}, recomputed {tier!r}")
    if gaps or cov["bodies_not_kept"] > 0:
        grade = "inspect"
    elif llm_calls == 0 or cov["llm_calls_replayable"] < llm_calls:
        grade = "view"
    elif run["environment"] != "contained":
        grade = "fork"
    else:
        grade = "retry"
    if manifest["grade"]["value"] != grade:
        F.add("GRADE_MISMATCH", "grade", f"grade is {manifest['grade']['value']!r}, recomputed {grade!r}")

    # ---- step 8: expected head
    if expect_head is not None:
        last = recorded[-1] if n else gen.hex()
        if last != expect_head:
            F.add("EXPECTED_HEAD_MISMATCH", "bundle", f"the last frame's hash {last} is not the expected head {expect_head}")

    # ---- step 9: bodies
    if bodies_dir is not None:
        seen = set()
        for seq, _, p in parsed:
            for b in p.get("bodies") or []:
                if not (isinstance(b, dict) and b.get("kept") is True and is_hex64(b.get("sha256"))):
                    continue
                key = (b["sha256"], b.get("size"))
                if key in seen:
                    continue
                seen.add(key)
                fp = os.path.join(bodies_dir, b["sha256"])
                where = f"body {b['sha256']}"
                try:
                    with open(fp, "rb") as f:
                        data = f.read()
                except FileNotFoundError:
                    F.add("BODY_MISSING", where, f"named by frame {seq}, not in {bodies_dir}")
                    continue
                except OSError as e:
                    F.add("BODY_MISSING", where, f"cannot read: {e.strerror}")
                    continue
                if hashlib.sha256(data).hexdigest() != b["sha256"] or len(data) != b.get("size"):
                    F.add("BODY_HASH_MISMATCH", where, f"the file has SHA-256 {hashlib.sha256(data).hexdigest()} and size {len(data)}, frame {seq} names size {b.get('size')}")

    if first_broken is not None:
        F.first_broken = first_broken
    return F


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def wycheproof(path: str) -> int:
    with open(path) as f:
        data = json.load(f)
    total = differ = 0
    for g in data["testGroups"]:
        pub = bytes.fromhex(g["publicKey"]["pk"])
        for t in g["tests"]:
            total += 1
            got = ed25519_verify(pub, bytes.fromhex(t["msg"]), bytes.fromhex(t["sig"]))
            want = t["result"] == "valid"
            if got != want:
                differ += 1
                print(f"MISMATCH tcId {t['tcId']}: expected {t['result']}, got {'valid' if got else 'invalid'} ({t['comment']})")
    print(f"wycheproof: {total} vectors, {differ} decision(s) differ")
    return 1 if differ else 0


USAGE = ("usage: independent-verify.py BUNDLE (--server-key KEYFILE_OR_HEX ... | --server-keys FILE)"
         " [--bodies DIR] [--expect-head HEX] [--schema]")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--wycheproof":
        return wycheproof(argv[1])
    bundle = key_list = bodies = head = None
    keys: list[str] = []
    schema = False
    i = 0
    try:
        while i < len(argv):
            a = argv[i]
            if a == "--server-key":
                keys.append(argv[i + 1])
                i += 2
            elif a == "--server-keys":
                key_list = argv[i + 1]
                i += 2
            elif a == "--bodies":
                bodies = argv[i + 1]
                i += 2
            elif a == "--schema":
                schema = True
                i += 1
            elif a == "--expect-head":
                head = argv[i + 1]
                i += 2
            elif a == "--batch":
                bundle = "-"
                i += 1
            elif a.startswith("--") or bundle is not None:
                raise IndexError
            else:
                bundle = a
                i += 1
    except IndexError:
        print(USAGE, file=sys.stderr)
        return 2
    if bundle is None or (not keys and key_list is None):
        print(USAGE, file=sys.stderr)
        return 2
    if bundle == "-":
        for line in sys.stdin:
            path, _, expect = line.rstrip("\n").partition("\t")
            try:
                print(verify(path, keys, key_list, bodies, expect or None, schema).exit_code(), flush=True)
            except Exception:
                print(2, flush=True)
        return 0
    try:
        F = verify(bundle, keys, key_list, bodies, head, schema)
    except Exception as e:  # never let a crash exit 1, which would read as "tampered"
        print(f"MANIFEST_INVALID bundle this verifier could not process the bundle ({type(e).__name__}: {e})")
        return 2
    for code, where, message in F.items:
        print(f"{code} {where} {message}")
    rc = F.exit_code()
    names = {0: "VALID", 1: "TAMPERED", 2: "CANNOT VERIFY", 3: "INCOMPLETE"}
    fb = getattr(F, "first_broken", None)
    print(f"result: {names[rc]} (exit {rc})" + (f"; first broken seq {fb}" if fb is not None else ""), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
