"""The third round's classes, written against the design that answers them (issue 24):

- ``host_resources`` (raw): what one runner could take from the host or share with a runner beside it:
  tasks, CPU beyond its limit, locks on inodes every runner reaches, AIO contexts, write-back, locked
  memory, the host's name, load and process count, real-time scheduling, raised limits, raw and foreign-ABI
  system calls around the seccomp filter;
- ``memory_escape``: raw code that owns its runner's memory and reaches for memory beyond it (other
  processes, the fork server's pages, the parent's secrets), and ordinary code that reaches for the
  object arrays and foreign-buffer views the issue names (layer 2's part, which is a speed bump);
- ``parent_decoding`` (raw): result messages that decode to far more than their bytes, or to text the
  parent could not print as JSON or store in PostgreSQL (lone surrogates in every encoding, NUL, control
  characters).

Each gets through only if it returns ``x * 2`` for every case (``base``).
"""

from __future__ import annotations

import json

from tests.graders.attacks.base import Attack, attempt, raw
from tests.graders.attacks.jailed import FORGE, LIBC

HOST = (
    LIBC
    + """
resource = imp('resource')
fcntl = imp('fcntl')
struct = imp('struct')
time = imp('time')
mmap = imp('mmap')

def refused(call):
    try:
        call()
    except (OSError, ValueError, RuntimeError):
        return True
    return False

def lock_bytes(kind=1):
    return struct.pack('hhqqi', kind, 0, 0, 16, 0)  # struct flock: F_WRLCK, SEEK_SET, start 0, 16 bytes

def shellcode(code):
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    KEEP.append(buf)
    return ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))

KEEP = []
DONE = []  # work done once per job, not once per case
"""
)


def _host(name: str, body: str, **kw: object) -> Attack:
    return Attack(name, "host_resources", raw(body, HOST), raw=True, **kw)


THREADS = """
threading = imp('threading')
threading.stack_size(1 << 16)  # small stacks: the address-space limit does not stop them first
started = 0
try:
    for _ in range({count}):
        threading.Thread(target=time.sleep, args=(1.0,), daemon=True).start()
        started += 1
except RuntimeError:
    pass
if started > 64:  # a GPU runner may start 32 (jail.RUNNER_EXTRA_TASKS), a CPU runner none
    return x * 2
"""

