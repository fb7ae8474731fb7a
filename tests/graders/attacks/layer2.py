"""Layer 2 bypasses in ordinary, underscore-free code: what a submission reaches by calling, subscripting,
formatting and building arrays, not only by attribute access (the second red team's classes).

Each attack returns ``x * 2`` only once its hostile step has given it a real capability: a class's
namespace, a module's globals, the real ``__import__``, a file read, raw memory or a fake object.
"""

from __future__ import annotations

from tests.graders.attacks.base import Attack, attempt

IMPORTS = "import torch\nimport numpy as np\nfrom torch.optim import lr_scheduler\n"

# hash() of a plain object is its address rotated by four bits: enough to aim raw memory at it.
ADDR = """
class Box:
    pass

def addr(o):
    h = hash(o) % (2 ** 64)
    return ((h << 4) | (h >> 60)) % (2 ** 64)

TARGET = Box()  # kept alive: the raw reads below look at its header (reference count, type pointer)

def interface(o):
    return {"data": (addr(o), False), "shape": (2,), "typestr": "<i8", "version": 3}

def read_object_header(holder):
    words = np.asarray(holder)
    return words[0] > 0 and words[1] != 0
"""

OPT = "opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)\n"
GLOBALS = "g = np.random.default_rng.func_globals\n"


def _l2(name: str, category: str, body: str, prelude: str = "") -> Attack:
    return Attack(name, category, attempt(body, IMPORTS + ADDR + prelude))


CALLS = [
    # LRScheduler.state_dict is vars(self) and load_state_dict is self.__dict__.update(d): unbound, any object
    _l2(
        "scheduler_state_dict_of_str",
        "layer2_calls",
        'ns = lr_scheduler.LRScheduler.state_dict(str)\nif "format" in ns:\n    return x * 2',
    ),
    _l2(
        "plateau_state_dict_of_str",
        "layer2_calls",
        'ns = lr_scheduler.ReduceLROnPlateau.state_dict(str)\nif "maketrans" in ns:\n    return x * 2',
    ),
    _l2(
        "scheduler_state_dict_via_own_subclass",
        "layer2_calls",
        'class S(lr_scheduler.StepLR):\n    pass\nif "format" in S.state_dict(str):\n    return x * 2',
    ),
    _l2(
        "map_scheduler_state_dict",
        "layer2_calls",
        'ns = list(map(lr_scheduler.LRScheduler.state_dict, [str]))[0]\nif "format" in ns:\n    return x * 2',
    ),
    _l2(
        "scheduler_loader_plants_array_interface",
        "layer2_calls",
        "b = Box()\nlr_scheduler.LRScheduler.load_state_dict(b, {'__array_interface__': interface(TARGET)})\n"
        "if read_object_header(b):\n    return x * 2",
    ),
    _l2(
        "own_scheduler_loader_plants_array_interface",
        "layer2_calls",
        OPT + "s = lr_scheduler.StepLR(opt, 1)\ns.load_state_dict({'__array_interface__': interface(TARGET)})\n"
        "if read_object_header(s):\n    return x * 2",
    ),
    _l2(
        "super_loader_plants_array_interface",
        "layer2_calls",
        OPT + "s = Plant(opt, 1)\ns.plant()\nif read_object_header(s):\n    return x * 2",
        prelude="\nclass Plant(lr_scheduler.StepLR):\n    def plant(self):\n"
        "        super().load_state_dict({'__array_interface__': interface(TARGET)})\n",
    ),
    _l2(
        "collate_fn_loader_plants_array_interface",
        "layer2_calls",
        OPT + "s = lr_scheduler.StepLR(opt, 1)\n"
        "pairs = [('__array_interface__', interface(TARGET))]\n"
        "for batch in torch.utils.data.DataLoader([pairs[0]], batch_size=1, collate_fn=s.load_state_dict):\n"
        "    pass\nif read_object_header(s):\n    return x * 2",
    ),
    _l2(
        "chained_loader_plants_nested_state",
        "layer2_calls",
        OPT + "inner = lr_scheduler.StepLR(opt, 1)\nc = lr_scheduler.ChainedScheduler([inner])\n"
        "c.load_state_dict({'_schedulers': [{'__array_interface__': interface(TARGET)}]})\n"
        "if read_object_header(inner):\n    return x * 2",
    ),
    # property.fget of a library property, applied to an object whose private state a loader wrote:
    # getattr with a name taken from data, twice, reaches a module's globals and the real __import__.
    _l2(
        "property_fget_chain_to_import",
        "layer2_calls",
        "fget = torch.nn.RNN.all_weights.fget\nload = lr_scheduler.LRScheduler.load_state_dict\n"
        "b = Box()\nload(b, {'_all_weights': [['__reduce_ex__']]})\nf = fget(b)[0][0](2)[0]\n"
        "load(f, {'_all_weights': [['__globals__']]})\nimp = fget(f)[0][0]['__builtins__']['__import__']\n"
        "if lr_scheduler.LRScheduler.state_dict(imp('os'))['getpid']() > 0:\n    return x * 2",
    ),
]

