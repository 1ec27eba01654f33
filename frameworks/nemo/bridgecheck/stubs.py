"""Import-time stand-ins for the GPU stack, so Megatron-Bridge's and Megatron Core's config modules
import on a plain CPU Python without PyTorch 2, Transformer Engine or a GPU.

install() puts a finder first on sys.meta_path that serves every module under the stubbed roots
(torch, transformer_engine, ...) as a permissive stand-in: any attribute is another stand-in, which can
be called, subclassed, indexed, iterated (empty), compared and used as a decorator. Names a config
annotation uses keep their dotted name (torch.dtype stays "torch.dtype"), so the fact extractor can
tell what a field's type was. The few torch facts the config code actually computes with (dtypes,
distributed world size, device counts) are given real values."""
import abc
import importlib.abc
import importlib.machinery
import sys
import types

ROOTS = (
    "torch", "transformer_engine", "transformer_engine_torch", "apex", "flash_attn", "triton",
    "tensorrt_llm", "modelopt", "nvidia_resiliency_ext", "wandb", "mlflow", "tensorboard", "einops",
    "torchvision", "torchaudio", "torchdata", "tyro", "nv_one_logger", "megatron.energon",
    "transformers", "huggingface_hub", "safetensors", "accelerate", "datasets", "sentencepiece",
    "tiktoken", "peft", "timm", "open_clip", "qwen_vl_utils", "PIL", "omegaconf", "hydra",
    "pydantic", "scipy", "sklearn", "regex", "filelock", "psutil", "zarr", "tensorstore",
    "multistorageclient", "nvtx", "cuda", "deep_ep", "emerging_optimizers", "flashinfer",
    "mamba_ssm", "causal_conv1d", "grouped_gemm", "onnx", "nemo_run", "lightning", "pytorch_lightning",
    "tqdm", "rich", "yaml_include", "wrapt", "fsspec", "hf_xet", "numpy.dtypes",
)

# Calls of the stand-ins whose dotted name is in RECORD are kept in CALLS (name -> [(args, kwargs)]).
RECORD = set()
CALLS = {}


class _Meta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _named(cls.__stub_name__ + "." + name)

    def __getitem__(cls, item):
        return cls

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

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __repr__(cls):
        return cls.__stub_name__

    def __instancecheck__(cls, obj):
        return abc.ABCMeta.__instancecheck__(cls, obj)


class Stub(metaclass=_Meta):
    __stub_name__ = "stub"

    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _named(type(self).__stub_name__ + "()." + name)

    def __call__(self, *a, **k):
        return Stub()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_cache = {}


def _named(name):
    if name not in _cache:
        _cache[name] = _Meta(name.rsplit(".", 1)[-1], (Stub,), {"__stub_name__": name, "__module__": name.rsplit(".", 1)[0]})
    return _cache[name]


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _named(self.__name__ + "." + name)


def _stubbed(fullname):
    return any(fullname == r or fullname.startswith(r + ".") for r in ROOTS)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return _Module(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        module.__version__ = "99.0.0"
        _fill(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if _stubbed(fullname):
            return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)
        return None


class _Dtype:
    def __init__(self, name, bits):
        self.name, self.itemsize, self.is_floating_point = name, bits // 8, True

    def __repr__(self):
        return "torch." + self.name


DTYPES = {n: _Dtype(n, b) for n, b in (("float32", 32), ("float16", 16), ("bfloat16", 16), ("float64", 64),
                                          ("float8_e4m3fn", 8), ("float8_e5m2", 8), ("int64", 64), ("int32", 32),
                                          ("uint8", 8), ("bool", 8))}


def _fill(module):
    """Real values for the few torch facts the config code computes with."""
    n = module.__name__
    if n == "torch":
        for k, v in DTYPES.items():
            setattr(module, k, v)
        module.float, module.half, module.long, module.int = DTYPES["float32"], DTYPES["float16"], DTYPES["int64"], DTYPES["int32"]
        module.dtype = _named("torch.dtype")
        module.dtype.__instancecheck__ = lambda obj: isinstance(obj, _Dtype)
        module.Tensor = _named("torch.Tensor")
        module.device = _named("torch.device")
        module.Size = tuple
        module.__version__ = "2.10.0"
    elif n == "torch.cuda":
        module.is_available = lambda: False
        module.device_count = lambda: 0
        module.current_device = lambda: 0
        module.get_device_capability = lambda *a: (9, 0)
        module.get_device_properties = lambda *a: Stub()
    elif n == "torch.distributed":
        module.is_initialized = lambda: False
        module.is_available = lambda: True
        module.get_rank = lambda *a, **k: 0
        module.get_group_rank = lambda *a, **k: 0
        module.get_world_size = lambda *a, **k: int(__import__("os").environ.get("WORLD_SIZE", "1"))
    elif n == "numpy":
        module.ndarray = _named("numpy.ndarray")


_installed = False


def install():
    """Serve the stubbed roots from now on (drops any real copy already imported)."""
    global _installed
    if _installed:
        return
    for name in list(sys.modules):
        if _stubbed(name):
            del sys.modules[name]
    sys.meta_path.insert(0, _Finder())
    _installed = True


def add_trees(bridge, megatron):
    """Put the fetched Megatron-Bridge (its src/) and Megatron-LM trees first on sys.path."""
    import os
    for p in (os.path.join(bridge, "src"), megatron):
        if not os.path.isdir(p):
            raise SystemExit(f"no directory {p}: give the root of a Megatron-Bridge and a Megatron-LM checkout")
        sys.path.insert(0, p)