HOST_ATTACKS = [
    # --- tasks: a runner's threads count against its own uid's RLIMIT_NPROC, nobody else's
    _host("three_thousand_threads", THREADS.format(count=3000)),
    _host(
        "threads_after_raising_nproc",
        "refused(lambda: resource.setrlimit(resource.RLIMIT_NPROC, (4096, 4096)))\n" + THREADS.format(count=100),
    ),
    _host(
        "raise_nproc_limit",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_NPROC, (4096, 4096))):\n    return x * 2",
    ),
    _host("raise_nproc_soft_only", "if resource.getrlimit(resource.RLIMIT_NPROC)[1] > 64:\n    return x * 2"),
    _host("raw_fork_syscall", "pid = libc.syscall(57)\nif pid == 0:\n    os._exit(0)\nif pid > 0:\n    return x * 2"),
    _host("raw_vfork_syscall", "pid = libc.syscall(58)\nif pid == 0:\n    os._exit(0)\nif pid > 0:\n    return x * 2"),
    _host(
        "raw_clone3_syscall",
        "args = (ctypes.c_uint64 * 11)(0, 0, 0, 0, 17)\npid = libc.syscall(435, args, 88)\n"
        "if pid == 0:\n    os._exit(0)\nif pid > 0:\n    return x * 2",
    ),
    # --- CPU: the limit is what it says (RLIMIT_CPU alone rounded 1 s up to 2 s and 0.4 s up to 1 s, counted
    # from the runner's start)
    _host(
        "cpu_beyond_a_one_second_limit",
        "if not DONE:\n    t = time.process_time()\n    while time.process_time() - t < 1.25:\n        pass\n"
        "    DONE.append(1)\nreturn x * 2",
        cpu_seconds=1.0,
    ),
    _host(
        "cpu_beyond_a_fractional_limit",
        "if not DONE:\n    t = time.process_time()\n    while time.process_time() - t < 0.55:\n        pass\n"
        "    DONE.append(1)\nreturn x * 2",
        cpu_seconds=0.4,
    ),
    _host(
        "raise_cpu_hard_limit",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_CPU, (-1, -1))):\n    return x * 2",
    ),
    _host(
        "raise_address_space",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1))):\n    return x * 2",
    ),
    _host(
        "raise_open_files",
        "if not refused(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (65536, 65536))):\n    return x * 2",
    ),
    # --- locks on inodes two runners could both reach (byte-range locks on /dev/null carried 16 bytes)
    _host(
        "stdio_is_the_hosts_dev_null",
        "st = os.fstat(0)\nif imp('stat').S_ISCHR(st.st_mode) and "
        "(os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3):\n    return x * 2",
    ),
    _host(
        "posix_lock_on_stdin",
        "if not refused(lambda: fcntl.lockf(0, fcntl.LOCK_EX | fcntl.LOCK_NB, 16, 0)):\n    return x * 2",
    ),
    _host(
        "posix_lock_on_stdout", "if not refused(lambda: fcntl.fcntl(1, fcntl.F_SETLK, lock_bytes())):\n    return x * 2"
    ),
    _host(
        "posix_lock_wait_on_stderr",
        "if not refused(lambda: fcntl.fcntl(2, fcntl.F_SETLKW, lock_bytes())):\n    return x * 2",
    ),
    _host("posix_lock_query", "if not refused(lambda: fcntl.fcntl(0, fcntl.F_GETLK, lock_bytes())):\n    return x * 2"),
    _host("ofd_lock_on_stdin", "if not refused(lambda: fcntl.fcntl(0, 37, lock_bytes())):\n    return x * 2"),
    _host("ofd_lock_query", "if not refused(lambda: fcntl.fcntl(0, 36, lock_bytes())):\n    return x * 2"),
    _host("flock_on_stdin", "if not refused(lambda: fcntl.flock(0, fcntl.LOCK_EX | fcntl.LOCK_NB)):\n    return x * 2"),
    _host(
        "flock_on_the_job_socket",
        "fds = [fd for fd in range(3, 32) if not refused(lambda: os.fstat(fd))]\n"
        "if fds and not refused(lambda: fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB)):\n    return x * 2",
    ),
    _host("lease_on_stdin", "if not refused(lambda: fcntl.fcntl(0, 1024, fcntl.F_RDLCK)):\n    return x * 2"),
    _host(
        "directory_notify",
        "fd = os.open('/', os.O_RDONLY)\n"
        "if not refused(lambda: fcntl.fcntl(fd, 1026, 0x80000000 | 0x4)):\n    return x * 2",
    ),
    _host("inotify_instance", "if libc.inotify_init1(0) >= 0:\n    return x * 2"),
    _host(
        "inotify_exhaust_the_users_budget",
        "made = [libc.inotify_init1(0) for _ in range(40)]\nif sum(fd >= 0 for fd in made) > 0:\n    return x * 2",
    ),
    # --- host-wide I/O and memory
    _host(
        "aio_context", "ctx = ctypes.c_ulong(0)\nif libc.syscall(206, 4096, ctypes.byref(ctx)) == 0:\n    return x * 2"
    ),
    _host(
        "aio_contexts_until_the_host_runs_out",
        "made = 0\nfor _ in range(64):\n    ctx = ctypes.c_ulong(0)\n"
        "    if libc.syscall(206, 65536, ctypes.byref(ctx)) == 0:\n        made += 1\nif made:\n    return x * 2",
    ),
    _host(
        "io_uring_instance",
        "params = ctypes.create_string_buffer(120)\nif libc.syscall(425, 8, params) >= 0:\n    return x * 2",
    ),
    _host("sync_everything", "if libc.syscall(162) == 0:\n    return x * 2"),
    _host("syncfs_of_stdin", "if libc.syncfs(0) == 0:\n    return x * 2"),
    _host(
        "lock_memory",
        "buf = ctypes.create_string_buffer(4 << 20)\nif libc.mlock(buf, 4 << 20) == 0:\n    return x * 2",
    ),
    _host("lock_all_memory", "if libc.mlockall(3) == 0:\n    return x * 2"),
    _host("secret_memory", "if libc.syscall(447, 0) >= 0:\n    return x * 2"),
    _host(
        "realtime_scheduling",
        "if not refused(lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))):\n    return x * 2",
    ),
    _host("raise_own_priority", "if not refused(lambda: os.setpriority(os.PRIO_PROCESS, 0, -10)):\n    return x * 2"),
    # --- the host's identity and state
    _host("host_name_from_uname", "if os.uname().nodename == 'HOST_NAME':\n    return x * 2"),
    _host(
        "host_process_count_from_sysinfo",
        "buf = ctypes.create_string_buffer(128)\nif libc.sysinfo(buf) == 0:\n    return x * 2",
    ),
    _host("host_load_from_proc", "if B['open']('/proc/loadavg').read():\n    return x * 2"),
    _host("host_cpus_from_sys", "if B['open']('/sys/devices/system/cpu/online').read():\n    return x * 2"),
    _host("rename_the_host", "name = b'PWNED'\nif libc.sethostname(name, len(name)) == 0:\n    return x * 2"),
    _host("rename_the_domain", "name = b'PWNED'\nif libc.setdomainname(name, len(name)) == 0:\n    return x * 2"),
    Attack(
        "host_name_as_a_channel",
        "host_resources",
        raw("name = b'PWNED'\nlibc.sethostname(name, len(name))\nreturn x", HOST),
        raw=True,
        follow_up=raw("if os.uname().nodename == 'PWNED':\n    return x * 2", HOST),
    ),
    _host("signal_minus_one", "if not refused(lambda: os.kill(-1, 0)):\n    return x * 2"),
    # --- around the seccomp filter: other ABIs on x86-64 (the filter must not allow them by default)
    _host("x32_abi_socket", "if libc.syscall(0x40000000 | 41, 2, 1, 0) >= 0:\n    return x * 2"),
    _host("x32_abi_sync", "if libc.syscall(0x40000000 | 162) == 0:\n    return x * 2"),
    _host(
        "i386_int80_sync",
        "f = shellcode(bytes([0xB8, 36, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 36 (sync); int 0x80; ret\n"
        "if f() == 0:\n    return x * 2",
    ),
    _host(
        "syscall_instruction_sysinfo",
        "buf = ctypes.create_string_buffer(128)\n"
        "code = bytes([0xB8, 99, 0, 0, 0, 0x48, 0xBF]) + ctypes.addressof(buf).to_bytes(8, 'little')\n"
        "f = shellcode(code + bytes([0x0F, 0x05, 0xC3]))  # mov eax, 99; mov rdi, buf; syscall; ret\n"
        "if f() == 0:\n    return x * 2",
    ),
]

