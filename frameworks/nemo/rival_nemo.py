"""Rival's Megatron-Bridge entry: one pretraining run from a JSON configuration written by Rival.

The JSON file holds one object per ConfigContainer section (model, train, optimizer, scheduler, dataset,
logger, tokenizer, checkpoint, rng, ddp, dist, mixed_precision, profiling); each is passed field by
field to Bridge's dataclass of that section, so nothing is left to a recipe and nothing is downloaded.
The few values JSON cannot carry are named: dtypes ("bfloat16"), the activation ("silu"), tuples
(window_size, the dataset blend). Run under torchrun; every rank builds the same configuration.
Rank 0 writes what actually ran (Bridge, Megatron Core, Transformer Engine, torch, CUDA versions) to
the --ran file and prints it as one "rival-nemo: ran ..." line. With --check it only runs Bridge's
own configuration validation for WORLD_SIZE processes and exits (a preflight; no GPU needed)."""
import argparse
import json
import os
import subprocess
import sys

# Section -> (module, class) of Megatron-Bridge 0.3.0.
SECTIONS = {
    "model": ("megatron.bridge.models.gpt_provider", "GPTModelProvider"),
    "train": ("megatron.bridge.training.config", "TrainingConfig"),
    "optimizer": ("megatron.bridge.training.config", "OptimizerConfig"),
    "scheduler": ("megatron.bridge.training.config", "SchedulerConfig"),
    "dataset": ("megatron.bridge.training.config", "GPTDatasetConfig"),
    "logger": ("megatron.bridge.training.config", "LoggerConfig"),
    "tokenizer": ("megatron.bridge.training.tokenizers.config", "TokenizerConfig"),
    "checkpoint": ("megatron.bridge.training.config", "CheckpointConfig"),
    "rng": ("megatron.bridge.training.config", "RNGConfig"),
    "ddp": ("megatron.bridge.training.config", "DistributedDataParallelConfig"),
    "dist": ("megatron.bridge.training.config", "DistributedInitConfig"),
    "mixed_precision": ("megatron.bridge.training.mixed_precision", "MixedPrecisionConfig"),
    "profiling": ("megatron.bridge.training.config", "ProfilingConfig"),
}
REQUIRED = ("model", "train", "optimizer", "scheduler", "dataset", "logger", "tokenizer", "checkpoint", "rng")
DTYPE_FIELDS = ("params_dtype", "pipeline_dtype", "autocast_dtype")
DTYPES = ("bfloat16", "float16", "float32")
# Enum fields, written in JSON by member name: (section, field) -> (module, enum class).
ENUMS = {("model", "attention_backend"): ("megatron.core.transformer.enums", "AttnBackend")}


def _class(section):
    module, name = SECTIONS[section]
    return getattr(__import__(module, fromlist=[name]), name)


def _value(section, field, v):
    """Turn a JSON value into what Bridge's field holds."""
    if field in DTYPE_FIELDS and v is not None:
        if v not in DTYPES:
            raise ValueError(f"{section}.{field}: dtype {v!r}, want one of {', '.join(DTYPES)}")
        import torch
        return getattr(torch, v)
    if section == "model" and field == "activation_func":
        import torch.nn.functional as F
        if v not in ("silu", "gelu"):
            raise ValueError(f"model.activation_func: {v!r}, want silu or gelu")
        return getattr(F, v)
    if (section, field) in ENUMS and isinstance(v, str):
        module, name = ENUMS[(section, field)]
        enum = getattr(__import__(module, fromlist=[name]), name)
        if v not in enum.__members__:
            raise ValueError(f"{section}.{field}: {v!r} is not one of {', '.join(enum.__members__)}")
        return enum[v]
    if section == "model" and field == "window_size" and v is not None:
        return tuple(v)
    if section == "dataset" and field == "blend" and v is not None:
        return (list(v[0]), None if v[1] is None else list(v[1]))
    return v


