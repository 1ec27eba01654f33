#!/usr/bin/env python3
"""Preflight: run the framework's own argument parsing and config validation on one exact launch,
without GPUs, before the run starts.

    preflight.py mega  MEGATRON_TREES WORLD_SIZE [--held-out WRAPPER PREFIX N] -- ARGS...
                                                (the arguments after pretrain_gpt.py)
    preflight.py prim  PRIMUS_TREES MEGATRON_TREES WORLD_SIZE EXP_YAML [-- OVERRIDES...]

TREES are ':'-separated candidates (environment variables expanded); the first that holds the
framework is used, and for Megatron the installed megatron package's tree after them.

mega: Megatron's parse_args (its add_megatron_arguments parser), validate_args and
core_transformer_config_from_args (TransformerConfig.__post_init__) with WORLD_SIZE processes.
prim: Primus's core runtime as `primus-cli train pretrain` runs it (primus_runtime below): config
load and override merge, its Megatron argument build, the build_args/setup/before_train patch
phases and the trainer setup whose validate_args adds Primus's ROCm checks; then the TransformerConfig
as for mega.

Both then digest, when the run's dataset is there (not for train:check before encoding), the first
min(8 × GBS, TRAIN_ITERS × GBS) samples that Megatron's own pretraining data path hands out for the
parsed arguments: GPTDataset built by BlendedMegatronDatasetBuilder (its helpers.cpp, compiled when the
tree does not hold it built), read micro-batch step by micro-batch step and data-parallel rank by rank
as MegatronPretrainingSampler gives them; each sample's tokens as little-endian int64 go into one
SHA-256, printed as 'preflight samples: {"samples": n, "sha256": hex}' for Rival to compare with its
own order.

torch and the GPU packages are stand-ins (pystubs.py), so this runs on plain python3 with PyYAML,
inside the platform image or on a developer's machine against fetched trees. Exit 0 and one line
"preflight ok: ..." on success; on failure exit 1 with the framework's own error as the last line,
prefixed "preflight failed: ".
"""

import argparse
import contextlib
import importlib
import io
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pystubs  # noqa: E402
import effective  # noqa: E402


