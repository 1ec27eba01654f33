"""Megatron Core's own GPT sample order, run on the CPU, for gptorder's tests.

    python3 megatron_order.py TREE HELPERS_SO PYSTUBS_DIR PREFIX OUT SEED SL SAMPLES SPLIT DP MBS DIGEST_SAMPLES

TREE is a Megatron-LM checkout; HELPERS_SO is its megatron/core/datasets/helpers.cpp compiled for this
Python (pybind11). torch and the GPU packages are stand-ins (frameworks/facts/pystubs.py); numpy is real.
The script builds the train split exactly as pretrain_gpt.py does (BlendedMegatronDatasetBuilder over
GPTDataset with GPTDatasetConfig(random_seed=SEED, sequence_length=SL, split=SPLIT), SAMPLES train
samples), which writes Megatron's document, sample and shuffle index .npy files into OUT/cache. Then it
reads the first DIGEST_SAMPLES samples the way training consumes them (MegatronPretrainingSampler for each
of DP data-parallel ranks with micro-batch MBS, micro-batch step by step, rank by rank) through GPTDataset's
own sample query, and writes their tokens as little-endian int64 to OUT/samples.bin. It prints the cache
files as JSON: {"document": path, "sample": path, "shuffle": path}.
"""
import importlib.util
import json
import os
import sys


def main(argv):
    tree, helpers_so, stubs_dir, prefix, out = argv[1:6]
    seed, sl, samples = int(argv[6]), int(argv[7]), int(argv[8])
    split = argv[9]
    dp, mbs, digest_samples = int(argv[10]), int(argv[11]), int(argv[12])

    sys.path.insert(0, stubs_dir)
    import pystubs
    # numpy is real; without multistorageclient Megatron reads the local files itself.
    pystubs.STUBBED = tuple(n for n in pystubs.STUBBED if n not in ("numpy", "multistorageclient"))
    pystubs.install()
    sys.path.insert(0, tree)
    import numpy

    # helpers_cpp, as `make -C megatron/core/datasets` would have placed it.
    spec = importlib.util.spec_from_file_location("megatron.core.datasets.helpers_cpp", helpers_so)
    helpers_cpp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers_cpp)
    sys.modules["megatron.core.datasets.helpers_cpp"] = helpers_cpp

    # megatron/core/__init__.py pulls in the model code (and numpy.dtypes, NumPy >= 1.25); the dataset
    # modules need only the package's folder. parallel_state first, as __init__ imports it, to keep
    # its import cycle with megatron.core.utils in the order upstream runs it.
    pystubs.skip_package_init("megatron", os.path.join(tree, "megatron"))
    pystubs.skip_package_init("megatron.core", os.path.join(tree, "megatron", "core"))
    import megatron.core.parallel_state  # noqa: F401
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    pystubs.skip_package_init("megatron.training", os.path.join(tree, "megatron", "training"))
    pystubs.skip_package_init("megatron.training.datasets", os.path.join(tree, "megatron", "training", "datasets"))
    from megatron.training.datasets.data_samplers import MegatronPretrainingSampler

    class Tokenizer:  # what GPTDatasetConfig and GPTDataset ask of the tokenizer
        vocab_size = 32000
        eod = 2
        pad = -1
        unique_identifiers = {"class": "stand-in"}

    cache = os.path.join(out, "cache")
    config = GPTDatasetConfig(
        random_seed=seed, sequence_length=sl, blend=([prefix], None), split=split, path_to_cache=cache,
        tokenizer=Tokenizer(), reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
        mmap_bin_files=True,
    )
    # get_train_valid_test_num_samples with --eval-iters 0: [train_iters × GBS, 0, 0].
    train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [samples, 0, 0], lambda: True, config).build()
    assert isinstance(train, GPTDataset), type(train)

    with open(os.path.join(out, "samples.bin"), "wb") as f:
        samplers = [iter(MegatronPretrainingSampler(len(train), 0, mbs, r, dp)) for r in range(dp)]
        done = 0
        while done < digest_samples:
            for it in samplers:
                for idx in next(it):
                    text, _ = train._query_document_sample_shuffle_indices(idx)
                    f.write(numpy.asarray(text, dtype="<i8").tobytes())
                    done += 1
        assert done == digest_samples, f"{digest_samples} is not a multiple of DP × MBS = {dp * mbs}"

    files = {}
    for name in os.listdir(cache):
        for kind in ("document", "sample", "shuffle"):
            if name.endswith(f"-GPTDataset-train-{kind}_index.npy"):
                files[kind] = os.path.join(cache, name)
    print(json.dumps(files))


if __name__ == "__main__":
    main(sys.argv)