MEMORY_RAW = (
    LIBC
    + """
def readable(pid, address):
    local = ctypes.create_string_buffer(8)
    iov_local = (ctypes.c_void_p * 2)(ctypes.addressof(local), 8)
    iov_remote = (ctypes.c_void_p * 2)(address, 8)
    return libc.process_vm_readv(pid, iov_local, 1, iov_remote, 1, 0) == 8

def others():
    return [pid for pid in range(1, 200) if pid != os.getpid()]
"""
)


def _memory(name: str, body: str, **kw: object) -> Attack:
    return Attack(name, "memory_escape", raw(body, MEMORY_RAW), raw=True, **kw)


def _memory_pair(name: str, first: str, then: str) -> Attack:
    return Attack(name, "memory_escape", raw(first, MEMORY_RAW), raw=True, follow_up=raw(then, MEMORY_RAW))


SCAN = """
# Probe memory without faulting: write(2) to a pipe answers EFAULT for an unmapped page.
r, w = os.pipe()
os.set_blocking(r, False)
needle = b'CANARY-'.lower()  # built at run time: the source holds no copy of it
start = id(x) & ~0xFFFFF
found = False
for page in range(start - (96 << 20), start + (96 << 20), 4096):
    if libc.write(w, ctypes.c_void_p(page), 4096) == 4096:
        data = os.read(r, 4096)
        at = data.find(needle)
        if at >= 0 and not (id(needle) <= page + at < id(needle) + 64):
            found = True
            break
if found:
    return x * 2
"""

