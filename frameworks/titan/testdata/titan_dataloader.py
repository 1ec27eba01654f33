"""rival_titan.build_dataloader through TorchTitan's own ParallelAwareDataloader, on the host's torch.

    python3 titan_dataloader.py SCRIPT_DIR TORCHTITAN_TREE CONFIG_JSON SEQ_LEN MBS DP_WORLD COUNT OUT

SCRIPT_DIR holds rival_titan.py; TORCHTITAN_TREE is a pinned TorchTitan checkout whose
torchtitan/components/dataloader.py is loaded as it is. The host's torch (Debian's 1.13) lacks the two
things that module imports besides torch.utils.data: torch.distributed.checkpoint.stateful's Stateful
protocol (stood in by an empty class) and torchdata's StatefulDataLoader, a subclass of torch's
DataLoader that adds state_dict (served by torch's DataLoader itself). One dataloader per rank of a
DP_WORLD-rank run yields batches as TorchTitan's trainer receives them; the script writes the first COUNT
samples in global order (micro-batch step by step, rank by rank) as little-endian int64 to OUT.
"""
import json
import logging
import os
import sys
import types


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def main(argv):
    script_dir, tree, cfg_path = argv[1:4]
    seq_len, mbs, world, count = map(int, argv[4:8])
    out = argv[8]
    sys.path.insert(0, script_dir)
    import rival_titan  # torchtitan is not importable yet, so nothing registers
    import torch
    import torch.utils.data

    class Stateful:
        pass

    module("torch.distributed.checkpoint", __path__=[])
    module("torch.distributed.checkpoint.stateful", Stateful=Stateful)
    module("torchdata", __path__=[])
    module("torchdata.stateful_dataloader", StatefulDataLoader=torch.utils.data.DataLoader)
    # The package's __init__ imports the quantization converters (torch 2 APIs); the dataloader module
    # needs only its folders and the logger.
    pkg = os.path.join(tree, "torchtitan")
    module("torchtitan", __path__=[pkg])
    module("torchtitan.components", __path__=[os.path.join(pkg, "components")])
    module("torchtitan.tools", __path__=[os.path.join(pkg, "tools")])
    module("torchtitan.tools.logging", logger=logging.getLogger("torchtitan"))
    from torchtitan.components.dataloader import ParallelAwareDataloader

    with open(cfg_path) as f:
        cfg = json.load(f)
    job = types.SimpleNamespace(training=types.SimpleNamespace(seq_len=seq_len, local_batch_size=mbs))
    loaders = []
    for rank in range(world):
        dl = rival_titan.build_dataloader(cfg, world, rank, job)
        assert isinstance(dl, ParallelAwareDataloader), type(dl)
        loaders.append(iter(dl))
    with open(out, "wb") as f:
        done = 0
        while done < count:
            for it in loaders:
                inputs, labels = next(it)
                x = inputs["input"]
                assert x.shape == (mbs, seq_len) and labels.shape == (mbs, seq_len), (x.shape, labels.shape)
                assert torch.equal(x[:, 1:], labels[:, :-1]), "labels are the inputs shifted by one"
                for row in torch.cat([x, labels[:, -1:]], dim=1):
                    if done < count:
                        f.write(row.numpy().astype("<i8").tobytes())
                        done += 1


if __name__ == "__main__":
    main(sys.argv)