def fail(stage, exc):
    msg = " ".join(m.strip() for m in "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines())
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        last = tb[-1]
        msg += " (at %s:%d: %s)" % (os.path.basename(last.filename), last.lineno, (last.line or "").strip())
    sys.stderr.write("preflight failed: %s: %s\n" % (stage, msg))
    sys.exit(1)


def resolve(candidates, marker):
    """The first of the ':'-separated candidate trees (environment variables expanded) that holds
    marker; then, for Megatron, the tree the installed megatron package comes from."""
    looked = []
    for c in candidates.split(":"):
        c = os.path.expandvars(c)
        if not c or "$" in c:
            continue
        if os.path.exists(os.path.join(c, marker)):
            return c
        looked.append(os.path.join(c, marker))
    if marker.startswith("megatron/"):
        import importlib.util
        spec = importlib.util.find_spec("megatron")
        if spec and spec.submodule_search_locations:
            top = os.path.dirname(list(spec.submodule_search_locations)[0])
            if os.path.exists(os.path.join(top, marker)):
                return top
            looked.append(os.path.join(top, marker))
    sys.stderr.write("preflight failed: %s not found; looked for: %s\n" % (marker, ", ".join(looked) or "nothing"))
    sys.exit(1)


def megatron(tree):
    tree = resolve(tree, "megatron/training/arguments.py")
    sys.path.insert(0, tree)
    pystubs.skip_package_init("megatron.training", os.path.join(tree, "megatron", "training"))
    return importlib.import_module("megatron.training.arguments"), tree


def check_megatron(arguments, argv, world, defaults=None):
    os.environ["WORLD_SIZE"] = str(world)
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    parser = argparse.ArgumentParser(allow_abbrev=False)
    arguments.add_megatron_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        sys.stderr.write("preflight failed: megatron parse_args rejected the arguments (argparse's message above)\n")
        sys.exit(1)
    args.rank = int(os.environ["RANK"])
    args.world_size = world
    for k, v in (defaults or {}).items():
        setattr(args, k, v)
    out = io.StringIO()  # validate_args prints every argument on rank 0
    try:
        with contextlib.redirect_stdout(out):
            arguments.validate_args(args, {})
    except BaseException as e:  # noqa: B902 (validate_args raises AssertionError and others)
        fail("megatron validate_args", e)
    try:
        cfg = arguments.core_transformer_config_from_args(args)
    except BaseException as e:  # noqa: B902
        fail("megatron TransformerConfig", e)
    return args, cfg


def check_types(arguments, values):
    """What argparse would have enforced had the values come on Megatron's command line: Primus's
    builder copies them as they are, so a string where Megatron converts to a number, or a value
    outside an option's choices, would only fail later, on the GPUs."""
    parser = argparse.ArgumentParser(allow_abbrev=False)
    arguments.add_megatron_arguments(parser)
    errs = []
    for a in parser._actions:
        if not a.option_strings or a.dest not in values:
            continue
        v = values[a.dest]
        if v is None:
            continue
        items = v if isinstance(v, (list, tuple)) and a.nargs not in (None, "?", 0) else [v]
        for x in items:
            if a.type in (int, float) and (isinstance(x, str) or isinstance(x, bool)):
                errs.append("%s: %r is a %s where %s converts to %s" % (a.dest, x, type(x).__name__, a.option_strings[0], a.type.__name__))
            elif a.choices is not None and a.type is None or (a.choices is not None and isinstance(x, str) and a.type is str):
                names = [getattr(c, "name", c) for c in a.choices]
                if x not in a.choices and x not in names:
                    errs.append("%s: %r is not one of %s's choices %s" % (a.dest, x, a.option_strings[0], names))
        if a.nargs in ("+", "*") and isinstance(v, str) and v.strip().startswith("["):
            errs.append("%s: %r where %s takes a list" % (a.dest, v, a.option_strings[0]))
    if errs:
        sys.stderr.write("preflight failed: primus override typing: %s\n" % "; ".join(errs))
        sys.exit(1)


def ran(megatron_tree=None, primus_tree=None):
    """What this image actually holds, read without importing torch: distribution versions, Megatron
    Core's package_info, the trees' git commits when they carry .git, and the CUDA or ROCm release."""
    import importlib.metadata as md
    import json
    out = {}
    for key, dists in [("torch", ["torch"]), ("transformer_engine", ["transformer_engine", "transformer-engine", "transformer_engine_torch"]),
                       ("megatron_core", ["megatron-core", "megatron_core"]), ("megatron_bridge", ["megatron-bridge", "megatron_bridge"]),
                       ("nemo", ["nemo_toolkit", "nemo-toolkit"]), ("primus", ["primus"])]:
        for d in dists:
            try:
                out[key] = md.version(d)
                break
            except Exception:  # noqa: BLE001 (not installed under that name)
                pass
    if megatron_tree:
        pkg = os.path.join(megatron_tree, "megatron", "core", "package_info.py")
        if os.path.exists(pkg):
            ns = {}
            try:
                exec(compile(open(pkg).read(), pkg, "exec"), ns)
                out["megatron_core"] = ns.get("__version__", out.get("megatron_core"))
            except Exception:  # noqa: BLE001
                pass
        out["megatron_tree"] = megatron_tree
    for key, tree in (("megatron_commit", megatron_tree), ("primus_commit", primus_tree)):
        c = git_head(tree) if tree else None
        if c:
            out[key] = c
    if os.environ.get("CUDA_VERSION"):
        out["cuda"] = os.environ["CUDA_VERSION"]
    for f in ("/opt/rocm/.info/version",):
        if os.path.exists(f):
            out["rocm"] = open(f).read().strip()
    print("preflight ran: " + json.dumps(out, sort_keys=True))


def git_head(tree):
    """The commit a checkout is at, from its .git (a directory, or a file pointing at a submodule's)."""
    g = os.path.join(tree, ".git")
    try:
        if os.path.isfile(g):
            line = open(g).read().strip()
            if line.startswith("gitdir:"):
                g = os.path.normpath(os.path.join(tree, line.split(":", 1)[1].strip()))
        head = open(os.path.join(g, "HEAD")).read().strip()
        if head.startswith("ref:"):
            ref = head.split(":", 1)[1].strip()
            p = os.path.join(g, ref)
            if os.path.exists(p):
                return open(p).read().strip()
            for line in open(os.path.join(g, "packed-refs")):
                if line.strip().endswith(" " + ref):
                    return line.split()[0]
            return None
        return head
    except OSError:
        return None


def effective_of(args, cfg, tokenizer_module=None):
    """Prints what Megatron built (effective.py), read from its own args and TransformerConfig."""
    try:
        effective.emit(effective.megatron(args, cfg, tokenizer_module))
    except BaseException as e:  # noqa: B902
        fail("reading back Megatron's effective configuration", e)
    knobs_of(effective.megatron_knobs, args)


def knobs_of(read, obj):
    """Prints the Megatron-family knobs read back from obj and fails on any that differs from the
    launch's knobs.json (core.Fairness)."""
    try:
        got = read(obj)
    except BaseException as e:  # noqa: B902
        fail("reading back the Megatron knobs", e)
    print(effective.KNOBS_PREFIX + json.dumps(got, sort_keys=True))
    diffs = effective.knob_differences(got, os.path.dirname(os.path.abspath(__file__)))
    if diffs:
        sys.stderr.write("preflight failed: Megatron knobs differ from Rival's fairness table (core.Fairness): %s\n" % "; ".join(diffs))
        sys.exit(1)


def torch_custom_ops():
    """torch.library.custom_op for the stand-in torch: it keeps the decorated function and takes the
    registrations made on the op (register_fake, register_autograd, ...). Primus v26.5.1's Transformer
    Engine permutation module, which its MoE permute-fusion patch imports, registers at import."""
    import functools
    library = importlib.import_module("torch.library")

    class CustomOp:
        def __init__(self, fn):
            self._fn = fn
            functools.update_wrapper(self, fn)

        def __call__(self, *a, **k):
            return self._fn(*a, **k)

        def __getattr__(self, name):
            if not name.startswith("register_"):
                raise AttributeError(name)

            def register(*a, **k):
                if len(a) == 1 and not k and callable(a[0]):
                    return a[0]  # used as a decorator
                return lambda fn: fn
            return register

    def custom_op(name, fn=None, *a, **k):
        return CustomOp(fn) if callable(fn) else CustomOp

    library.custom_op = custom_op


# What `primus-cli train pretrain` (run_pretrain.sh's torchrun target) hands the core runtime for a
# Megatron pretrain, and what Megatron's pretrain() then gives validate_args.
PRIMUS_MODULE = "pre_trainer"
PRIMUS_ARGS_DEFAULTS = {"tokenizer_type": "GPT2BPETokenizer"}


def primus_runtime(exp, mtree, arguments, overrides=()):
    """Primus's core runtime (primus.core.runtime.train_runtime.PrimusRuntime) on one experiment, the
    path a Megatron pretrain takes at start-up, up to where Megatron's args are final: config load
    and override merge, the Megatron adapter's argument build, the build_args, setup and
    before_train patch phases, the trainer's setup (which replaces Megatron's parse_args and wraps
    validate_args with Primus's ROCm checks), then validate_args as Megatron's initialize calls it.
    Left out: the environment step (HF cache and data folders only) and distributed init.
    Returns the validated args and the tokenizer module whose padding the run uses."""
    import builtins
    import types
    keep_print = builtins.print  # Primus's worker logger replaces print with its debug logger
    applied, failed, phase = {}, [], ["config"]
    try:
        rt_mod = importlib.import_module("primus.core.runtime.train_runtime")
        runner = importlib.import_module("primus.core.patches.patch_runner")
        # The runner logs a patch's failure and goes on; the preflight collects them instead.
        log, err = runner.log_rank_0, runner.error_rank_0

        def note(msg, *a, **k):
            if "Applied: " in msg and msg.lstrip().startswith("[Patch] \u2713"):
                pid = msg.split("Applied: ", 1)[1].split(" (", 1)[0]
                applied.setdefault(phase[0], []).append(pid)
        runner.log_rank_0 = note
        runner.error_rank_0 = lambda msg, *a, **k: failed.append((phase[0], msg.strip().splitlines()[0]))
        # The backend path prepare.py passes on (--backend_path): the Megatron tree in use.
        rt = rt_mod.PrimusRuntime(args=types.SimpleNamespace(config=exp, data_path=os.path.join(os.path.dirname(exp), "data"), backend_path=mtree))
        # The run's own command-line overrides (what run_pretrain.sh passes to primus/cli/main.py).
        rt._initialize_configuration(PRIMUS_MODULE, list(overrides))
        rt._initialize_distributed_context()
        rt._initialize_logging()
        builtins.print = keep_print
        phase[0] = "build_args"
        rt._initialize_adapter()
        rt._initialize_trainer()
        args = rt.ctx.backend_args
        for phase[0], step in (("setup", rt.ctx.trainer.setup), ("before_train", None)):
            rt._run_phase_patches(phase=phase[0], backend_args=args)
            if step:
                step()
        runner.log_rank_0, runner.error_rank_0 = log, err
    except BaseException as e:  # noqa: B902
        builtins.print = keep_print
        fail("primus runtime (%s)" % phase[0], e)
    builtins.print = keep_print
    if failed:
        sys.stderr.write("preflight failed: primus patch: %s\n" % "; ".join("%s: %s" % f for f in failed))
        sys.exit(1)
    print("preflight primus patches: " + json.dumps(applied, sort_keys=True))
    # Primus's mock_data switch empties every data path (patch megatron.args.mock_data): the run
    # would train on generated tokens, not the workload's dataset.
    if getattr(args, "mock_data", False):
        sys.stderr.write("preflight failed: primus runtime: mock_data is true, so Primus clears the data paths and trains on generated tokens instead of the dataset\n")
        sys.exit(1)
    check_types(arguments, vars(args))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            # Primus's wrapped validate_args: Megatron's own, then Primus's ROCm checks.
            arguments.validate_args(args, dict(PRIMUS_ARGS_DEFAULTS))
    except BaseException as e:  # noqa: B902
        fail("megatron validate_args with Primus's ROCm checks (after Primus's runtime)", e)
    tok = None
    try:
        ptok = importlib.import_module("primus.backends.megatron.training.tokenizer.tokenizer")
        if args.tokenizer_type in getattr(ptok, "CUSTOM_TOKENIZER_TYPES", ()):
            tok = ptok  # Primus's build_tokenizer (setup patch) pads these types itself
    except ImportError:
        pass
    return args, tok


# How many global batches the digest covers (tasks.digestBatches).
DIGEST_BATCHES = 8


def helpers_cpp(tree):
    """Megatron's compiled dataset helpers: the tree's own build when there is one, else helpers.cpp
    compiled the way its Makefile does (g++ and pybind11, which Megatron needs at run time too)."""
    import importlib.util
    import subprocess
    import sysconfig
    import tempfile
    name = "megatron.core.datasets.helpers_cpp"
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    src = os.path.join(tree, "megatron", "core", "datasets", "helpers.cpp")
    inc = subprocess.check_output([sys.executable, "-m", "pybind11", "--includes"], text=True).split()
    so = os.path.join(tempfile.mkdtemp(prefix="rival-helpers-"), "helpers_cpp" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    subprocess.run(["g++", "-O3", "-Wall", "-shared", "-std=c++17", "-fPIC"] + inc + [src, "-o", so],
                   check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    spec = importlib.util.spec_from_file_location(name, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def gpt_config(args, blend, per_split, split):
    """The GPTDatasetConfig of args' data settings, with a stand-in tokenizer (GPTDataset asks it only
    for the ids its masks use) and a fresh cache folder."""
    import tempfile
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig

    class Tokenizer:
        vocab_size = args.padded_vocab_size if getattr(args, "padded_vocab_size", None) else 32000
        eod = 0
        pad = -1
        unique_identifiers = {"class": "preflight"}

    return GPTDatasetConfig(
        random_seed=args.seed, sequence_length=args.seq_length, blend=blend, blend_per_split=per_split, split=split,
        path_to_cache=tempfile.mkdtemp(prefix="rival-preflight-cache-"), tokenizer=Tokenizer(),
        reset_position_ids=args.reset_position_ids, reset_attention_mask=args.reset_attention_mask,
        eod_mask_loss=args.eod_mask_loss, mmap_bin_files=args.mmap_bin_files,
    )


def samples_of(tree, args):
    """Prints the SHA-256 of the first samples Megatron's pretraining data path reads for args
    (see the module's doc); nothing when the dataset is not there yet."""
    import hashlib
    import json
    given = [p for k in ("data_path", "train_data_path") for p in (getattr(args, k, None) or []) if isinstance(p, str)]
    if not any(os.path.isfile(p + ".idx") for p in given):
        return  # no dataset here: nothing to digest
    try:
        # Megatron's own reading of --data-path or the per-split paths (Primus's train_data_path).
        from megatron.training.utils import get_blend_and_blend_per_split
        blend, per_split = get_blend_and_blend_per_split(args)
    except BaseException as e:  # noqa: B902
        fail("Megatron's data paths", e)
    train_blend = blend if blend is not None else (per_split or [None])[0]
    paths = list(train_blend[0]) if train_blend else []
    if not paths or not all(os.path.isfile(p + x) for p in paths for x in (".idx", ".bin")):
        return
    try:
        import numpy
        helpers_cpp(tree)
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset
        pystubs.skip_package_init("megatron.training.datasets", os.path.join(tree, "megatron", "training", "datasets"))
        from megatron.training.datasets.data_samplers import MegatronPretrainingSampler

        gbs = args.global_batch_size
        total = args.train_iters * gbs
        n = min(DIGEST_BATCHES * gbs, total)
        config = gpt_config(args, blend, per_split, args.split)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [total, 0, 0], lambda: True, config).build()
        dp, mbs = args.data_parallel_size, args.micro_batch_size
        samplers = [iter(MegatronPretrainingSampler(len(train), 0, mbs, r, dp)) for r in range(dp)]
        h, done = hashlib.sha256(), 0
        while done < n:
            for it in samplers:
                for idx in next(it):
                    text, _ = train._query_document_sample_shuffle_indices(idx)
                    h.update(numpy.asarray(text, dtype="<i8").tobytes())
                    done += 1
    except BaseException as e:  # noqa: B902
        fail("Megatron's GPTDataset over the run's data", e)
    print("preflight samples: " + json.dumps({"samples": done, "sha256": h.hexdigest()}))


def held_out_of(tree, args, wrapper, prefix, n):
    """Prints the SHA-256 of the held-out sequences the run's evaluation reads: the first n of the view
    rival_megatron.py (wrapper, the file the run executes) builds over prefix with Megatron's own
    GPTDataset, each as little-endian int64, as Rival digests its held-out set; nothing before Rival
    wrote the set. Each evaluation must read exactly those n: eval_iters x the evaluation's global batch."""
    import hashlib
    import importlib.util
    eval_gbs = getattr(args, "eval_global_batch_size", None) or args.global_batch_size
    if args.eval_iters * eval_gbs != n:
        fail("Megatron's evaluation", ValueError(
            "--eval-iters %d x evaluation batch %d = %d samples per evaluation, not the %d held-out sequences"
            % (args.eval_iters, eval_gbs, args.eval_iters * eval_gbs, n)))
    if not os.path.isfile(prefix + ".idx"):
        return  # Rival writes the set just before the run
    try:
        import numpy
        helpers_cpp(tree)
        spec = importlib.util.spec_from_file_location("rival_megatron", wrapper)
        rival_megatron = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rival_megatron)
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset
        evals = args.train_iters // args.eval_interval + 1
        builder = BlendedMegatronDatasetBuilder(GPTDataset, [args.train_iters * args.global_batch_size, evals * n, 0],
                                                lambda: True, gpt_config(args, None, [None, ([prefix], None), None], None))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            view = rival_megatron.held_out(builder, BlendedMegatronDatasetBuilder.build, prefix, n)
        pystubs.skip_package_init("megatron.training.datasets", os.path.join(tree, "megatron", "training", "datasets"))
        from megatron.training.datasets.data_samplers import MegatronPretrainingSampler
        # The first two evaluations, as Megatron's sampler hands the view out rank by rank: the
        # second must read the first's sequences again.
        dp = args.data_parallel_size
        mbs = getattr(args, "eval_micro_batch_size", None) or args.micro_batch_size
        samplers = [iter(MegatronPretrainingSampler(len(view), 0, mbs, r, dp)) for r in range(dp)]
        digests = []
        for _ in range(min(evals, 2)):
            h, done = hashlib.sha256(), 0
            while done < n:
                for it in samplers:
                    for idx in next(it):
                        h.update(numpy.asarray(view.text(idx), dtype="<i8").tobytes())
                        done += 1
            digests.append(h.hexdigest())
    except BaseException as e:  # noqa: B902
        fail("Megatron's GPTDataset over Rival's held-out set", e)
    if len(set(digests)) != 1:
        fail("Megatron's evaluation", ValueError("its second evaluation reads other held-out sequences (sha256 %s) than its first (%s)" % (digests[1], digests[0])))
    print("preflight held-out: " + json.dumps({"samples": n, "sha256": digests[0]}))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("mega", "prim"):
        sys.exit(__doc__)
    # Without multistorageclient's stand-in Megatron reads the local dataset files itself.
    pystubs.STUBBED = tuple(n for n in pystubs.STUBBED if n != "multistorageclient")
    pystubs.install()
    if sys.argv[1] == "mega":
        held = None
        if len(sys.argv) > 8 and sys.argv[4] == "--held-out":
            held = sys.argv[5:8]
            del sys.argv[4:8]
        if len(sys.argv) < 5 or sys.argv[4] != "--":
            sys.exit(__doc__)
        tree, world, argv = sys.argv[2], int(sys.argv[3]), sys.argv[5:]
        arguments, tree = megatron(tree)
        args, cfg = check_megatron(arguments, argv, world)
        ran(megatron_tree=tree)
        effective_of(args, cfg)
        samples_of(tree, args)
        if held:
            held_out_of(tree, args, held[0], held[1], int(held[2]))
        print("preflight ok: megatron %s: %d arguments, world %d, TP %d PP %d DP %d, %s" % (
            tree, len(argv), world, args.tensor_model_parallel_size, args.pipeline_model_parallel_size,
            args.data_parallel_size, type(cfg).__name__))
        return
    overrides = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    argv = sys.argv[:sys.argv.index("--")] if "--" in sys.argv else sys.argv
    if len(argv) != 6:
        sys.exit(__doc__)
    primus_tree, mtree, world, exp = argv[2], argv[3], int(argv[4]), argv[5]
    os.environ["WORLD_SIZE"] = str(world)
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    primus_tree = resolve(primus_tree, "primus/core/config/primus_config.py")
    sys.path.insert(0, primus_tree)
    torch_custom_ops()
    arguments, mtree = megatron(mtree)
    args, tok = primus_runtime(exp, mtree, arguments, overrides)
    try:
        tcfg = arguments.core_transformer_config_from_args(args)
    except BaseException as e:  # noqa: B902
        fail("megatron TransformerConfig (after Primus's runtime)", e)
    ran(megatron_tree=mtree, primus_tree=primus_tree)
    effective_of(args, tcfg, tok)
    samples_of(mtree, args)
    print("preflight ok: primus %s + megatron %s: %s, world %d, TP %d PP %d DP %d, %s" % (
        primus_tree, mtree, os.path.basename(exp), world, args.tensor_model_parallel_size,
        args.pipeline_model_parallel_size, args.data_parallel_size, type(tcfg).__name__))

if __name__ == "__main__":
    main()
