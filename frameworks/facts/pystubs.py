"""Stand-in modules for running upstream argument parsers, config classes and validators without a GPU
stack: the one set of torch stand-ins every Rival Python tool uses (standard library only).

install() puts a sys.meta_path finder first that serves every module under the STUBBED roots (torch,
transformer_engine, ...) as a permissive stand-in. A stand-in module's attributes are stand-in
classes that keep their dotted name (torch.dtype stays "torch.dtype", so a fact extractor can tell
what an annotation named); a stand-in class or instance can be called (or used as a decorator),
subclassed, indexed, iterated (empty), compared, used as a context manager and converted to 0.
Code that only builds argument parsers, checks argument values and builds config dataclasses runs
unchanged on top of them. The few torch facts such code computes with are real values: dtypes,
the device's compute capability (RIVAL_DEVICE_CAPABILITY "major.minor", default 9.0: H100; MI300X
reports 9.4 through ROCm's CUDA interface), no CUDA device, and the distributed world size
(WORLD_SIZE, default 1).

Used by extract_megatron.py, extract_primus.py and preflight.py here, by frameworks/testdata/readback,
by frameworks/nemo/bridgecheck (Megatron-Bridge's config classes and rival_nemo.py --check) and by
gptorder's Megatron sample-order test.
"""

import abc
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
import typing

# The roots served as stand-ins; a dotted entry (megatron.energon, numpy.dtypes) stubs that
# subpackage only. NumPy itself is real: Bridge's checks compute with it.
STUBBED = (
    "torch", "transformer_engine", "transformer_engine_torch", "apex", "flash_attn", "triton",
    "tyro", "torchdata", "torchvision", "torchaudio", "einops", "tensorstore", "zarr",
    "nvidia_resiliency_ext", "modelopt", "tensorrt_llm", "mamba_ssm", "causal_conv1d", "nvtx", "wandb",
    "tensorboard", "mlflow", "primus_turbo", "aiter", "multistorageclient", "onelogger", "one_logger",
    "nv_one_logger", "grouped_gemm", "emerging_optimizers", "flashattn_hopper", "flash_attn_3", "deep_ep",
    "flashinfer", "hip", "amdsmi", "pynvml", "loguru", "datasets", "transformers", "huggingface_hub",
    "safetensors", "accelerate", "sentencepiece", "tiktoken", "peft", "timm", "open_clip", "qwen_vl_utils",
    "PIL", "omegaconf", "hydra", "pydantic", "cupy", "numpy.dtypes", "scipy", "sklearn", "regex", "filelock",
    "psutil", "cuda", "onnx", "nemo_run", "lightning", "pytorch_lightning", "tqdm", "rich",
    "yaml_include", "wrapt", "fsspec", "hf_xet", "megatron.energon",
)

# Versions the stand-ins report, so version gates take the pinned images' branches; every other
# stand-in reports DEFAULT_VERSION.
VERSIONS = {"torch": "2.10.0", "transformer_engine": "2.12.0", "triton": "3.5.0",
            # Megatron Core 0.18 asserts 0.6 or later once the package imports.
            "nvidia_resiliency_ext": "0.6.0"}
DEFAULT_VERSION = "0.0.0"

# Calls of the stand-ins whose dotted name is in RECORD are kept in CALLS (name -> [(args, kwargs)]).
RECORD = set()
CALLS = {}


# What Protocol's metaclass asks every class it makes; a stand-in class is no protocol.
_PROTOCOL_FLAGS = ("_is_protocol", "_is_runtime_protocol")


def _dunder(name):
    return name.startswith("__") and name.endswith("__")


class _Meta(type(typing.Protocol)):
    """The type of stand-in classes: what a class such as torch.nn.Module can be asked. It derives
    from Protocol's metaclass (an ABCMeta), so a class may take a stand-in and a typing.Protocol
    as bases (Megatron Core's norms: torch.nn.Module and LayerNormInterface)."""

    def __getattr__(cls, name):
        if _dunder(name) or name in _PROTOCOL_FLAGS:
            raise AttributeError(name)
        return _named(cls.__stub_name__ + "." + name)

    def __getitem__(cls, item):
        return cls

    def register(cls, *a, **k):
        """ABCMeta's register for a virtual subclass; any other call (transformers'
        AutoConfig.register(name, config, exist_ok=True), as Bridge 0.5 makes it) is a stand-in's."""
        if len(a) == 1 and not k and isinstance(a[0], type):
            return super().register(a[0])
        return None

    def __call__(cls, *a, **k):
        name = cls.__dict__.get("__stub_name__")
        if name is not None and name in RECORD:
            CALLS.setdefault(name, []).append((a, k))
        if len(a) == 1 and not k and callable(a[0]) and isinstance(a[0], (types.FunctionType, type)):
            return a[0]  # used as a decorator
        return super().__call__(*a, **k)

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return False

    def __contains__(cls, item):
        return False

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __int__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __index__(cls):
        return 0

    def __hash__(cls):
        return id(cls)

    def __repr__(cls):
        return cls.__stub_name__

    def __instancecheck__(cls, obj):
        return abc.ABCMeta.__instancecheck__(cls, obj)


