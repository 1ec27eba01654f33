"""Runs Megatron-Bridge's own configuration code on every nemo launch Rival builds.

Needs the upstream trees of one stack's NeMo image, given by environment variables (the tests skip
without them):
  RIVAL_BRIDGE_TREE    a Megatron-Bridge checkout at the tag the image ships (v0.5.0 or v0.3.0)
  RIVAL_MEGATRON_TREE  the Megatron-LM commit Bridge pins as 3rdparty/Megatron-LM (d0b3b775 or b0cc2706)
Run with a python3 the trees accept (3.12 or later for v0.5.0) with PyYAML, packaging and NumPy;
PyTorch is stubbed (frameworks/facts/pystubs.py):
  RIVAL_BRIDGE_TREE=... RIVAL_MEGATRON_TREE=... python3 -m unittest discover -s frameworks/nemo/bridgecheck -v

For each matrix cell of the tree's Bridge release (../testdata/matrix/bridge-<version>/*.json, written
by go test ./frameworks/nemo -run TestMatrix -update) the entry script's build_config builds the
ConfigContainer, Bridge's runtime_config_update applies mixed precision and runs
ConfigContainer.validate with the cell's world size, and Megatron Core's OptimizerParamScheduler is
built from the result as Bridge's optimizer setup builds it."""
import contextlib
import glob
import io
import json
import math
import os
import sys
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BRIDGE = os.environ.get("RIVAL_BRIDGE_TREE")
MEGATRON = os.environ.get("RIVAL_MEGATRON_TREE")


def load_version(tree, rel):
    path = os.path.join(tree, rel)
    ns = {"__file__": path}  # Bridge 0.5.0's package_info asks git for a hash beside it
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), rel, "exec"), ns)
    return ns["__version__"]


MATRIX = None
if BRIDGE and MEGATRON:
    # The cells Rival writes for this tree's Bridge release.
    MATRIX = os.path.join(HERE, "..", "testdata", "matrix",
                          "bridge-" + load_version(BRIDGE, "src/megatron/bridge/package_info.py").split("+")[0])
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, os.path.join(HERE, "..", "..", "facts"))
    import pystubs as stubs

    stubs.install()
    stubs.add_trees(BRIDGE, MEGATRON)
    import rival_nemo


class _Optimizer:
    """What OptimizerParamScheduler touches: the parameter groups."""

    def __init__(self):
        self.param_groups = [{}]


def cells():
    out = sorted(glob.glob(os.path.join(MATRIX, "*.json")))
    if not out:
        raise AssertionError(f"no matrix cells under {MATRIX}: run go test ./frameworks/nemo -run TestMatrix -update")
    return out


def matrix_name():
    return os.path.relpath(MATRIX, os.path.join(HERE, ".."))


def rewrites():
    """Whether the tree's Bridge rewrites a warm-up as long as training and sequence parallelism at
    TP 1 instead of refusing them (0.5.0 and later)."""
    v = tuple(int(x) for x in os.path.basename(MATRIX or "bridge-0.0.0").split("-", 1)[1].split(".")[:2])
    return v >= (0, 5)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def validated(doc, world):
    """Bridge's ConfigContainer for doc after Bridge's own runtime update and validation."""
    from megatron.bridge.training.config import runtime_config_update

    os.environ["WORLD_SIZE"] = str(world)
    cfg = rival_nemo.build_config(json.loads(json.dumps(doc)))
    runtime_config_update(cfg)
    return cfg


def scheduler(cfg):
    from megatron.bridge.training.optim import _get_scheduler

    return _get_scheduler(cfg.optimizer, cfg.scheduler, _Optimizer())


