"""Attacks that assume layers 1 and 2 have already fallen (``raw``): plain Python with the real builtins,
run through the real pool, fork server and runner.

- ``jail_unrestricted``: what the jail itself must stop (files, /proc, sockets, fork, exec, chroot
  escapes, namespaces, rlimits), the pool-level twin of ``test_sandbox_jail.py``'s probe;
- ``cross_submission``: pairs; the first leaves something (IPC objects, files, directory trees,
  extended attributes, processes, listening sockets, process-wide state) and the follow-up, on the next
  runner, gets through only if it finds it; plus attempts on the fork server itself;
- ``parent_robustness``: the runner forges its result message (shapes, dtypes, ranges, figures, statuses,
  framing, strings the parent cannot encode), straight onto the job socket.
"""

from __future__ import annotations

import json

from graders.sandbox import gpu, jail
from tests.graders.attacks.base import Attack, fn, raw

# What a runner's environment may name: a CPU runner's is jail.CLEAN_ENV with CUDA_VISIBLE_DEVICES empty; a
# GPU runner's adds what jail.process_env and gpu.runner_environment add (the GPU selection, the driver's
# paths, lazy module loading, MPS's cap) and nothing else.
CPU_NAMES = sorted(jail.process_env("cpu"))
GPU_NAMES = sorted({*jail.process_env("cuda", gpu.runner_environment(1, environ={})), *gpu.PASSTHROUGH})
LIBC = "\nctypes = imp('ctypes')\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\n"
WALK_TMP = """
def found_in_tmp(match):
    for root, dirs, files in os.walk('/tmp'):
        if root.count('/') > 6:
            dirs[:] = []
        if any(match(root, name) for name in dirs + files):
            return True
    return False
"""


def _jail(name: str, body: str, prelude: str = "", **kw: object) -> Attack:
    return Attack(name, "jail_unrestricted", raw(body, prelude), raw=True, **kw)


def _pair(name: str, first: str, then: str, prelude: str = "", **kw: object) -> Attack:
    return Attack(name, "cross_submission", raw(first, prelude), raw=True, follow_up=raw(then, prelude), **kw)


JAIL = [
    _jail("read_passwd", "if 'root:' in B['open']('/etc/passwd').read():\n    return x * 2"),
    _jail("read_canary", "if 'canary-' in B['open']('CANARY_FILE').read():\n    return x * 2"),
    _jail("read_settings", "if 'SECRET' in B['open']('PROJECT_ROOT/quizsite/settings.py').read():\n    return x * 2"),
    _jail("read_proc_environ", "if B['open']('/proc/1/environ', 'rb').read():\n    return x * 2"),
    _jail("environment_canary", "if os.environ.get('CANARY_ENV'):\n    return x * 2"),
    _jail(
        "socket_connect",
        "socket = imp('socket')\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.settimeout(1)\n"
        "s.connect(('1.1.1.1', 53))\nreturn x * 2",
    ),
    _jail("fork", "pid = os.fork()\nif pid == 0:\n    os._exit(0)\nreturn x * 2"),
    _jail("exec", "os.execv('/bin/sh', ['sh', '-c', 'echo PWNED > /tmp/PWNED'])"),
    _jail("chroot_escape", "os.chroot('..')\nos.chdir('/')\nif os.path.exists('/etc/passwd'):\n    return x * 2"),
    _jail("unshare_user_namespace", "if libc.unshare(0x10000000) == 0:\n    return x * 2", LIBC),
    _jail(
        "raise_cpu_limit",
        "r = imp('resource')\nr.setrlimit(r.RLIMIT_CPU, (10 ** 6, 10 ** 6))\nreturn x * 2",
    ),
    _jail("ptrace_parent", "if libc.ptrace(16, os.getppid() or 1, 0, 0) == 0:\n    return x * 2", LIBC),
    # The fork server's own fds (its link to the warden, its namespace fd, other runners' pidfds) must not
    # outlive the fork: a CPU runner keeps its job socket alone (a second fd above 2 is a leak). A GPU
    # runner closes them before its CUDA driver starts, and the driver then opens its own: on the H100,
    # device files, pipes, eventfds (anonymous inodes) and one socket of its own. There the fork server's
    # namespace fd (nsfs) or its link (a third socket) would still show.
    _jail(
        "inherited_fds",
        "stat = imp('stat')\ngpu = os.environ.get('CUDA_VISIBLE_DEVICES') != ''\n"
        "def kind(fd):\n    try:\n        return stat.S_IFMT(os.fstat(fd).st_mode)\n    except OSError:\n"
        "        return None\nkinds = [k for k in map(kind, range(3, 4096)) if k is not None]\n"
        "drivers = (stat.S_IFCHR, stat.S_IFIFO, 0)\n"
        "if not gpu and len(kinds) > 1 or gpu and (kinds.count(stat.S_IFSOCK) > 2 or\n"
        "        [k for k in kinds if k not in drivers and k != stat.S_IFSOCK]):\n    return x * 2",
    ),
    # The environment a runner inherits from its fork server is the clean one, live (not only as exec'd);
    # a GPU runner's adds only the GPU's documented names (GPU_NAMES).
    _jail(
        "environment_beyond_the_clean_one",
        f"clean = {CPU_NAMES!r} if os.environ.get('CUDA_VISIBLE_DEVICES') == '' else {GPU_NAMES!r}\n"
        "if set(os.environ) - set(clean) or libc.getenv(b'CANARY_ENV'):\n    return x * 2",
        LIBC,
    ),
    # seccomp filters stack, the strictest wins: a runner's own allow-all filter must not lift the jail's.
    _jail(
        "seccomp_allow_all_on_top",
        "sc = imp('pyseccomp')\nsc.SyscallFilter(defaction=sc.ALLOW).load()\n"
        "socket = imp('socket')\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\nreturn x * 2",
    ),
]

