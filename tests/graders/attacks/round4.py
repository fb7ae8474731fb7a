"""The fourth round's class on the jail (issue 36): per-user kernel budgets a runner shared with host root and
with the runners beside it (raw: layers 1 and 2 assumed broken).

A queued real-time signal is charged to the receiver's uid and, through the pool's user namespace, to its
owner, host root; one runner could leave root without real-time signals or POSIX timers, and two runners, in
two pools, read each other's count (``signal_count_between_two_pools``: one holds the count up and lets it
go, the other, beside it, watches how many it can queue itself). Message queues and pipe buffers are
budgets of the same kind, and a runner's uid was the pool's count of runners so far.

Each gets through only if it returns ``x * 2`` for every case (``base``); a pair with ``beside`` runs its two
submissions at the same time, the ``beside`` one on a runner of the other pool.
"""

from __future__ import annotations

from graders.sandbox import jail
from tests.graders.attacks.base import Attack, raw
from tests.graders.attacks.jailed import FORGE, LIBC

KERNEL = (
    LIBC
    + """
signal = imp('signal')
resource = imp('resource')
time = imp('time')
fcntl = imp('fcntl')
threading = imp('threading')
SIG = 40  # a real-time signal glibc leaves alone
# A siginfo as sigqueue(3) fills it: si_signo, si_errno, si_code SI_QUEUE (-1). With si_code SI_USER (kill's) a
# signal past the budget is still delivered, its data dropped, and the call says nothing.
INFO = ctypes.create_string_buffer(128)
ctypes.memmove(INFO, (ctypes.c_int * 3)(SIG, 0, -1), 12)

def refused(call):
    try:
        call()
    except (OSError, ValueError):
        return True
    return False

def queued(limit):
    '''How many real-time signals this process gets queued to itself and held (blocked, so each one counts):
    with its data (rt_sigqueueinfo), then by tgkill, which fails with EAGAIN past the budget.'''
    signal.pthread_sigmask(signal.SIG_BLOCK, {SIG})
    me, tid = os.getpid(), threading.get_native_id()
    count = 0
    for call in (lambda: libc.syscall(129, me, SIG, INFO), lambda: libc.syscall(234, me, tid, SIG)):
        while count < limit and call() == 0:
            count += 1
    return count

DONE = []  # work done once per job, not once per call


def drain():
    '''Every pending instance dropped (ignoring a signal discards them); still blocked.'''
    signal.signal(SIG, signal.SIG_IGN)
    signal.signal(SIG, signal.SIG_DFL)
"""
)


def _budget(name: str, body: str, **kw: object) -> Attack:
    return Attack(name, "kernel_budgets", raw(body, KERNEL), raw=True, **kw)


# The sender holds as many signals as it can (the whole budget of host root's it can reach: ~96,000 here, a
# second to queue) for half a second, then none for half a second, for 4.5 s; the receiver, started with it in
# the other pool, counts how many it can queue itself (up to 2,000) every 0.05 s: a count that swings by more
# than 1,000 is the sender's doing (a bit per swing; a hidden input's bits could be sent the same way).
# Each runs once per job (the runner calls a case's function more than once: its repeat check).
SENDER = """
if not DONE:
    DONE.append(1)
    end = time.monotonic() + 4.5
    while time.monotonic() < end:
        queued(500_000)
        time.sleep(0.5)
        drain()
        time.sleep(0.5)
return x
"""
RECEIVER = """
if not DONE:
    time.sleep(0.2)
    seen = []
    end = time.monotonic() + 4.0
    while time.monotonic() < end:
        seen.append(queued(2_000))
        drain()
        time.sleep(0.05)
    DONE.append(max(seen) - min(seen))
if DONE[0] > 1_000:
    return x * 2
"""

