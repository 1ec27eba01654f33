#!/usr/bin/env python3
"""Megatron-LM's pretrain_gpt.py, evaluating Rival's held-out set.

    rival_megatron.py --held-out PREFIX --held-out-samples N PRETRAIN_GPT ARGS...

Megatron's validation reads a shuffled, multi-epoch GPTDataset through an iterator it never restarts,
so each evaluation sees new samples. Rival's held-out set (core.HeldOutName) is one document of
N x seq_length + 1 tokens whose window k (tokens k*SL .. k*SL + SL) is held-out sequence k. This runs
PRETRAIN_GPT unchanged with ARGS, except for the validation split its BlendedMegatronDatasetBuilder
returns: Megatron's own GPTDataset over PREFIX (one epoch, exactly N samples), read through a view that
undoes its shuffle and repeats it, so that every evaluation (eval_iters x global batch = N samples
through Megatron's own sampler) reads windows 0 .. N-1 in order from the first. Loss, masks and the
evaluation loop stay Megatron's: evaluate() sums loss and valid tokens over micro-batches and
data-parallel ranks.

The preflight (facts/preflight.py) builds the same view with held_out() and digests view.text(k) for
k < N; a view whose windows are not k x SL stops the run here. Megatron-Bridge's entry (rival_nemo.py)
imports patch() with repeat=False: Bridge's validation loader samples each epoch afresh.
"""

import dataclasses
import os
import runpy
import sys

USAGE = "usage: rival_megatron.py --held-out PREFIX --held-out-samples N PRETRAIN_GPT ARGS..."


class HeldOutError(Exception):
    """Megatron's dataset over the held-out set does not cut the windows Rival wrote."""


def held_out(builder, build, prefix, n, repeat=True):
    """The held-out view for builder (a BlendedMegatronDatasetBuilder whose sizes[1] is the number of
    validation samples the run will read), built with build (the builder class's own build); None on
    the ranks Megatron builds no dataset on. repeat: the view repeats the n sequences up to sizes[1],
    for a sequential sampler that never restarts (Megatron's); else it holds the n once, for a
    sampler that starts a new epoch over it at every evaluation (Megatron-Bridge's cyclic one)."""
    import numpy
    import torch

    config = dataclasses.replace(builder.config, blend=None, blend_per_split=[None, ([prefix], None), None], split=None)
    ds = build(type(builder)(builder.cls, [None, n, None], builder.is_built_on_rank, config))[1]
    if ds is None:
        return None
    sl = config.sequence_length
    ds._query_document_sample_shuffle_indices(0)  # loads the indices when Megatron maps them lazily
    windows = numpy.asarray(ds.sample_index)
    want = numpy.stack([numpy.zeros(n + 1, dtype=numpy.int64), numpy.arange(n + 1, dtype=numpy.int64) * sl], axis=1)
    if len(ds) != n or windows.shape != want.shape or not numpy.array_equal(windows.astype(numpy.int64), want):
        raise HeldOutError(
            "%s: Megatron's GPTDataset cut %d samples from the held-out set, not the %d windows of %d tokens from k x %d that Rival"
            " wrote; evaluate with a held-out set written for this sequence length and EVAL_SAMPLES" % (prefix, len(ds), n, sl + 1, sl))
    shuffle = numpy.asarray(ds.shuffle_index, dtype=numpy.int64)
    if sorted(shuffle.tolist()) != list(range(n)):
        raise HeldOutError("%s: Megatron's shuffle index over the held-out set is not a permutation of its %d samples" % (prefix, n))
    unshuffle = numpy.empty(n, dtype=numpy.int64)
    unshuffle[shuffle] = numpy.arange(n, dtype=numpy.int64)
    length = max(int(builder.sizes[1] or 0), n) if repeat else n

    class HeldOut(torch.utils.data.Dataset):
        """Held-out sequence i % n, as Megatron's GPTDataset hands it out (tokens, labels, masks)."""

        index_split = ds.index_split  # Megatron's loader picks the validation batch sizes by it

        def __len__(self):
            return length

        def __getitem__(self, i):
            return ds[None if i is None else int(unshuffle[i % n])]

        def text(self, k):
            """The k-th sequence's SL + 1 token ids, as __getitem__(k) reads them."""
            return ds._query_document_sample_shuffle_indices(int(unshuffle[k % n]))[0]

    return HeldOut()


def patch(prefix, n, repeat=True):
    """Makes every BlendedMegatronDatasetBuilder that builds a validation split return the held-out
    view instead (held_out's repeat)."""
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    build = BlendedMegatronDatasetBuilder.build

    def build_with_held_out(self):
        datasets = list(build(self))
        if self.sizes[1]:
            datasets[1] = held_out(self, build, prefix, n, repeat)
        return datasets

    BlendedMegatronDatasetBuilder.build = build_with_held_out


def main(argv):
    if len(argv) < 5 or argv[0] != "--held-out" or argv[2] != "--held-out-samples":
        sys.exit(USAGE)
    prefix, script, rest = argv[1], argv[4], argv[5:]
    try:
        n = int(argv[3])
    except ValueError:
        sys.exit("rival_megatron.py: --held-out-samples %r is not a number\n%s" % (argv[3], USAGE))
    if n < 1 or not os.path.isfile(prefix + ".idx"):
        sys.exit("rival_megatron.py: no held-out set of %d sequences at %s.idx: Rival writes it before training" % (n, prefix))
    # pretrain_gpt.py imports its neighbours (megatron, gpt_builders, model_provider) from its tree.
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    patch(prefix, n)
    sys.argv = [script] + rest
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