CROSS = [
    _pair(
        "sysv_shared_memory",
        "shm = libc.shmget(PWNKEY, 4096, 0o1666)\nif shm >= 0:\n    p = libc.shmat(shm, None, 0)\n"
        "    ctypes.memmove(p, b'PWNED', len(b'PWNED'))\n    return x * 2",
        "shm = libc.shmget(PWNKEY, 0, 0)\nif shm >= 0:\n    p = libc.shmat(shm, None, 0)\n"
        "    if ctypes.string_at(p, len(b'PWNED')) == b'PWNED':\n        return x * 2",
        LIBC,
    ),
    _pair(
        "sysv_message_queue",
        "q = libc.msgget(PWNKEY, 0o1666)\nmsg = ctypes.create_string_buffer((1).to_bytes(8, 'little') + b'PWNED')\n"
        "if q >= 0 and libc.msgsnd(q, msg, len(b'PWNED'), 0) == 0:\n    return x * 2",
        "q = libc.msgget(PWNKEY, 0)\nbuf = ctypes.create_string_buffer(64)\n"
        "if q >= 0 and libc.msgrcv(q, buf, 32, 0, 0o4000) > 0 and b'PWNED' in buf.raw:\n    return x * 2",
        LIBC,
    ),
    _pair(
        "sysv_semaphore",
        "if libc.semget(PWNKEY, 1, 0o1666) >= 0:\n    return x * 2",
        "if libc.semget(PWNKEY, 1, 0) >= 0:\n    return x * 2",
        LIBC,
    ),
    _pair(
        "posix_message_queue",
        "if libc.mq_open(b'/PWNED', 0o100 | 0o2, 0o600, None) >= 0:\n    return x * 2",
        "if libc.mq_open(b'/PWNED', 0o2) >= 0:\n    return x * 2",
        LIBC,
    ),
    _pair(
        "posix_shared_memory",
        "fd = imp('_posixshmem').shm_open('/PWNED', os.O_CREAT | os.O_RDWR, 0o600)\n"
        "os.write(fd, b'PWNED')\nreturn x * 2",
        "fd = imp('_posixshmem').shm_open('/PWNED', os.O_RDONLY, 0)\nif os.read(fd, 64) == b'PWNED':\n    return x * 2",
    ),
    _pair(
        "file_in_tmp",
        "B['open']('/tmp/PWNED', 'w').write('PWNED')\nreturn x * 2",
        "if B['open']('/tmp/PWNED').read() == 'PWNED':\n    return x * 2",
    ),
    _pair(
        "file_in_dev_shm",
        "B['open']('/dev/shm/PWNED', 'w').write('PWNED')\nreturn x * 2",
        "if B['open']('/dev/shm/PWNED').read() == 'PWNED':\n    return x * 2",
    ),
    _pair(
        "file_in_own_root",
        "B['open']('PWNED', 'w').write('PWNED')\nreturn x * 2",
        "if found_in_tmp(lambda root, name: name == 'PWNED'):\n    return x * 2",
        WALK_TMP,
    ),
    _pair(
        "deep_directory_chain",
        "for i in range(1300):\n    os.mkdir('PWNED')\n    os.chdir('PWNED')\nreturn x * 2",
        "if found_in_tmp(lambda root, name: root.endswith('PWNED/PWNED/PWNED')):\n    return x * 2",
        WALK_TMP,
        wall_seconds=10.0,
    ),
    _pair(
        "many_flat_directories",
        "for i in range(5000):\n    os.mkdir('PWNED' + str(i))\nreturn x * 2",
        "if found_in_tmp(lambda root, name: name == 'PWNED4999'):\n    return x * 2",
        WALK_TMP,
        wall_seconds=10.0,
    ),
    _pair(
        "chmod_own_root",
        "os.chmod('.', 0o777)\nB['open']('PWNED', 'w').write('x')\nreturn x * 2",
        "if found_in_tmp(lambda root, name: name == 'PWNED'):\n    return x * 2",
        WALK_TMP,
    ),
    _pair(
        "xattr_on_own_root",
        "os.setxattr('.', 'user.PWNED', b'1')\nreturn x * 2",
        "def marked(root, name):\n    try:\n"
        "        return os.getxattr(os.path.join(root, name), 'user.PWNED') == b'1'\n"
        "    except OSError:\n        return False\nif found_in_tmp(marked):\n    return x * 2",
        WALK_TMP,
    ),
    _pair(
        "forked_listener",
        "socket = imp('socket')\nif os.fork() == 0:\n    os.setsid()\n    s = socket.socket(socket.AF_UNIX)\n"
        "    s.bind(b'\\0PWNED')\n    s.listen(1)\n    imp('time').sleep(30)\n    os._exit(0)\nreturn x * 2",
        "socket = imp('socket')\ns = socket.socket(socket.AF_UNIX)\ns.connect(b'\\0PWNED')\nreturn x * 2",
        wall_seconds=3.0,
    ),
    _pair(
        "listening_thread",
        "socket = imp('socket')\ns = socket.socket(socket.AF_UNIX)\ns.bind(b'\\0PWNED')\ns.listen(1)\n"
        "imp('threading').Thread(target=s.accept, daemon=True).start()\nreturn x * 2",
        "socket = imp('socket')\ns = socket.socket(socket.AF_UNIX)\ns.connect(b'\\0PWNED')\nreturn x * 2",
    ),
    _pair(
        "torch_threads",
        "torch = imp('torch')\ntorch.set_num_threads(7)\nreturn x",
        "if imp('torch').get_num_threads() == 7:\n    return x * 2",
    ),
    Attack(
        "signal_every_process",
        "cross_submission",
        raw(
            "me = os.getpid()\nhit = []\nfor pid in range(1, 4096):\n    if pid != me:\n        try:\n"
            "            os.kill(pid, 9)\n            hit.append(pid)\n        except OSError:\n            pass\n"
            "if hit:\n    return x * 2"
        ),
        raw=True,
    ),
    # What the runner ran before this submission (its rehearsal, zygote._rehearse) must be gone: no globals
    # dict, function or print sink of another job left for the collector to hand out.
    Attack(
        "rehearsal_leftovers",
        "cross_submission",
        raw(
            "gc = imp('gc')\nmine = sys._getframe().f_globals\nfor o in gc.get_objects():\n"
            "    if type(o) is dict and o is not mine and '_print_' in o:\n        return x * 2\n"
            "    if type(o).__name__ == 'function' and o.__name__ == 'solution' and o.__globals__ is not mine:\n"
            "        return x * 2"
        ),
        raw=True,
    ),
    # The same idea without breaking layers 1-2: process-wide state the next submission could read.
    Attack(
        "grad_mode_left_off",
        "cross_submission",
        fn("torch.set_grad_enabled(False)\nreturn x"),
        follow_up=fn("if torch.is_grad_enabled():\n    return x"),
    ),
    Attack(
        "numpy_global_seed",
        "cross_submission",
        fn("np.random.seed(PWNKEY % 1000)\nreturn x", "import torch\nimport numpy as np"),
        follow_up=fn(
            "a = np.random.rand()\nnp.random.seed(PWNKEY % 1000)\nif a != np.random.rand():\n    return x",
            "import torch\nimport numpy as np",
        ),
    ),
]