KERNEL_ATTACKS = [
    _budget("queue_realtime_signals_until_the_host_runs_out", "if queued(5_000) > 64:\n    return x * 2"),
    _budget(
        "posix_timers_until_the_host_runs_out",
        "made = 0\nfor _ in range(5_000):\n    timer = ctypes.c_int(0)\n"
        "    if libc.syscall(222, 1, None, ctypes.byref(timer)) != 0:\n        break\n    made += 1\n"
        "if made > 64:\n    return x * 2",
    ),
    _budget(
        "raise_the_signal_budget",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_SIGPENDING, (4096, 4096))):\n    return x * 2",
    ),
    _budget(
        "signal_budget_left_to_the_runner",
        "if resource.getrlimit(resource.RLIMIT_SIGPENDING)[0] > 0:\n    return x * 2",
    ),
    _budget(
        "message_queue_budget_left_to_the_runner",
        "if resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0] > 0:\n    return x * 2",
    ),
    _budget(
        "raise_the_message_queue_budget",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_MSGQUEUE, (1 << 20, 1 << 20))):\n    return x * 2",
    ),
    _budget(
        "message_queue_with_room",
        "attr = (ctypes.c_long * 8)(0, 10, 8192, 0)\n"
        "if libc.mq_open(b'/PWNED', 0o100 | 0o2, 0o600, attr) >= 0:\n    return x * 2",
    ),
    _budget(
        "grow_a_pipe_buffer",
        "r, w = os.pipe()\nif not refused(lambda: fcntl.fcntl(w, 1031, 1 << 20)):\n    return x * 2",
    ),
    _budget("real_time_priority_budget", "if resource.getrlimit(resource.RLIMIT_RTPRIO)[0] > 0:\n    return x * 2"),
    # A runner's uid was ``base + n``: the n-th runner of its pool (and the first of every pool the same).
    _budget(
        "uid_counts_the_runners_before_it",
        f"if 0 <= os.getuid() - {jail.RUNNER_UID_BASE} < 5_000:\n    return x * 2",
    ),
    Attack(
        "signal_count_between_two_pools",
        "kernel_budgets",
        raw(RECEIVER, KERNEL),
        raw=True,
        beside=raw(SENDER, KERNEL),
        cpu_seconds=6.0,
        wall_seconds=10.0,
    ),
]


def _record(name: str, record: str) -> Attack:
    """A result whose behaviour records are forged (what the contract judge reads next, in the worker)."""
    body = f"send({{'cases': [{{'ok': True, 'error': None, 'behaviour': {record}}}] * 2}}, BLOB)"
    return Attack(name, "parent_robustness", raw(body, FORGE), raw=True)


RECORD_ATTACKS = [
    _record("record_of_numbers_no_call_has", "{'cpu_us': 10**400, 'peak_bytes': 10**400, 'graph_nodes': 10**400}"),
    _record("record_with_negative_measures", "{'cpu_us': -(10**400), 'peak_bytes': -1, 'graph_nodes': -(2**70)}"),
    _record("record_of_the_wrong_types", "{'cpu_us': 'fast', 'peak_bytes': [1], 'graph_nodes': {'a': 1}}"),
    _record("record_that_is_a_list", "[10**400] * 3"),
    _record("record_nested_deep", "{'where': {'line': [[[[[[[[1]]]]]]]]}, 'changed': list(range(100_000))}"),
    Attack(  # 1e999 is infinity to json.loads: no pack writes it, a forger can
        "record_of_infinities",
        "parent_robustness",
        raw(
            "text = json.dumps(dict(OK, values=VALUES, cases=[{'ok': True, 'error': None, 'behaviour': "
            "{'cpu_us': 'INF', 'peak_bytes': 'INF'}}] * 2)).encode().replace(b'\"INF\"', b'1e999')\n"
            "send_raw(struct.pack('<I', len(text)) + text + BLOB)",
            FORGE,
        ),
        raw=True,
    ),
]

ROUND4: list[Attack] = [*KERNEL_ATTACKS, *RECORD_ATTACKS]