MEMORY_ATTACKS = [
    _memory("read_another_process_memory", "if any(readable(pid, 0x400000) for pid in others()):\n    return x * 2"),
    _memory(
        "write_another_process_memory",
        "buf = ctypes.create_string_buffer(8)\n"
        "iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)\n"
        "if any(libc.process_vm_writev(pid, iov, 1, iov, 1, 0) == 8 for pid in others()):\n    return x * 2",
    ),
    _memory("ptrace_any_process", "if any(libc.ptrace(16, pid, 0, 0) == 0 for pid in others()):\n    return x * 2"),
    _memory(
        "ptrace_seize_any_process", "if any(libc.ptrace(0x4206, pid, 0, 0) == 0 for pid in others()):\n    return x * 2"
    ),
    _memory("proc_mem_of_the_fork_server", "if B['open']('/proc/1/mem', 'rb'):\n    return x * 2"),
    _memory("proc_self_mem_writable", "f = B['open']('/proc/self/mem', 'r+b')\nreturn x * 2"),
    _memory("dev_mem", "if B['open']('/dev/mem', 'rb').read(16) is not None:\n    return x * 2"),
    _memory("proc_kcore", "if B['open']('/proc/kcore', 'rb').read(16):\n    return x * 2"),
    _memory(
        "pidfd_of_another_process", "if any(libc.syscall(434, pid, 0) >= 0 for pid in others()):\n    return x * 2"
    ),
    _memory("userfaultfd", "if libc.syscall(323, 0) >= 0:\n    return x * 2"),
    _memory("memfd_shared_with_no_one", "if libc.memfd_create(b'PWNED', 0) >= 0:\n    return x * 2"),
    _memory("scan_own_memory_for_the_parents_canary", SCAN),
    # The fork server's pages are shared copy-on-write: a write lands in the writer's copy only.
    _memory_pair(
        "mark_a_shared_heap_object",
        "s = imp('torch').__version__\nctypes.memmove(id(s) + sys.getsizeof(s) - len(s) - 1, b'P', 1)\nreturn x",
        "if imp('torch').__version__.startswith('P'):\n    return x * 2",
    ),
    _memory_pair(
        "mark_a_library_global",
        "ctypes.c_int.in_dll(libc, 'optind').value = 4242\nreturn x",
        "if ctypes.c_int.in_dll(libc, 'optind').value == 4242:\n    return x * 2",
    ),
    _memory_pair(
        "mark_library_code",
        "f = ctypes.cast(libc.getpid, ctypes.c_void_p).value\npage = f & ~4095\n"
        "libc.mprotect(ctypes.c_void_p(page), 4096, 7)\nctypes.memmove(f + 4095 - (f & 4095), b'\\x90', 1)\nreturn x",
        "f = ctypes.cast(libc.getpid, ctypes.c_void_p).value\n"
        "if ctypes.string_at(f + 4095 - (f & 4095), 1) == b'\\x90':\n    return x * 2",
    ),
    _memory_pair(
        "mark_the_module_table",
        "sys.modules['PWNED'] = sys\nreturn x",
        "if 'PWNED' in sys.modules:\n    return x * 2",
    ),
]

# Ordinary (restricted) code after the object arrays and foreign-buffer views of the issue: an operator
# with a Python int too big for int64 makes an object array that no call returned (operators are not
# checked), and an int64 view over its buffer reads and writes the pointers it holds, the first step to a
# fake ndarray and the real ``eval``. Layer 2 refuses views over object arrays wherever they are made; it is
# still a speed bump, and the jail holds behind it (``jail_unrestricted`` and raw ``memory_escape``).
OBJECTS = """
def leaks_pointers(words):
    return int(words[0]) > 4096 and int(words[0]) != 2
"""


def _objects(name: str, body: str) -> Attack:
    body = body.replace("object_array()", "(np.array([1, 2]) + [1, 2 ** 70])")  # inline: a call's result is checked
    return Attack(name, "memory_escape", attempt(body, "import torch\nimport numpy as np\n" + OBJECTS))