def build_config(doc):
    """Bridge's ConfigContainer from the JSON document (a dict of sections)."""
    from megatron.bridge.training.config import ConfigContainer

    unknown = sorted(set(doc) - set(SECTIONS))
    if unknown:
        raise ValueError(f"unknown configuration sections {unknown}; known: {sorted(SECTIONS)}")
    missing = [s for s in REQUIRED if s not in doc]
    if missing:
        raise ValueError(f"configuration lacks the sections {missing}")
    parts = {}
    for section, fields in doc.items():
        cls = _class(section)
        kwargs = {k: _value(section, k, v) for k, v in fields.items()}
        try:
            parts[section] = cls(**kwargs)
        except TypeError as e:
            raise ValueError(f"section {section}: {cls.__name__} rejects the fields: {e}") from e
    return ConfigContainer(**parts)


def ran():
    """What is installed in this container, read now (not the pin)."""
    import megatron.bridge
    import megatron.core
    out = {"framework": "megatron-bridge", "version": getattr(megatron.bridge, "__version__", "unknown"),
           "megatron_core": getattr(megatron.core, "__version__", "unknown")}
    core_dir = os.path.dirname(os.path.dirname(os.path.abspath(megatron.core.__file__)))
    try:
        out["megatron_core_commit"] = subprocess.run(
            ["git", "-C", core_dir, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["megatron_core_commit"] = "unknown"
    try:
        import transformer_engine
        out["transformer_engine"] = transformer_engine.__version__
    except Exception:  # an image without Transformer Engine still records the rest
        out["transformer_engine"] = "unknown"
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda or "none"
    return out


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", required=True, help="the JSON configuration Rival wrote")
    p.add_argument("--ran", required=True, help="where rank 0 writes what ran (JSON)")
    p.add_argument("--check", action="store_true",
                   help="only build the configuration and run Bridge's own validation (runtime_config_update, "
                        "then the optimizer scheduler) for WORLD_SIZE processes, print the verdict and exit; no GPU needed")
    return p.parse_args(argv)


def check(cfg):
    """Bridge's own validation of the configuration, as pretrain's setup runs it, without a GPU."""
    from megatron.bridge.training.config import runtime_config_update
    from megatron.bridge.training.optim import _get_scheduler

    class _Optimizer:  # what Megatron Core's scheduler touches
        param_groups = [{}]

    runtime_config_update(cfg)
    _get_scheduler(cfg.optimizer, cfg.scheduler, _Optimizer())
    print(f"rival-nemo: configuration valid for {os.environ.get('WORLD_SIZE', '1')} processes "
          f"(data parallel {cfg.data_parallel_size})", flush=True)


def _where(e):
    """The innermost frame that raised e, as file:line: code."""
    import traceback
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno}: {(f.line or '').strip()})"


def preflight(o):
    """--check: the run's preflight. Prints "preflight ran: {json}" (what the image holds, read now),
    then "preflight ok: ..." or "preflight failed: <Bridge's error>" as the last line; exit 0 or 1."""
    try:
        r = ran()
        r["megatron_bridge"] = r.pop("version")
        del r["framework"]
        print("preflight ran: " + json.dumps(r, sort_keys=True), flush=True)
    except Exception:  # what ran is a record, not a condition of the check
        pass
    try:
        with open(o.config, encoding="utf-8") as f:
            cfg = build_config(json.load(f))
        check(cfg)
    except Exception as e:  # the framework's own error, quoted
        print(f"preflight failed: megatron-bridge configuration: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    print(f"preflight ok: megatron-bridge configuration valid for {os.environ.get('WORLD_SIZE', '1')} processes",
          flush=True)
    return 0


def main(argv=None):
    o = parse(argv)
    if o.check:
        return preflight(o)
    with open(o.config, encoding="utf-8") as f:
        doc = json.load(f)
    cfg = build_config(doc)
    if int(os.environ.get("RANK", "0")) == 0:
        r = ran()
        tmp = o.ran + ".partial"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1, sort_keys=True)
        os.replace(tmp, o.ran)
        print("rival-nemo: ran megatron-bridge {version}, megatron-core {megatron_core} ({megatron_core_commit}), "
              "transformer-engine {transformer_engine}, torch {torch}, CUDA {cuda}".format(**r), flush=True)
    if cfg.profiling.use_pytorch_profiler and cfg.logger.tensorboard_dir:
        os.makedirs(cfg.logger.tensorboard_dir, exist_ok=True)
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain
    pretrain(cfg, forward_step)


if __name__ == "__main__":
    sys.exit(main())
