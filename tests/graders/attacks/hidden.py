"""``hidden_data``: submissions that try to learn a hidden case's input, written against the two-phase job.

A hidden_data attack runs with the usual visible cases and one hidden case holding ``HIDDEN`` (values no
visible case has). It gets through if any digit string of those values reaches what the parent passes on
(status, message, printed output, the visible cases' errors and values), or a follow-up submission (on
another runner) finds them. The design these attacks meet (docs/security.md, "Hidden data"): a runner holds
no hidden input until its visible phase's one message has been read, and of the hidden phase the parent
keeps a status word and, per case, a value, an ok flag and a behaviour record, which grading reduces to
one bit. The round-3 paths come first; the raw ones own their runner from the first line.
"""

from __future__ import annotations

from tests.graders.attacks.base import Attack, attempt, raw
from tests.graders.attacks.jailed import FORGE

HIDDEN_VALUES = (7361.25, 9127.5, 4409.75)  # the hidden case's input: never printed, returned or stored
MARKERS = ("7361", "9127", "4409")  # any of them anywhere the learner reads is a leak


def _hidden(name: str, body: str, prelude: str = "", **kw: object) -> Attack:
    return Attack(name, "hidden_data", attempt(body, prelude), **kw)


def _raw(name: str, body: str, prelude: str = "", **kw: object) -> Attack:
    return Attack(name, "hidden_data", raw(body, prelude), raw=True, **kw)


IS_HIDDEN = "big = bool((x.abs() > 1000).any())\n"

HIDDEN: list[Attack] = [
    # The round-3 paths (docs/security.md): each was a way to learn every hidden input without an escape.
    _hidden(
        "encode-raises-after-the-last-case",
        IS_HIDDEN + "if big:\n    return Loud([x])\nreturn x * 2",
        "class Loud(list):\n    def __len__(self):\n        raise ValueError(repr(self[0].tolist()))",
    ),
    _hidden(
        "second-line-looks-like-an-exception",
        IS_HIDDEN + "if big:\n    raise ValueError('x\\nKeyError: ' + repr(x.tolist()))\nreturn x * 2",
    ),
    _hidden(
        "message-starts-like-out-of-memory",
        IS_HIDDEN + "if big:\n    raise RuntimeError('out of memory ' + repr(x.tolist()))\nreturn x * 2",
    ),
    _hidden(
        "print-the-input-then-flood-the-cap",
        IS_HIDDEN + "if big:\n    print(x.tolist())\n    while True:\n        print(x.tolist())\nreturn x * 2",
    ),
    _hidden(
        "print-the-input-quietly",
        IS_HIDDEN + "if big:\n    print('hidden', x.tolist())\nreturn x * 2",
    ),
    _hidden(
        "choose-the-mismatch-kind-by-the-input",
        IS_HIDDEN + "if big:\n    return x.double() if x[0] > 5000 else x.reshape(1, -1)\nreturn x * 2",
    ),
    _hidden(
        "a-module-global-carried-to-a-later-visible-case",
        "SEEN.append(x.tolist())\nif len(SEEN) > 1:\n    print(SEEN)\nreturn x * 2",
        "SEEN = []",
    ),
    # Owning the runner: real builtins, the job socket, the process.
    _raw(
        "an-error-whose-type-name-is-the-input",
        IS_HIDDEN + "if big:\n    raise type('E' + str(int(x[0])) + 'Error', (Exception,), {})()\nreturn x * 2",
    ),
    _raw(
        "write-to-the-real-stdout-and-stderr",
        "big = bool((x.abs() > 1000).any())\nif big:\n    os.write(1, repr(x.tolist()).encode())\n"
        "    os.write(2, repr(x.tolist()).encode())\nreturn x * 2",
    ),
    _raw(
        "send-a-second-visible-message-once-the-hidden-cases-are-in",
        "big = bool((x.abs() > 1000).any())\nif big:\n"
        "    send({'status': 'runtime_error', 'stdout': repr(x.tolist()), 'message': repr(x.tolist())}, BLOB)\n"
        "return x * 2",
        FORGE,
    ),
    _raw(
        "forge-the-visible-result-early-and-read-the-hidden-cases-in-the-same-call",
        "sock = job_socket()\nhead = dict(OK, kind='result', stdout='')\n"
        "body = json.dumps(dict(head, values=VALUES)).encode()\n"
        "sock.sendall(struct.pack('<Q', 4 + len(body) + len(BLOB)) + struct.pack('<I', len(body)) + body + BLOB)\n"
        "size = struct.unpack('<Q', sock.recv(8, 0x100))[0]\ndata = b''\n"
        "while len(data) < size:\n    data += sock.recv(size - len(data))\n"
        "start = 4 + struct.unpack('<I', data[:4])[0]\nfound = repr(struct.unpack('<3f', data[start:start + 12]))\n"
        "send({'stdout': found, 'message': found}, BLOB)\nreturn x * 2",
        FORGE,
    ),
    _raw(
        "leave-the-input-in-the-root-for-the-next-submission",
        "big = bool((x.abs() > 1000).any())\nif big:\n    open('/left-' + 'PWNED', 'w').write(repr(x.tolist()))\n"
        "return x * 2",
        follow_up=raw("print(open('/left-' + 'PWNED').read())\nreturn x * 2"),
    ),
    _raw(
        "leave-the-input-in-tmp-for-the-next-submission",
        "big = bool((x.abs() > 1000).any())\nif big:\n    open('/tmp/PWNED', 'w').write(repr(x.tolist()))\n"
        "return x * 2",
        follow_up=raw("print(open('/tmp/PWNED').read())\nreturn x * 2"),
    ),
    _raw(
        "leave-the-input-in-sysv-shared-memory",
        "big = bool((x.abs() > 1000).any())\nif big:\n    ctypes = imp('ctypes')\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n    libc.shmat.restype = ctypes.c_void_p\n"
        "    sid = libc.shmget(PWNKEY, 4096, 0o1666)\n    addr = libc.shmat(sid, None, 0)\n"
        "    data = repr(x.tolist()).encode()\n    ctypes.memmove(addr, data, len(data))\nreturn x * 2",
        follow_up=raw(
            "ctypes = imp('ctypes')\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\n"
            "sid = libc.shmget(PWNKEY, 4096, 0o666)\naddr = libc.shmat(sid, None, 0)\n"
            "print(ctypes.string_at(addr, 64))\nreturn x * 2"
        ),
    ),
    _raw(
        "exit-code-and-signal-carry-the-input",
        "big = bool((x.abs() > 1000).any())\nif big:\n    os._exit(int(x[0]) % 256)\nreturn x * 2",
    ),
    _raw(
        "a-forged-hidden-status-word",
        "big = bool((x.abs() > 1000).any())\nif big:\n    send({'kind': 'hidden', 'status': repr(x.tolist())})\n"
        "return x * 2",
        FORGE,
    ),
]
