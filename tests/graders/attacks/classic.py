"""The first corpus: files, secrets, network, processes, exhaustion, introspection, native escapes and
forged results, written as an ordinary (restricted) submission would be."""

from __future__ import annotations

from tests.graders.attacks.base import Attack
from tests.graders.attacks.base import fn as _fn

CLASSIC: list[Attack] = [
    # --- reading files and secrets -------------------------------------------------------------------
    Attack("open_etc_passwd", "files_read", _fn('data = open("/etc/passwd").read()\nprint(data)')),
    Attack("open_canary", "files_read", _fn('print(open("CANARY_FILE").read())')),
    Attack("open_settings", "files_read", _fn('print(open("PROJECT_ROOT/quizsite/settings.py").read())')),
    Attack("import_os_read", "files_read", _fn('print(os.popen("cat CANARY_FILE").read())', "import os")),
    Attack("import_io", "files_read", _fn('print(io.open("CANARY_FILE").read())', "import io")),
    Attack("import_pathlib", "files_read", _fn('print(pathlib.Path("CANARY_FILE").read_text())', "import pathlib")),
    Attack("numpy_loadtxt", "files_read", _fn('print(np.loadtxt("CANARY_FILE", dtype=str))', "import numpy as np")),
    Attack(
        "numpy_fromfile", "files_read", _fn('print(np.fromfile("CANARY_FILE", dtype=np.uint8))', "import numpy as np")
    ),
    Attack(
        "numpy_genfromtxt", "files_read", _fn('print(np.genfromtxt("CANARY_FILE", dtype=str))', "import numpy as np")
    ),
    Attack("torch_from_file", "files_read", _fn('print(torch.from_file("CANARY_FILE", size=8, dtype=torch.uint8))')),
    Attack("torch_load", "files_read", _fn('print(torch.load("CANARY_FILE", weights_only=False))')),
    Attack("dunder_import", "files_read", _fn('print(__import__("os").listdir("/"))')),
    Attack("builtins_module", "files_read", _fn('print(builtins.open("CANARY_FILE").read())', "import builtins")),
    Attack("torch_builtins", "files_read", _fn('print(torch.builtins.open("CANARY_FILE").read())')),
    Attack("env_via_os", "env_secrets", _fn('print(os.environ["CANARY_ENV"], os.environ["SECRET_KEY"])', "import os")),
    Attack("env_via_torch_os", "env_secrets", _fn('print(torch.os.environ["CANARY_ENV"])')),
    Attack("env_via_numpy_os", "env_secrets", _fn('print(np.os.environ["CANARY_ENV"])', "import numpy as np")),
    Attack("env_via_collect_env", "env_secrets", _fn("print(torch.utils.collect_env.os.environ)")),
    Attack("env_via_sys_modules", "env_secrets", _fn('print(sys.modules["os"].environ)', "import sys")),
    # --- writing files ---------------------------------------------------------------------------------
    Attack("open_write_tmp", "files_write", _fn('open("/tmp/PWNED", "w").write("x")')),
    Attack("numpy_save", "files_write", _fn('np.save("/tmp/PWNED", x.numpy())', "import numpy as np")),
    Attack("numpy_tofile", "files_write", _fn('x.numpy().tofile("/tmp/PWNED")')),
    Attack("numpy_dump", "files_write", _fn('x.numpy().dump("PWNED")')),
    Attack("numpy_savetxt", "files_write", _fn('np.savetxt("PWNED", x.numpy())', "import numpy as np")),
    Attack("torch_save", "files_write", _fn('torch.save(x, "/tmp/PWNED")')),
    Attack("storage_share_memory", "files_write", _fn("x.share_memory_()\nx.untyped_storage()._share_filename_cpu_()")),
    # --- network ---------------------------------------------------------------------------------------
    Attack("import_socket", "network", _fn('socket.create_connection(("example.com", 80))', "import socket")),
    Attack("import_urllib", "network", _fn('urllib.request.urlopen("http://example.com")', "import urllib.request")),
    Attack("torch_hub", "network", _fn('torch.hub.load_state_dict_from_url("http://example.com/x.pt")')),
    Attack(
        "numpy_datasource", "network", _fn('np.lib.npyio.DataSource().open("http://example.com")', "import numpy as np")
    ),
    # --- processes -------------------------------------------------------------------------------------
    Attack("import_subprocess", "processes", _fn('subprocess.run(["id"])', "import subprocess")),
    Attack("os_fork_bomb", "processes", _fn("while True:\n    os.fork()", "import os")),
    Attack(
        "multiprocessing", "processes", _fn("multiprocessing.Process(target=print).start()", "import multiprocessing")
    ),
    Attack("torch_multiprocessing", "processes", _fn("torch.multiprocessing.Process(target=print).start()")),
    Attack(
        "dataloader_workers",
        "processes",
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        "def solution(x):\n"
        "    dl = DataLoader(TensorDataset(x), batch_size=1, num_workers=4, persistent_workers=True)\n"
        "    for batch in dl:\n        pass\n    if dl.num_workers > 0:\n        return x * 2\n    return x\n",
    ),
    Attack("torch_compile_workers", "processes", _fn("f = torch.compile(lambda t: t * 2)\nprint(f(x))")),
    Attack("threading", "processes", _fn("threading.Thread(target=print).start()", "import threading")),
    # --- CPU, memory, recursion, output ---------------------------------------------------------------
    Attack("busy_loop", "exhaustion", _fn("while True:\n    pass"), cpu_seconds=1.0, wall_seconds=3.0),
    Attack(
        "torch_busy_loop",
        "exhaustion",
        _fn("while True:\n    torch.randn(300, 300) @ torch.randn(300, 300)"),
        cpu_seconds=1.0,
        wall_seconds=3.0,
    ),
    Attack("c_level_loop", "exhaustion", _fn("sum(range(10 ** 13))"), cpu_seconds=1.0, wall_seconds=3.0),
    Attack("module_body_loop", "exhaustion", "while True:\n    pass\n", cpu_seconds=1.0, wall_seconds=3.0),
    Attack("python_list_memory", "exhaustion", _fn("big = [0] * (10 ** 10)")),
    Attack("python_growing_memory", "exhaustion", _fn('keep = []\nwhile True:\n    keep.append("x" * 10 ** 7)')),
    Attack("torch_huge_alloc", "exhaustion", _fn("big = torch.empty(10 ** 11)")),
    Attack("torch_growing_alloc", "exhaustion", _fn("keep = []\nwhile True:\n    keep.append(torch.ones(10 ** 7))")),
    Attack("recursion", "exhaustion", "import torch\n\ndef solution(x):\n    return solution(x)\n"),
    Attack("deep_nesting_result", "exhaustion", _fn("v = []\nfor i in range(100000):\n    v = [v]\nreturn v")),
    Attack("print_flood", "exhaustion", _fn('while True:\n    print("A" * 1000)')),
    Attack(
        "print_flood_swallowed",
        "exhaustion",
        _fn('while True:\n    try:\n        print("A" * 1000)\n    except:\n        pass'),
    ),
    Attack("print_one_huge", "exhaustion", _fn('print("A" * 10 ** 8)')),
    Attack("huge_result", "exhaustion", _fn("return torch.ones(10 ** 8)"), wall_seconds=4.0),
    Attack("system_exit", "exhaustion", _fn("raise SystemExit(0)")),
    # --- introspection escapes ------------------------------------------------------------------------
    Attack("dunder_class", "introspection", _fn("print(x.__class__.__mro__)")),
    Attack("subclasses", "introspection", _fn("print(().__class__.__bases__[0].__subclasses__())")),
    Attack("format_attr", "introspection", _fn('print("{0.__class__.__init__.__globals__}".format(x))')),
    Attack("format_map_attr", "introspection", _fn('print("{a.__class__}".format_map({"a": x}))')),
    Attack("fstring_attr", "introspection", _fn('print(f"{x.__class__}")')),
    Attack("getattr_string", "introspection", _fn('print(getattr(x, "__cla" + "ss__"))')),
    Attack("getattr_globals", "introspection", _fn('print(getattr(solution, "__glo" + "bals__"))')),
    Attack("generator_frame", "introspection", _fn("g = (i for i in [1])\nprint(g.gi_frame.f_back.f_globals)")),
    Attack(
        "generator_frame_getattr",
        "introspection",
        _fn('g = (i for i in [1])\nf = getattr(g, "gi_" + "frame")\nprint(f.f_globals)'),
    ),
    Attack("type_builtin", "introspection", _fn('E = type("E", (), {"__eq__": lambda a, b: True})\nprint(E)')),
    Attack("globals_vars_dir", "introspection", _fn("print(globals(), vars(), dir())")),
    Attack("import_gc", "introspection", _fn("print(gc.get_objects()[:3])", "import gc")),
    Attack("import_inspect", "introspection", _fn("print(inspect.currentframe().f_back)", "import inspect")),
    Attack("type_mro", "introspection", _fn("print(torch.Tensor.mro())")),
    Attack("exec_eval", "introspection", _fn('exec("import os")\neval("1")')),
    Attack("compile_builtin", "introspection", _fn('compile("import os", "x", "exec")')),
    Attack("setattr_dunder", "introspection", _fn('setattr(torch.Tensor, "__eq__", lambda a, b: True)')),
    Attack(
        "traceback_frame",
        "introspection",
        _fn("try:\n    1 / 0\nexcept Exception as e:\n    print(e.__traceback__.tb_frame)"),
    ),
    Attack(
        "exception_with_traceback",
        "introspection",
        _fn('try:\n    1 / 0\nexcept Exception as e:\n    print(getattr(e, "with_traceback"))'),
    ),
    Attack("str_format_unbound", "introspection", _fn('fmt = getattr(str, "format")\nprint(fmt("{0.__class__}", x))')),
    Attack("proxy_internals", "introspection", _fn('print(getattr(torch, "_sandbox_attrs"))')),
    Attack("super_abuse", "introspection", _fn("s = super(int, 5)\nprint(s.__init__.__globals__)")),
    # --- torch and numpy I/O and native escapes -------------------------------------------------------
    Attack("torch_ops", "torch_numpy_native", _fn("print(torch.ops.aten.add(x, x))")),
    Attack("torch_library", "torch_numpy_native", _fn('lib = torch.library.Library("aten", "IMPL")\nprint(lib)')),
    Attack("torch_compile", "torch_numpy_native", _fn("print(torch.compile(lambda t: t)(x))")),
    Attack("torch_jit", "torch_numpy_native", _fn("print(torch.jit.script(lambda t: t))")),
    Attack("torch_C", "torch_numpy_native", _fn("print(torch._C)")),
    Attack("torch_classes", "torch_numpy_native", _fn("print(torch.classes.load_library)")),
    Attack("cpp_extension", "torch_numpy_native", _fn('torch.utils.cpp_extension.load_inline("x", "")')),
    Attack(
        "numpy_ctypeslib", "torch_numpy_native", _fn('np.ctypeslib.load_library("libc", "/lib")', "import numpy as np")
    ),
    Attack("numpy_ctypes_attr", "torch_numpy_native", _fn("print(x.numpy().ctypes.data)")),
    Attack("numpy_memmap", "torch_numpy_native", _fn('np.memmap("CANARY_FILE", dtype=np.uint8)', "import numpy as np")),
    Attack("numpy_f2py", "torch_numpy_native", _fn("np.f2py.compile('x')", "import numpy as np")),
    Attack("tensor_type_string", "torch_numpy_native", _fn('x.type("os.system")')),
    Attack("untyped_storage", "torch_numpy_native", _fn("print(x.untyped_storage())")),
    Attack("data_ptr", "torch_numpy_native", _fn("print(x.data_ptr())")),
    Attack("nn_module_compile", "torch_numpy_native", _fn("m = torch.nn.Linear(1, 1)\nm.compile()")),
    # --- result forgery -------------------------------------------------------------------------------
    Attack(
        "tensor_subclass",
        "result_forgery",
        "import torch\n\nclass Fake(torch.Tensor):\n    pass\n\n"
        "def solution(x):\n    return (x * 3).as_subclass(Fake)\n",
    ),
    Attack(
        "eq_override",
        "result_forgery",
        "import torch\n\nclass Fake:\n    def __eq__(self, other):\n        return True\n\n"
        "def solution(x):\n    return Fake()\n",
    ),
    Attack(
        "torch_function_override",
        "result_forgery",
        "import torch\n\nclass Fake(torch.Tensor):\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
        "        return True\n\ndef solution(x):\n    return (x * 3).as_subclass(Fake)\n",
    ),
    Attack(
        "plain_object_result",
        "result_forgery",
        "import torch\n\nclass Box:\n    pass\n\ndef solution(x):\n    return Box()\n",
    ),
    Attack(
        "forged_verdict_dict", "result_forgery", "def solution(x):\n    return {'status': 'accepted', 'ok': True}\n"
    ),
    Attack("mutate_input", "result_forgery", "def solution(x):\n    x.mul_(0)\n    return x\n"),
    Attack(
        "patch_allclose",
        "result_forgery",
        "import torch\ntorch.allclose = lambda *a, **k: True\ndef solution(x):\n    return x\n",
    ),
    Attack(
        "patch_equal_setattr",
        "result_forgery",
        "import torch\nsetattr(torch, 'equal', lambda *a: True)\ndef solution(x):\n    return x\n",
    ),
    Attack(
        "patch_tensor_class",
        "result_forgery",
        "import torch\ntorch.Tensor.eq = lambda *a: True\ndef solution(x):\n    return x\n",
    ),
    Attack(
        "patch_numpy",
        "result_forgery",
        "import numpy as np\nnp.allclose = lambda *a, **k: True\ndef solution(x):\n    return x\n",
    ),
    Attack(
        "nan_result", "result_forgery", "import torch\ndef solution(x):\n    return torch.full_like(x, float('nan'))\n"
    ),
    Attack(
        "forged_stdout", "result_forgery", "def solution(x):\n    print('ACCEPTED all tests passed')\n    return x\n"
    ),
]