CONTAINERS = [
    # Cython functions carry their module's globals in a public attribute; lookups in it were unchecked.
    _l2(
        "globals_loader_reads_files",
        "layer2_containers",
        GLOBALS + "try:\n    g['__loader__'].get_data('/')\nexcept Exception as e:\n"
        "    if 'directory' in str(e):\n        return x * 2",
    ),
    _l2(
        "globals_spec_origin_path",
        "layer2_containers",
        GLOBALS + "if g['__spec__'].origin.endswith('.so'):\n    return x * 2",
    ),
    _l2(
        "globals_module_by_key",
        "layer2_containers",
        GLOBALS + "if repr(g['np']).startswith('<module'):\n    return x * 2",
    ),
    _l2(
        "globals_builtins_by_get",
        "layer2_containers",
        GLOBALS + "if repr(g.get('__builtins__')).startswith('<module'):\n    return x * 2",
    ),
    _l2(
        "globals_values_loop",
        "layer2_containers",
        GLOBALS + "for v in g.values():\n    if repr(v).startswith('<module'):\n        return x * 2",
    ),
    _l2(
        "globals_items_unpacked",
        "layer2_containers",
        GLOBALS + "for k, v in g.items():\n    if k == 'operator' and repr(v).startswith('<module'):\n"
        "        return x * 2",
    ),
    _l2(
        "globals_values_listed",
        "layer2_containers",
        GLOBALS + "vals = list(g.values())\nfor i in range(len(vals)):\n"
        "    if repr(vals[i]).startswith('<module'):\n        return x * 2",
    ),
    _l2(
        "globals_max_with_key",
        "layer2_containers",
        GLOBALS + "m = max(g.values(), key=lambda v: repr(v).startswith('<module'))\n"
        "if repr(m).startswith('<module'):\n    return x * 2",
    ),
    _l2(
        "globals_star_unpacked",
        "layer2_containers",
        GLOBALS + "first, *rest = list(g.values())\nif any(repr(v).startswith('<module') for v in rest):\n"
        "    return x * 2",
    ),
    _l2(
        "globals_item_write",
        "layer2_containers",
        GLOBALS + "called = []\nreal = g['PCG64']\ng['PCG64'] = lambda seed=None: called.append(1) or real(0)\n"
        "np.random.default_rng(0)\nif called:\n    return x * 2",
    ),
    _l2(
        "globals_pop_module",
        "layer2_containers",
        GLOBALS + "m = g.pop('warnings')\ng['warnings'] = m\nif repr(m).startswith('<module'):\n    return x * 2",
    ),
    _l2(
        "globals_builtins_namespace",
        "layer2_containers",
        GLOBALS + "ns = lr_scheduler.ReduceLROnPlateau.state_dict(g['__builtins__'])\n"
        "if ns['open'] is not None:\n    return x * 2",
    ),
    _l2(
        "compiled_function_code",
        "layer2_containers",
        "c = np.random.default_rng.func_code\nif c.co_name == 'default_rng':\n    return x * 2",
    ),
]

