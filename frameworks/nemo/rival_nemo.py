"""Rival's NeMo 2.0 entry: one pretraining run from a NeMo recipe, with every parallelism, batch,
schedule, precision and data field set from the command line so nothing is left to recipe defaults.
Run under torchrun; every rank builds the same recipe and runs it in-process."""
import argparse
import importlib
import os

import nemo_run as run
import torch
from nemo.collections.common.tokenizers.huggingface.auto_tokenizer import AutoTokenizer
from nemo.collections.llm.gpt.data.pre_training import PreTrainingDataModule
from nemo.collections.llm.recipes.precision.mixed_precision import bf16_mixed, bf16_with_fp8_mixed
from nemo.lightning.pytorch.callbacks.flops_callback import FLOPsMeasurementCallback
from nemo.lightning.pytorch.callbacks.pytorch_profiler import PytorchProfilerCallback
from nemo.lightning.pytorch.plugins.mixed_precision import MegatronMixedPrecision
from nemo.utils.exp_manager import TimingCallback


def parse():
    p = argparse.ArgumentParser(description=__doc__)
    a = p.add_argument
    a("--recipe", required=True, choices=["llama31_8b", "qwen25_7b", "mistral_7b"])
    a("--name", required=True)
    a("--log-dir", required=True)
    a("--nodes", type=int, required=True)
    a("--gpus-per-node", type=int, required=True)
    for k in ("layers", "hidden", "ffn", "heads", "kv-heads", "rope-base", "window"):
        a("--" + k, type=int, required=True)
    a("--qkv-bias", type=int, choices=[0, 1], required=True)
    a("--data-prefix", required=True)
    a("--data-cache", required=True)
    a("--tokenizer", required=True)
    for k in ("seed", "mbs", "gbs", "seq-length", "tp", "pp", "train-iters", "warmup"):
        a("--" + k, type=int, required=True)
    for k in ("lr", "min-lr", "weight-decay", "beta1", "beta2", "adam-eps", "clip-grad"):
        a("--" + k, type=float, required=True)
    a("--precision", choices=["bf16", "fp8", "fp32"], required=True)
    a("--profile", type=int, choices=[0, 1], required=True)
    a("--profile-start", type=int, required=True)
    a("--profile-end", type=int, required=True)
    a("--profile-ranks", type=int, nargs="+", required=True)
    a("--trace-dir", required=True)
    return p.parse_args()


def precision_plugin(name):
    if name == "bf16":
        return bf16_mixed()
    if name == "fp8":
        cfg = bf16_with_fp8_mixed()
        cfg.fp8_param_gather = False  # Megatron and Primus runs keep bf16 parameter all-gathers
        return cfg
    return run.Config(MegatronMixedPrecision, precision="32", params_dtype=torch.float32,
                      pipeline_dtype=torch.float32, autocast_enabled=False, grad_reduce_in_fp32=True)


def main():
    o = parse()
    recipes = importlib.import_module("nemo.collections.llm.recipes." + o.recipe)
    r = recipes.pretrain_recipe(dir=o.log_dir, name=o.name, num_nodes=o.nodes, num_gpus_per_node=o.gpus_per_node)

    m = r.model.config
    m.num_layers, m.hidden_size, m.ffn_hidden_size = o.layers, o.hidden, o.ffn
    m.num_attention_heads, m.num_query_groups = o.heads, o.kv_heads
    m.rotary_base, m.add_qkv_bias, m.seq_length = o.rope_base, bool(o.qkv_bias), o.seq_length
    m.window_size = (o.window, 0) if o.window > 0 else None
    m.hidden_dropout, m.attention_dropout = 0.0, 0.0

    t = r.trainer
    s = t.strategy
    s.tensor_model_parallel_size, s.pipeline_model_parallel_size = o.tp, o.pp
    s.context_parallel_size, s.virtual_pipeline_model_parallel_size = 1, None
    s.sequence_parallel = o.tp > 1
    t.num_nodes, t.devices, t.max_steps = o.nodes, o.gpus_per_node, o.train_iters
    t.accumulate_grad_batches = 1  # Megatron accumulates: gbs / (mbs × dp) micro-batches per step
    t.limit_val_batches, t.limit_test_batches, t.val_check_interval = 0, 0, o.train_iters
    t.log_every_n_steps = 1
    t.enable_checkpointing = False
    t.plugins = precision_plugin(o.precision)
    r.log.ckpt = None

    r.data = run.Config(
        PreTrainingDataModule, paths=[o.data_prefix], seq_length=o.seq_length,
        tokenizer=run.Config(AutoTokenizer, pretrained_model_name=o.tokenizer),
        micro_batch_size=o.mbs, global_batch_size=o.gbs, seed=o.seed, split="100,0,0",
        index_mapping_dir=o.data_cache)

    c = r.optim.config
    c.lr, c.weight_decay, c.adam_beta1, c.adam_beta2 = o.lr, o.weight_decay, o.beta1, o.beta2
    c.adam_eps, c.clip_grad, c.use_distributed_optimizer = o.adam_eps, o.clip_grad, True
    c.bf16, c.fp16 = o.precision != "fp32", False
    sch = r.optim.lr_scheduler
    sch.max_steps, sch.warmup_steps, sch.constant_steps, sch.min_lr = o.train_iters, o.warmup, 0, o.min_lr

    # NeMo's FLOPs formula for GQA + SwiGLU decoders is filed under "llama3"; Rival recomputes FLOPs
    # itself and keeps this figure only as the framework's own.
    t.callbacks = [run.Config(TimingCallback),
                   run.Config(FLOPsMeasurementCallback, model_config=m, data_config=r.data, model_name="llama3")]
    if o.profile and int(os.environ.get("RANK", "0")) in o.profile_ranks:
        os.makedirs(o.trace_dir, exist_ok=True)
        t.callbacks.append(run.Config(PytorchProfilerCallback, start_step=o.profile_start,
                                      end_step=o.profile_end, trace_dir=o.trace_dir))

    torch.manual_seed(o.seed)
    run.run(r, direct=True)


if __name__ == "__main__":
    main()
