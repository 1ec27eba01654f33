"""Reference writer for the Megatron indexed dataset format (index version 1).

Written for Rival's compatibility test from the format description: it keeps
the builder's bookkeeping the way Megatron's IndexedDatasetBuilder does
(tokens appended to .bin as they come, a list of sequence lengths, a list of
document indices starting at [0], pointers derived from lengths at finalize)
so Rival's Go writer can be compared with it byte for byte.

usage: megatron_builder.py documents DOCS.json OUT_PREFIX   (add_document with lengths)
       megatron_builder.py items     DOCS.json OUT_PREFIX   (add_item tensors + end_document)
       megatron_builder.py merge     DTYPE OUT_PREFIX IN_PREFIX...   (add_index)
DOCS.json: {"dtype": "uint16" | "int32", "docs": [[id, ...], ...]}
"""

import json
import struct
import sys

import numpy

MAGIC = b"MMIDIDX\x00\x00"
CODES = {numpy.uint8: 1, numpy.int8: 2, numpy.int16: 3, numpy.int32: 4,
         numpy.int64: 5, numpy.float64: 6, numpy.float32: 7, numpy.uint16: 8}
BY_NAME = {"uint16": numpy.uint16, "int32": numpy.int32}


class Builder:
    def __init__(self, bin_path, dtype):
        self.out = open(bin_path, "wb")
        self.dtype = dtype
        self.lengths = []
        self.doc_indices = [0]

    def add_item(self, tensor):
        arr = numpy.array(tensor.numpy(), dtype=self.dtype)
        self.out.write(arr.tobytes(order="C"))
        self.lengths.append(arr.size)

    def add_document(self, tokens, lengths):
        arr = numpy.array(tokens, dtype=self.dtype)
        self.out.write(arr.tobytes(order="C"))
        self.lengths.extend(lengths)
        self.doc_indices.append(len(self.lengths))

    def end_document(self):
        self.doc_indices.append(len(self.lengths))

    def add_index(self, prefix):
        dtype, lengths, _, doc_indices = read_index(prefix + ".idx")
        assert dtype == self.dtype, (dtype, self.dtype)
        offset = len(self.lengths)
        self.lengths.extend(lengths)
        self.doc_indices.extend((offset + doc_indices)[1:])
        with open(prefix + ".bin", "rb") as f:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                self.out.write(block)

    def finalize(self, idx_path):
        self.out.close()
        size = numpy.dtype(self.dtype).itemsize
        pointers, ptr = [], 0
        for n in self.lengths:
            pointers.append(ptr)
            ptr += n * size
        with open(idx_path, "wb") as f:
            f.write(MAGIC)
            f.write(struct.pack("<Q", 1))
            f.write(struct.pack("<B", CODES[self.dtype]))
            f.write(struct.pack("<Q", len(self.lengths)))
            f.write(struct.pack("<Q", len(self.doc_indices)))
            f.write(numpy.array(self.lengths, dtype=numpy.int32).tobytes(order="C"))
            f.write(numpy.array(pointers, dtype=numpy.int64).tobytes(order="C"))
            f.write(numpy.array(self.doc_indices, dtype=numpy.int64).tobytes(order="C"))


def read_index(path):
    with open(path, "rb") as f:
        assert f.read(9) == MAGIC
        assert struct.unpack("<Q", f.read(8))[0] == 1
        code = struct.unpack("<B", f.read(1))[0]
        s = struct.unpack("<Q", f.read(8))[0]
        d = struct.unpack("<Q", f.read(8))[0]
        rest = f.read()
    dtype = {v: k for k, v in CODES.items()}[code]
    lengths = numpy.frombuffer(rest, dtype=numpy.int32, count=s)
    pointers = numpy.frombuffer(rest, dtype=numpy.int64, count=s, offset=4 * s)
    doc_indices = numpy.frombuffer(rest, dtype=numpy.int64, count=d, offset=12 * s)
    return dtype, lengths, pointers, doc_indices


def main():
    mode = sys.argv[1]
    if mode == "merge":
        dtype, out = BY_NAME[sys.argv[2]], sys.argv[3]
        b = Builder(out + ".bin", dtype)
        for prefix in sys.argv[4:]:
            b.add_index(prefix)
        b.finalize(out + ".idx")
        return
    with open(sys.argv[2]) as f:
        spec = json.load(f)
    out = sys.argv[3]
    b = Builder(out + ".bin", BY_NAME[spec["dtype"]])
    for doc in spec["docs"]:
        if mode == "documents":
            # preprocess_data.py with no sentence splitting: one length per
            # non-empty document, none for an empty one.
            b.add_document(doc, [len(doc)] if doc else [])
        elif mode == "items":
            import torch
            if doc:
                b.add_item(torch.tensor(doc, dtype=torch.int64))
            b.end_document()
        else:
            sys.exit("unknown mode " + mode)
    b.finalize(out + ".idx")


if __name__ == "__main__":
    main()