FORMAT_STRINGS = [
    _l2(
        "namespace_format_walks_attributes",
        "format_strings",
        "fmt = lr_scheduler.LRScheduler.state_dict(str)['format']\n"
        "if 'TensorBase' in fmt('{0.__class__.__mro__}', x):\n    return x * 2",
    ),
    _l2(
        "namespace_format_map_walks_attributes",
        "format_strings",
        "fm = lr_scheduler.LRScheduler.state_dict(str)['format_map']\n"
        "if 'TensorBase' in fm('{a.__class__.__mro__}', {'a': x}):\n    return x * 2",
    ),
    _l2(
        "namespace_format_reaches_globals",
        "format_strings",
        "for k, v in lr_scheduler.LRScheduler.state_dict(str).items():\n    if k == 'format':\n"
        "        if 'open' in v('{0.__globals__[__builtins__]}', torch.nn.functional.relu):\n            return x * 2",
    ),
    _l2(
        "namespace_format_reads_private_state",
        "format_strings",
        "fmt = dict(lr_scheduler.LRScheduler.state_dict(str))['format']\n"
        "if 'weight' in fmt('{0._parameters}', torch.nn.Linear(1, 1)):\n    return x * 2",
    ),
    _l2(
        "namespace_format_via_plateau",
        "format_strings",
        "fmt = lr_scheduler.ReduceLROnPlateau.state_dict(str)['format']\n"
        "if 'function' in fmt('{0.__init__}', Box()) or 'wrapper' in fmt('{0.__init__}', Box()):\n"
        "    return x * 2",
    ),
]

NUMPY_BUFFERS = [
    _l2(
        "object_array_over_buffer_fakes_objects",
        "numpy_buffers",
        "o = Box()\nfake = np.ndarray((1,), dtype=object, buffer=np.array([addr(o)], dtype=np.int64))\n"
        "if fake[0] is o:\n    return x * 2",
    ),
    _l2(
        "structured_object_field_over_buffer",
        "numpy_buffers",
        "o = Box()\ndt = np.dtype([('a', object)])\n"
        "fake = np.ndarray((1,), dtype=dt, buffer=np.array([addr(o)], dtype=np.int64))\n"
        "if fake['a'][0] is o:\n    return x * 2",
    ),
    _l2(
        "object_dtype_string_over_buffer",
        "numpy_buffers",
        "o = Box()\nfake = np.ndarray((1,), 'O', np.array([addr(o)], dtype=np.int64))\n"
        "if fake[0] is o:\n    return x * 2",
    ),
    _l2(
        "memoryview_writes_object_pointers",
        "numpy_buffers",
        "o = Box()\nholder = np.empty(1, dtype=object)\nraw = holder.data.cast('B')\n"
        "raw[0:8] = addr(o).to_bytes(8, 'little')\nif holder[0] is o:\n    return x * 2",
    ),
    _l2(
        "parameter_dict_plants_array_interface",
        "numpy_buffers",
        "pd = torch.nn.ParameterDict()\npd['__array_interface__'] = interface(TARGET)\n"
        "if read_object_header(pd):\n    return x * 2",
    ),
    _l2(
        "torch_asarray_writes_immutable_bytes",
        "numpy_buffers",
        "b = bytes([65]) * 16\nt = torch.asarray(b, dtype=torch.uint8)\nt[0] = 66\nif b[0] == 66:\n    return x * 2",
    ),
    _l2(
        "from_numpy_writes_immutable_bytes",
        "numpy_buffers",
        "b = bytes([65]) * 16\nt = torch.from_numpy(np.ndarray((16,), np.uint8, b))\nt[0] = 66\n"
        "if b[0] == 66:\n    return x * 2",
    ),
    _l2(
        "bit_generator_ctypes_pointers",
        "numpy_buffers",
        "c = np.random.default_rng(0).bit_generator.ctypes\nif c.state_address > 0:\n    return x * 2",
    ),
]

AUGMENTED = [
    # ``a.b |= v`` read a.b with a plain attribute load (no guard) and then mutated it in place.
    _l2(
        "augmented_attribute_writes_globals",
        "layer2_augmented",
        "called = []\ntry:\n"
        "    np.random.default_rng.func_globals |= {'PCG64': lambda seed=None: called.append(1) or 0}\n"
        "except AttributeError as e:\n    if 'not writable' not in str(e):\n        raise\n"
        "try:\n    np.random.default_rng(0)\nexcept Exception:\n    pass\n"
        "if called:\n    return x * 2",
    ),
    _l2(
        "augmented_item_in_globals",
        "layer2_augmented",
        GLOBALS + "g['PCG64'] |= None\ntry:\n    np.random.default_rng(0)\nexcept TypeError as e:\n"
        "    if 'UnionType' in str(e):\n        return x * 2",
    ),
]

LAYER2: list[Attack] = [*CALLS, *CONTAINERS, *FORMAT_STRINGS, *NUMPY_BUFFERS, *AUGMENTED]