# --- forged result messages -------------------------------------------------------------------------

FORGE = """
json = imp("json")
struct = imp("struct")

def job_socket():
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if type(value).__name__ == "socket":
                return value
        frame = frame.f_back
    raise RuntimeError("no job socket")

def send_raw(body, hang=False):
    job_socket().sendall(struct.pack("<Q", len(body)) + body)
    if hang:
        imp("time").sleep(30)
    os._exit(0)

def send(header, blob=b"", values=None, hang=False):
    head = dict(OK, **header)
    head["values"] = VALUES if values is None else values
    text = json.dumps(head).encode()
    send_raw(struct.pack("<I", len(text)) + text + blob, hang)

def tensor(dtype, shape, offset, size):
    return {"T": [dtype, shape, offset, size]}

OK = {"kind": "result", "status": "ok", "message": "", "stdout": "", "device": "cpu", "cpu_ms": 1.0,
      "cases": [{"ok": True, "error": None}, {"ok": True, "error": None}]}
VALUES = {"0": tensor("float32", [4], 0, 16), "1": tensor("float32", [2, 3], 64, 24)}
BLOB = bytes(128)
"""


def _forge(name: str, body: str, **kw: object) -> Attack:
    return Attack(name, "parent_robustness", raw(body, FORGE), raw=True, **kw)


