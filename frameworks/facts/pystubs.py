"""Stand-in modules for running upstream argument parsers and config validators without a GPU stack.

install() puts a sys.meta_path finder first that serves permissive stand-ins for torch,
transformer_engine and the other heavy packages the Megatron and Primus config code imports at
module level. Every attribute of a stand-in is another stand-in; stand-ins can be called,
subclassed, iterated (empty), indexed and compared. Code that only builds argument parsers, checks
argument values and builds config dataclasses runs unchanged on top of them.

Used by extract_megatron.py, extract_primus.py and preflight.py; standard library only.
"""

import abc
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types

STUBBED = (
    "torch", "transformer_engine", "transformer_engine_torch", "apex", "flash_attn", "triton",
    "tyro", "torchdata", "einops", "tensorstore", "zarr", "nvidia_resiliency_ext", "modelopt",
    "mamba_ssm", "causal_conv1d", "nvtx", "wandb", "tensorboard", "primus_turbo", "aiter",
    "multistorageclient", "onelogger", "one_logger", "nv_one_logger", "grouped_gemm", "emerging_optimizers",
    "flashattn_hopper", "flash_attn_3", "deep_ep", "mlflow", "hip", "amdsmi", "pynvml", "loguru",
    "datasets", "transformers", "sentencepiece", "tiktoken", "safetensors", "cupy", "numpy", "scipy",
    "regex",
)

# Versions the stand-ins report, so version gates take the pinned images' branches.
VERSIONS = {"torch": "2.10.0", "transformer_engine": "2.12.0", "triton": "3.5.0"}


class Any:
    """A permissive value: every operation yields another Any (or a neutral result)."""

    def __init__(self, *args, **kwargs):
        self._name = kwargs.get("_name", "stub") if not args else "stub"

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return Any()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Any()

    def __mro_entries__(self, bases):
        return (AnyBase,)

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __getitem__(self, key):
        return Any()

    def __contains__(self, key):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __or__(self, other):
        return Any()

    __ror__ = __or__

    def __int__(self):
        return 0

    def __float__(self):
        return 0.0

    def __index__(self):
        return 0

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return "<stub>"


class _AnyMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Any()


class AnyBase(metaclass=_AnyMeta):
    """Base class for classes that derive from a stand-in (torch.nn.Module, ...)."""

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Any()

    @classmethod
    def __class_getitem__(cls, item):
        return cls


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        full = self.__name__ + "." + name
        if full in sys.modules:
            return sys.modules[full]
        v = Any()
        setattr(self, name, v)
        return v


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        top = spec.name.split(".")[0]
        m.__version__ = VERSIONS.get(top, "0.0.0")
        return m

    def exec_module(self, module):
        if module.__name__ == "torch":
            _torch_types(module)


class _DType:
    """torch.dtype's stand-in: a real type, so isinstance checks work, with named instances."""

    def __init__(self, name, bits, floating):
        self.name, self.itemsize, self.is_floating_point = name, bits // 8, floating

    def __repr__(self):
        return "torch." + self.name


def _torch_types(torch):
    torch.dtype = _DType
    for name, bits, fl in [("float32", 32, True), ("float16", 16, True), ("bfloat16", 16, True),
                           ("float64", 64, True), ("int64", 64, False), ("int32", 32, False),
                           ("int8", 8, False), ("uint8", 8, False), ("bool", 8, False)]:
        setattr(torch, name, _DType(name, bits, fl))
    torch.float, torch.half, torch.double, torch.long, torch.int = (
        torch.float32, torch.float16, torch.float64, torch.int64, torch.int32)
    torch.Tensor = type("Tensor", (AnyBase,), {})
    torch.Size = tuple
    # The device the run targets, for validation checks that ask for it: RIVAL_DEVICE_CAPABILITY
    # "major.minor" (H100 9.0; MI300X reports 9.4 through ROCm's CUDA interface).
    major, _, minor = os.environ.get("RIVAL_DEVICE_CAPABILITY", "9.0").partition(".")
    cap = (int(major), int(minor or 0))
    props = types.SimpleNamespace(major=cap[0], minor=cap[1], name="stand-in", total_memory=80 << 30,
                                  multi_processor_count=132)
    cuda = types.ModuleType("torch.cuda")
    cuda.__path__ = []
    cuda.get_device_capability = lambda *a, **k: cap
    cuda.get_device_properties = lambda *a, **k: props
    cuda.is_available = lambda: False
    cuda.device_count = lambda: 0
    cuda.__getattr__ = lambda name: Any()
    sys.modules["torch.cuda"] = cuda
    torch.cuda = cuda


def install():
    """Serve stand-ins for the heavy packages from now on (before anything imports them)."""
    for name in list(sys.modules):
        if name.split(".")[0] in STUBBED:
            del sys.modules[name]
    sys.meta_path.insert(0, _Finder())


class _SkippedInit(types.ModuleType):
    """A package whose __init__.py did not run: submodules load from its directory, other names
    (what __init__.py would have defined) are stand-ins."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        d = self.__path__[0]
        if os.path.exists(os.path.join(d, name + ".py")) or os.path.isdir(os.path.join(d, name)):
            return importlib.import_module(self.__name__ + "." + name)
        v = Any()
        setattr(self, name, v)
        return v


def skip_package_init(package, directory):
    """Register package over directory without running its __init__.py, so that one submodule
    (megatron.training.arguments) loads without its heavy siblings."""
    m = _SkippedInit(package)
    m.__path__ = [directory]
    sys.modules[package] = m
    return m