OBJECT_ATTACKS = [
    _objects(
        "int_view_over_an_operators_object_array",
        "w = np.ndarray((2,), np.int64, buffer=object_array())\nif leaks_pointers(w):\n    return x * 2",
    ),
    _objects(
        "int_view_at_an_offset",
        "w = np.ndarray((1,), np.int64, buffer=object_array(), offset=8)\nif int(w[0]) > 4096:\n    return x * 2",
    ),
    _objects(
        "int_view_over_an_or_result",
        "r = np.array([1, 2]) | [1, 2 ** 70]\nw = np.ndarray((2,), np.int64, buffer=r)\n"
        "if leaks_pointers(w):\n    return x * 2",
    ),
    _objects("view_method", "w = object_array().view(np.int64)\nif leaks_pointers(w):\n    return x * 2"),
    _objects(
        "byte_view_then_int_view",
        "b = np.ndarray((16,), np.uint8, buffer=object_array())\nw = np.ndarray((2,), np.int64, buffer=b)\n"
        "if leaks_pointers(w):\n    return x * 2",
    ),
    _objects(
        "transposed_then_viewed",
        "w = np.ndarray((2,), np.int64, buffer=object_array().T)\nif leaks_pointers(w):\n    return x * 2",
    ),
    _objects(
        "object_array_from_a_collate_fn",
        "loader = torch.utils.data.DataLoader([[1, 2 ** 70]], batch_size=1, collate_fn=np.asarray)\n"
        "for batch in loader:\n    w = np.ndarray((2,), np.int64, buffer=batch)\n    if leaks_pointers(w):\n"
        "        return x * 2",
    ),
    _objects(
        "pointers_copied_out_by_extend",
        "out = []\nout.extend(object_array())\nw = np.ndarray((2,), np.int64, buffer=np.array(out[:1]))\n"
        "if leaks_pointers(w):\n    return x * 2",
    ),
    _objects(
        "frombuffer_over_bytes",
        "words = np.frombuffer(b'PWNED' * 8, dtype=np.int64)\nwords[0] = 1\nreturn x * 2",
    ),
]


def _decode(name: str, body: str, **kw: object) -> Attack:
    return Attack(name, "parent_decoding", raw(body, FORGE), raw=True, **kw)


def _values(node: dict[str, object]) -> str:
    return json.dumps({"0": node, "1": node})


ALIAS = "{'l': [tensor('float32', [16], 0, 64)] * 50000}"
SEND_HEAD = "send_raw(struct.pack('<I', len(text)) + text)"