@unittest.skipUnless(BRIDGE and MEGATRON, "set RIVAL_BRIDGE_TREE and RIVAL_MEGATRON_TREE to upstream checkouts")
class BridgeValidatesEveryCell(unittest.TestCase):
    def test_every_cell(self):
        for path in cells():
            name = os.path.basename(path)
            with self.subTest(cell=name):
                c = load(path)
                cfg = validated(c["config"], c["world_size"])
                tp = cfg.model.tensor_model_parallel_size
                pp = cfg.model.pipeline_model_parallel_size
                self.assertEqual(cfg.data_parallel_size, c["world_size"] // (tp * pp))
                self.assertEqual(cfg.model.seq_length, cfg.dataset.sequence_length)
                self.assertEqual(cfg.rng.seed, c["seed"])
                self.assertEqual(cfg.dataset.random_seed, c["seed"])
                sch = scheduler(cfg)
                self.assertEqual(sch.max_lr, cfg.optimizer.lr)
                prec = c["config"]["mixed_precision"]
                self.assertEqual(cfg.model.bf16, prec.get("bf16", False))
                self.assertEqual(cfg.model.fp8, prec.get("fp8"))
                self.assertEqual(cfg.ddp.overlap_grad_reduce, c["config"]["ddp"]["overlap_grad_reduce"])
                # The fairness settings survive Bridge's runtime update as written (spec.Fairness):
                # mixed precision copies its grad_reduce_in_fp32 onto ddp, overlap needs the
                # distributed optimizer, the attention backend is Megatron Core's enum member.
                self.assertTrue(cfg.ddp.overlap_grad_reduce and cfg.ddp.overlap_param_gather)
                self.assertTrue(cfg.ddp.use_distributed_optimizer and cfg.optimizer.use_distributed_optimizer)
                self.assertTrue(cfg.ddp.grad_reduce_in_fp32)
                self.assertEqual(cfg.model.attention_backend.name, "auto")
                self.assertFalse(cfg.model.gradient_accumulation_fusion)
                self.assertFalse(cfg.dataset.eod_mask_loss)
                self.assertEqual(cfg.dataset.num_workers, 2)
                self.assertTrue(cfg.dataset.persistent_workers)
                # No evaluation, read where this release reads it (ValidationConfig from 0.5.0).
                evals = cfg.validation if "validation" in c["config"] else cfg.train
                self.assertEqual(evals.eval_iters, 0)
                self.assertEqual(evals.eval_interval, cfg.train.train_iters)
                if "validation" in c["config"]:
                    self.assertIsNone(cfg.train.eval_iters, "the deprecated train field stays unset")
                # Llama 3.1's RoPE scaling reaches the provider the release builds it with.
                scaled = rival_nemo.bridge_rope_scaling(cfg.model)
                if c["config"]["model"].get("rope_scaling") or "scale_factor" in c["config"]["model"]:
                    self.assertEqual((scaled["rope_scaling"], scaled["rope_scaling_low_freq_factor"],
                                      scaled["rope_scaling_high_freq_factor"], scaled["rope_scaling_original_positions"]),
                                     (8.0, 1.0, 4.0, 8192))
                else:
                    self.assertEqual(scaled["rope_scaling"], 1.0)
                window = c["config"]["model"]["window_size"]
                self.assertEqual(cfg.model.window_size, None if window is None else tuple(window))
        print(f"\nBridge validated {len(cells())} cells from {matrix_name()}", file=sys.stderr)

    def test_check_mode(self):
        """The entry script's --check runs the same validation and refuses a bad configuration."""
        import tempfile

        c = load(os.path.join(MATRIX, "mistral-sl8192.json"))
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "good.json")
            with open(good, "w", encoding="utf-8") as f:
                json.dump(c["config"], f)
            os.environ["WORLD_SIZE"] = str(c["world_size"])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(rival_nemo.main(["--config", good, "--ran", os.path.join(d, "ran.json"), "--check"]), 0)
            self.assertFalse(os.path.exists(os.path.join(d, "ran.json")), "--check records nothing")
            self.assertIn("preflight ok: megatron-bridge configuration valid for", out.getvalue().splitlines()[-1])
            self.assertNotIn("preflight samples:", out.getvalue(), "no dataset here: nothing to digest")
            c["config"]["optimizer"]["min_lr"] = 1.0
            bad = os.path.join(d, "bad.json")
            with open(bad, "w", encoding="utf-8") as f:
                json.dump(c["config"], f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(rival_nemo.main(["--config", bad, "--ran", os.path.join(d, "ran.json"), "--check"]), 1)
            last = out.getvalue().splitlines()[-1]
            self.assertTrue(last.startswith("preflight failed: megatron-bridge configuration: AssertionError"), last)

    def test_warmup_is_megatrons_formula(self):
        """lr at iteration k of the warm-up is lr·k/warmup (Megatron's), not NeMo 2's lr·(k+1)/(warmup+1)."""
        c = load(os.path.join(MATRIX, "llama-base.json"))
        cfg = validated(c["config"], c["world_size"])
        sch = scheduler(cfg)
        lr, warm, gbs = cfg.optimizer.lr, cfg.scheduler.lr_warmup_iters, cfg.train.global_batch_size
        for k in (1, 2, warm // 2, warm):
            sch.num_steps = k * gbs  # Bridge's train loop steps the scheduler by the global batch
            self.assertTrue(math.isclose(sch.get_lr({}), lr * k / warm, rel_tol=1e-12), k)
        # After the warm-up: cosine from lr to min_lr, reaching min_lr at train_iters.
        sch.num_steps = cfg.train.train_iters * gbs
        self.assertTrue(math.isclose(sch.get_lr({}), cfg.optimizer.min_lr, rel_tol=1e-12))

    def test_seed_reaches_model_init(self):
        """Bridge seeds torch (model init) with rng.seed = SEED, not a constant."""
        from megatron.bridge.training import initialize

        for path in (os.path.join(MATRIX, "llama-base.json"), os.path.join(MATRIX, "qwen-tp4pp2.json")):
            c = load(path)
            cfg = validated(c["config"], c["world_size"])
            stubs.RECORD.add("torch.manual_seed")
            stubs.CALLS.clear()
            initialize._set_random_seed(cfg.rng.seed, cfg.rng.data_parallel_random_init, cfg.rng.te_rng_tracker,
                                        cfg.rng.inference_rng_tracker, pg_collection=types.SimpleNamespace(pp=None, dp=None, tp=None))
            self.assertEqual([a for a, _ in stubs.CALLS["torch.manual_seed"]], [(c["seed"],)])
        # No other seeding on the pretrain path: setup, pretrain, train and initialize call torch's
        # seeding only through _set_random_seed(rng_config.seed, ...).
        src = os.path.join(BRIDGE, "src", "megatron", "bridge", "training")
        for name in ("setup.py", "pretrain.py", "train.py", "initialize.py", "gpt_step.py"):
            with open(os.path.join(src, name), encoding="utf-8") as f:
                text = f.read()
            for needle in ("manual_seed(", "_set_random_seed("):
                for line in [ln.strip() for ln in text.splitlines() if needle in ln and not ln.strip().startswith("def ")]:
                    self.assertTrue(line.startswith("torch.manual_seed(seed)") or line.startswith("tensor_parallel.model_parallel_cuda_manual_seed(")
                                    or line.startswith("_set_random_seed("), f"{name}: {line}")

    def test_ran_reads_the_installed_versions(self):
        r = rival_nemo.ran()
        self.assertEqual(r["framework"], "megatron-bridge")
        self.assertEqual(r["version"], load_version(BRIDGE, "src/megatron/bridge/package_info.py"))
        self.assertEqual(r["megatron_core"], load_version(MEGATRON, "megatron/core/package_info.py"))

    def test_negative_controls(self):
        base = load(os.path.join(MATRIX, "llama-base.json"))
        controls = [
            ("unknown field", lambda d: d["model"].__setitem__("num_layer", 32), ValueError),
            ("min_lr above lr", lambda d: d["optimizer"].__setitem__("min_lr", 1e-3), AssertionError),
            ("min_lr as a string", lambda d: d["optimizer"].__setitem__("min_lr", "3e-05"), TypeError),
            ("TP that does not divide the world", lambda d: d["model"].__setitem__("tensor_model_parallel_size", 3), AssertionError),
            ("sequence lengths differ", lambda d: d["dataset"].__setitem__("seq_length", 4096), AssertionError),
        ]
        if not rewrites():
            controls += [
                ("warm-up as long as training", lambda d: d["scheduler"].__setitem__("lr_warmup_iters", 500), AssertionError),
                ("sequence parallel at TP 1", lambda d: d["model"].__setitem__("sequence_parallel", True), ValueError),
            ]
        for name, edit, error in controls:
            with self.subTest(control=name):
                doc = json.loads(json.dumps(base["config"]))
                edit(doc)
                with self.assertRaises(error):
                    scheduler(validated(doc, base["world_size"]))
        if rewrites():
            self.what_bridge_rewrites(base)

    def what_bridge_rewrites(self, base):
        """Bridge 0.5.0 no longer refuses two settings Rival never writes: it caps a warm-up as long as
        training one step below the decay (with a warning) and turns sequence parallelism off at TP 1.
        Rival's own refusals (Build: WARMUP_STEPS < TRAIN_ITERS; sequence parallelism only with TP > 1)
        keep both stacks on the schedule and model the launch names."""
        import warnings

        doc = json.loads(json.dumps(base["config"]))
        doc["scheduler"]["lr_warmup_iters"] = doc["train"]["train_iters"]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            cfg = validated(doc, base["world_size"])
        self.assertEqual(cfg.scheduler.lr_warmup_steps, cfg.scheduler.lr_decay_steps - 1)
        self.assertTrue(any("capping lr_warmup_steps" in str(w.message) for w in seen), [str(w.message) for w in seen])
        doc = json.loads(json.dumps(base["config"]))
        doc["model"]["sequence_parallel"] = True
        self.assertFalse(validated(doc, base["world_size"]).model.sequence_parallel)


class EntryScriptWithoutUpstream(unittest.TestCase):
    """What the entry script does before it imports Bridge."""

    def test_arguments(self):
        sys.path.insert(0, os.path.dirname(HERE))
        import rival_nemo as rn

        o = rn.parse(["--config", "/rival/run/rival_nemo.json", "--ran", "/rival/run/rival_nemo_ran.json"])
        self.assertEqual(o.config, "/rival/run/rival_nemo.json")
        with self.assertRaises(SystemExit):
            rn.parse(["--config", "x"])

    def test_sections_match_the_facts(self):
        """The script builds exactly the classes whose fields the facts (and the Go checker) describe."""
        sys.path.insert(0, os.path.dirname(HERE))
        sys.path.insert(0, HERE)
        import extract
        import rival_nemo as rn

        self.assertEqual(rn.SECTIONS, extract.SECTIONS)
        self.assertEqual(rn.OPTIONAL_SECTIONS, extract.OPTIONAL_SECTIONS)
        facts = glob.glob(os.path.join(HERE, "..", "..", "facts", "bridge_*.json"))
        self.assertTrue(facts, "frameworks/facts/bridge_<version>.json")
        for path in facts:
            doc = load(path)
            # A section only some releases have (ValidationConfig from 0.5) is recorded where the
            # tree has it; every other section is the script's.
            self.assertEqual({k: v["class"] for k, v in doc["sections"].items() if k not in extract.OPTIONAL_SECTIONS},
                             {k: m + "." + c for k, (m, c) in rn.SECTIONS.items()}, path)
            for k, v in doc["sections"].items():
                if k in extract.OPTIONAL_SECTIONS:
                    self.assertEqual(v["class"], ".".join(rn.OPTIONAL_SECTIONS[k]), path)

    def test_values(self):
        sys.path.insert(0, os.path.dirname(HERE))
        import rival_nemo as rn

        self.assertEqual(rn._value("model", "window_size", [4096, 0]), (4096, 0))
        self.assertEqual(rn._value("dataset", "blend", [["/d/x"], None]), (["/d/x"], None))
        with self.assertRaises(ValueError):
            rn._value("mixed_precision", "params_dtype", "bf16")


if __name__ == "__main__":
    unittest.main()