class Stub(metaclass=_Meta):
    """Every stand-in class derives from Stub; its instances are as permissive as the class."""

    __stub_name__ = "stub"

    def __init__(self, *a, **k):
        pass

    def __init_subclass__(cls, **kwargs):
        pass

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return _named(type(self).__stub_name__ + "()." + name)

    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]) and isinstance(a[0], (types.FunctionType, type)):
            return a[0]  # used as a decorator
        return Stub()

    def __getitem__(self, key):
        return Stub()

    def __contains__(self, key):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __or__(self, other):
        return Stub()

    __ror__ = __or__

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __index__(self):
        return 0

    # Ordered like 0 against anything (a log-level check such as loguru's level(a) >= level(b)).
    def __lt__(self, other):
        return False

    __gt__ = __lt__

    def __le__(self, other):
        return True

    __ge__ = __le__

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return "<stub " + type(self).__stub_name__ + ">"


_cache = {}


def _named(name):
    """The stand-in class called name, one per name."""
    if name not in _cache:
        _cache[name] = _Meta(name.rsplit(".", 1)[-1], (Stub,), {"__stub_name__": name, "__module__": name.rsplit(".", 1)[0]})
    return _cache[name]


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        full = self.__name__ + "." + name
        if full in sys.modules:
            return sys.modules[full]
        return _named(full)


def _stubbed(fullname):
    return any(fullname == r or fullname.startswith(r + ".") for r in STUBBED)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _Module(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__version__ = VERSIONS.get(module.__name__.split(".")[0], DEFAULT_VERSION)
        _fill(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if _stubbed(fullname):
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


class _DType:
    """torch.dtype's values: a real type, so isinstance checks work, with named instances."""

    def __init__(self, name, bits, floating):
        self.name, self.itemsize, self.is_floating_point = name, bits // 8, floating

    def __repr__(self):
        return "torch." + self.name


DTYPES = {n: _DType(n, b, fl) for n, b, fl in (
    ("float32", 32, True), ("float16", 16, True), ("bfloat16", 16, True), ("float64", 64, True),
    ("float8_e4m3fn", 8, True), ("float8_e5m2", 8, True), ("int64", 64, False), ("int32", 32, False),
    ("int8", 8, False), ("uint8", 8, False), ("bool", 8, False))}


def _capability():
    major, _, minor = os.environ.get("RIVAL_DEVICE_CAPABILITY", "9.0").partition(".")
    return int(major), int(minor or 0)


def _fill(module):
    """Real values for the few torch facts config code computes with."""
    n = module.__name__
    if n == "torch":
        for k, v in DTYPES.items():
            setattr(module, k, v)
        module.float, module.half, module.double, module.long, module.int = (
            DTYPES["float32"], DTYPES["float16"], DTYPES["float64"], DTYPES["int64"], DTYPES["int32"])
        module.dtype = _named("torch.dtype")
        module.dtype.register(_DType)  # isinstance(torch.bfloat16, torch.dtype)
        module.Tensor = _named("torch.Tensor")
        module.device = _named("torch.device")
        module.Size = tuple
        # torch's own __init__ imports these, so torch.cuda works without "import torch.cuda".
        for sub in ("cuda", "distributed"):
            setattr(module, sub, importlib.import_module("torch." + sub))
    elif n == "torch.cuda":
        cap = _capability()
        props = types.SimpleNamespace(major=cap[0], minor=cap[1], name="stand-in", total_memory=80 << 30,
                                      multi_processor_count=132)
        module.is_available = lambda: False
        module.device_count = lambda: 0
        module.current_device = lambda: 0
        module.get_device_capability = lambda *a, **k: cap
        module.get_device_properties = lambda *a, **k: props
    elif n == "torch.distributed":
        module.is_initialized = lambda: False
        module.is_available = lambda: True
        module.get_rank = lambda *a, **k: 0
        module.get_group_rank = lambda *a, **k: 0
        module.get_world_size = lambda *a, **k: int(os.environ.get("WORLD_SIZE", "1"))


def module(name):
    """A stand-in module called name, for code that puts one in sys.modules itself (one submodule
    of a real package, such as torch.utils.tensorboard)."""
    m = _Module(name)
    m.__path__ = []
    m.__version__ = VERSIONS.get(name.split(".")[0], DEFAULT_VERSION)
    _fill(m)
    return m


_finder = None


def install():
    """Serve the STUBBED roots from now on, dropping any real copy already imported (call it before
    anything imports them; a second call changes nothing)."""
    global _finder
    if _finder is not None:
        return
    for name in list(sys.modules):
        if _stubbed(name):
            del sys.modules[name]
    _finder = _Finder()
    sys.meta_path.insert(0, _finder)


class _SkippedInit(types.ModuleType):
    """A package whose __init__.py did not run: submodules load from its directory, other names
    (what __init__.py would have defined) are stand-ins."""

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        d = self.__path__[0]
        if os.path.exists(os.path.join(d, name + ".py")) or os.path.isdir(os.path.join(d, name)):
            return importlib.import_module(self.__name__ + "." + name)
        v = _named(self.__name__ + "." + name)
        setattr(self, name, v)
        return v


def skip_package_init(package, directory):
    """Register package over directory without running its __init__.py, so that one submodule
    (megatron.training.arguments) loads without its heavy siblings."""
    m = _SkippedInit(package)
    m.__path__ = [directory]
    sys.modules[package] = m
    return m


def add_trees(bridge, megatron):
    """Put a Megatron-Bridge tree (its src/) and a Megatron-LM tree first on sys.path."""
    for p in (os.path.join(bridge, "src"), megatron):
        if not os.path.isdir(p):
            raise SystemExit(f"no directory {p}: give the root of a Megatron-Bridge and a Megatron-LM checkout")
        sys.path.insert(0, p)