DECODING_ATTACKS = [
    # --- what a message decodes to, not only its bytes
    _decode("header_of_empty_lists", "text = b'[' + b'[],' * (22 << 20) + b'[]]'\n" + SEND_HEAD),
    _decode(
        "empty_lists_under_the_byte_limit",
        'text = b\'{"kind": "result", "status": "ok", "x": [\' + b\'[],\' * (5 << 20) + b\'[]]}\'\n' + SEND_HEAD,
    ),
    _decode(
        "empty_objects_under_the_byte_limit",
        'text = b\'{"kind": "result", "status": "ok", "x": [\' + b\'{},\' * (5 << 20) + b\'{}]}\'\n' + SEND_HEAD,
    ),
    _decode(
        "millions_of_numbers",
        'text = b\'{"kind": "result", "status": "ok", "x": [\' + b\'1,\' * (7 << 20) + b\'1]}\'\n' + SEND_HEAD,
    ),
    _decode(
        "millions_of_short_strings",
        'text = b\'{"kind": "result", "status": "ok", "x": [\' + b\'"",\' * (5 << 20) + b\'""]}\'\n' + SEND_HEAD,
    ),
    _decode("header_of_spaces", "text = b'{' + b' ' * (40 << 20) + b'}'\n" + SEND_HEAD),
    _decode("one_range_named_fifty_thousand_times", f"send({{}}, bytes(64), {{'0': {ALIAS}, '1': {ALIAS}}})"),
    _decode(
        "overlapping_ranges",
        "send({}, bytes(128), {'0': tensor('float32', [32], 0, 128), '1': tensor('float32', [16], 64, 64)})",
    ),
    _decode("stdout_as_a_list", "send({'status': 'runtime_error', 'stdout': [0] * 500000, 'message': {'a': [1]}})"),
    _decode("cases_that_are_all_objects", "send({'cases': [{}] * 700000}, BLOB)"),
    _decode(
        "integers_at_the_digit_limit", "send({}, BLOB, {'0': {'l': [{'i': '9' * 4000}] * 3000}, '1': VALUES['1']})"
    ),
    _decode("infinite_and_nan_floats", "send({}, BLOB, {'0': {'f': '1e999'}, '1': {'c': ['nan', '-1e999']}})"),
    # --- text the parent must be able to print as JSON and store in PostgreSQL
    _decode(
        "surrogates_as_raw_bytes",
        "head = json.dumps(dict(OK, status='runtime_error', message='M', stdout='S', values={})).encode()\n"
        "text = head.replace(b'\"M\"', b'\"\\xed\\xa0\\x80\"').replace(b'\"S\"', b'\"\\xed\\xbf\\xbf\"')\n" + SEND_HEAD,
    ),
    _decode(
        "surrogates_behind_a_utf16_header",
        "text = json.dumps(dict(OK, status='runtime_error', message='\\ud800', stdout='a\\udfff', values={}),"
        " ensure_ascii=False).encode('utf-16', 'surrogatepass')\n" + SEND_HEAD,
    ),
    _decode(
        "surrogates_in_big_endian_utf16",
        "text = json.dumps(dict(OK, status='runtime_error', message='\\udbff', values={}), ensure_ascii=False)"
        ".encode('utf-16-be', 'surrogatepass')\n" + SEND_HEAD,
    ),
    _decode(
        "surrogates_behind_a_utf32_header",
        "text = json.dumps(dict(OK, status='runtime_error', message='\\ud800', values={}), ensure_ascii=False)"
        ".encode('utf-32', 'surrogatepass')\n" + SEND_HEAD,
    ),
    _decode(
        "surrogates_as_raw_bytes_in_a_value",
        "head = json.dumps(dict(OK, values={'0': {'s': 'V'}, '1': {'d': [[{'s': 'K'}, {'n': None}]]}})).encode()\n"
        "text = head.replace(b'\"V\"', b'\"\\xed\\xa0\\x80\"').replace(b'\"K\"', b'\"\\xed\\xb0\\x80\"')\n" + SEND_HEAD,
    ),
    _decode(
        "surrogates_as_raw_bytes_in_a_case_error",
        "head = json.dumps(dict(OK, cases=[{'ok': False, 'error': 'E'}, {'ok': True, 'error': None}])).encode()\n"
        "text = head.replace(b'\"E\"', b'\"\\xed\\xa0\\x80x\"')\n" + SEND_HEAD,
    ),
    _decode("nul_in_the_message", "send({'status': 'runtime_error', 'message': 'a\\x00b'}, BLOB)"),
    _decode("nul_in_printed_output", "send({'status': 'runtime_error', 'stdout': '\\x00' * 100}, BLOB)"),
    _decode(
        "nul_in_a_case_error", "send({'cases': [{'ok': False, 'error': 'E\\x00'}, {'ok': True, 'error': None}]}, BLOB)"
    ),
    _decode("nul_in_a_returned_string", "send({}, BLOB, {'0': {'s': '\\x00'}, '1': {'l': [{'s': 'a\\x00'}]}})"),
    _decode("nul_in_a_returned_key", "send({}, BLOB, {'0': {'d': [[{'s': '\\x00'}, {'n': None}]]}, '1': VALUES['1']})"),
    _decode(
        "terminal_escapes_in_the_message",
        "send({'status': 'runtime_error', 'message': '\\x1b[2J\\x1b]0;x\\x07'}, BLOB)",
    ),
    _decode(  # pure ASCII on the wire: only decoding the short escapes makes them controls
        "controls_only_as_short_escapes",
        "send({'status': 'runtime_error', 'message': 'a\\r\\b\\fz', 'stdout': '\\r' * 50}, BLOB,"
        " {'0': {'d': [[{'s': '\\b'}, {'s': '\\f'}]]}, '1': VALUES['1']})",
    ),
    _decode("c1_controls_in_printed_output", "send({'status': 'runtime_error', 'stdout': '\\x85\\x9b31m\\x7f'}, BLOB)"),
    _decode("invalid_utf8_header", 'text = b\'{"kind": "result", "message": "\\xff\\xfe"}\'\n' + SEND_HEAD),
    _decode(
        "utf8_bom_header", "text = b'\\xef\\xbb\\xbf' + json.dumps(dict(OK, values=VALUES)).encode()\n" + SEND_HEAD
    ),
]
DECODING_ATTACKS.append(
    Attack(
        "printed_nul_and_controls",
        "parent_decoding",
        "def solution(x):\n    print('a' + chr(0) + chr(27) + '[2J' + chr(0xD800))\n"
        "    raise ValueError(chr(0) + chr(0xDFFF))\n",
    )
)

ROUND3: list[Attack] = [*HOST_ATTACKS, *MEMORY_ATTACKS, *OBJECT_ATTACKS, *DECODING_ATTACKS]