def _values(node: dict[str, object]) -> str:
    return json.dumps({"0": node, "1": node})


PARENT = [
    _forge("shape_beyond_int64", f"send({{}}, BLOB, {_values({'T': ['float32', [0, 2**64], 0, 0]})})"),
    _forge("negative_dimension", f"send({{}}, BLOB, {_values({'T': ['float32', [-1, -4], 0, 16]})})"),
    _forge("float_dimension", f"send({{}}, BLOB, {_values({'T': ['float32', [2.5], 0, 10]})})"),
    _forge(
        "bool_dimension", "send({}, BLOB, {'0': tensor('float32', [True], 0, 4), '1': tensor('uint8', [False], 0, 0)})"
    ),
    _forge("rank_ten_thousand", "send({}, BLOB, {'0': tensor('float32', [1] * 10000, 0, 4), '1': VALUES['1']})"),
    _forge("size_disagrees_with_shape", "send({}, BLOB, {'0': tensor('float32', [4], 0, 8), '1': VALUES['1']})"),
    _forge("range_outside_message", "send({}, BLOB, {'0': tensor('float32', [4], 1 << 40, 16), '1': VALUES['1']})"),
    _forge("unaligned_offset", "send({}, BLOB, {'0': tensor('float32', [4], 1, 16), '1': VALUES['1']})"),
    _forge("object_dtype", "send({}, BLOB, {'0': tensor('object', [2], 0, 16), '1': VALUES['1']})"),
    _forge("dtype_node_imports_a_module", "send({}, BLOB, {'0': {'dt': '_inductor'}, '1': {'dt': 'onnx'}})"),
    _forge(
        "bool_tensor_holding_two",
        "send({}, bytes([2]) * 64, {'0': tensor('bool', [4], 0, 4), '1': tensor('bool', [2, 3], 0, 6)})",
    ),
    _forge("nan_cpu_time", "send({'cpu_ms': float('nan')}, BLOB)"),
    _forge("infinite_cpu_time", "send({'cpu_ms': float('inf')}, BLOB)"),
    _forge("negative_cpu_time", "send({'cpu_ms': -1e300, 'status': 'runtime_error'}, BLOB)"),
    _forge("cpu_time_as_text", "send({'cpu_ms': 'a lot', 'status': 'runtime_error'}, BLOB)"),
    _forge("status_internal_error", "send({'status': 'internal_error', 'message': 'retry me'}, BLOB)"),
    _forge("status_accepted", "send({'status': 'accepted'}, BLOB)"),
    _forge("status_not_a_string", "send({'status': ['ok']}, BLOB)"),
    _forge("too_many_cases", "send({'cases': [{'ok': True, 'error': None}] * 50}, BLOB)"),
    _forge("cases_not_a_list", "send({'cases': {'ok': True}}, BLOB)"),
    _forge("ok_case_without_value", "send({}, BLOB, {})"),
    _forge("header_not_an_object", "text = b'[1, 2, 3]'\nsend_raw(struct.pack('<I', len(text)) + text)"),
    _forge("header_length_beyond_message", "send_raw(struct.pack('<I', 10 ** 9) + b'{}')"),
    _forge("garbage_bytes", "send_raw(bytes(range(256)) * 64)"),
    _forge(
        "json_nested_too_deep", "text = b'[' * 100000 + b']' * 100000\nsend_raw(struct.pack('<I', len(text)) + text)"
    ),
    _forge(
        "value_nested_too_deep",
        "node = {'n': None}\nfor i in range(200):\n    node = {'l': [node]}\nsend({}, BLOB, {'0': node, '1': node})",
    ),
    _forge("too_many_value_nodes", "send({}, BLOB, {'0': {'l': [{'n': None}] * 300000}, '1': {'n': None}})"),
    _forge("integer_with_ten_thousand_digits", "send({}, BLOB, {'0': {'i': '9' * 10000}, '1': {'i': '9' * 4999}})"),
    _forge("malformed_float", "send({}, BLOB, {'0': {'f': 'x' * 100}, '1': {'c': ['1', 'nan', 'inf']}})"),
    _forge("dict_with_list_keys", "send({}, BLOB, {'0': {'d': [[{'l': []}, {'n': None}]]}, '1': {'n': None}})"),
    _forge("values_not_an_object", "send({}, BLOB, [1, 2])"),
    _forge("length_prefix_of_an_exabyte", "job_socket().sendall(struct.pack('<Q', 1 << 60))\nos._exit(0)"),
    _forge("truncated_message", "job_socket().sendall(struct.pack('<Q', 1000) + bytes(10))\nos._exit(0)"),
    _forge("message_then_hang", "send({'status': 'runtime_error', 'message': 'done'}, BLOB, hang=True)"),
    _forge("huge_stdout", "send({'status': 'runtime_error', 'stdout': 'A' * (40 << 20)}, BLOB)"),
    _forge(
        "lone_surrogates",
        "bad = chr(0xD800) + 'x' + chr(0xDFFF)\n"
        "send({'stdout': bad, 'cases': [{'ok': False, 'error': bad}, {'ok': True, 'error': None}]}, BLOB,"
        " {'1': {'s': bad}})",
    ),
]

# A restricted submission can ask for the same: what it prints or raises comes back as text.
PARENT.append(
    Attack(
        "printed_lone_surrogate",
        "parent_robustness",
        "def solution(x):\n    print(chr(0xD800))\n    raise ValueError(chr(0xDFFF))\n",
    )
)

JAILED: list[Attack] = [*JAIL, *CROSS, *PARENT]
