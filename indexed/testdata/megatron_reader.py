"""Independent reader for the Megatron indexed dataset format (index version 1).

Written for Rival's compatibility test from the format description: it maps
.idx and .bin with numpy the way Megatron's reader does, checks the layout,
and compares every token and document boundary with DOCS.json.

usage: megatron_reader.py PREFIX DOCS.json
Prints "ok sequences=S documents=D tokens=T" or exits non-zero naming the
first difference.
"""

import json
import struct
import sys

import numpy

MAGIC = b"MMIDIDX\x00\x00"
DTYPES = {1: numpy.uint8, 2: numpy.int8, 3: numpy.int16, 4: numpy.int32,
          5: numpy.int64, 6: numpy.float64, 7: numpy.float32, 8: numpy.uint16}


def fail(msg):
    sys.exit("megatron_reader: " + msg)


def main():
    prefix, docs_path = sys.argv[1], sys.argv[2]
    with open(docs_path) as f:
        spec = json.load(f)
    with open(prefix + ".idx", "rb") as f:
        if f.read(9) != MAGIC:
            fail("bad magic")
        if struct.unpack("<Q", f.read(8))[0] != 1:
            fail("bad version")
        dtype = DTYPES[struct.unpack("<B", f.read(1))[0]]
        s = struct.unpack("<Q", f.read(8))[0]
        d = struct.unpack("<Q", f.read(8))[0]
        offset = f.tell()
    if numpy.dtype(dtype).name != spec["dtype"]:
        fail("dtype %s, want %s" % (numpy.dtype(dtype).name, spec["dtype"]))
    idx = numpy.memmap(prefix + ".idx", mode="r", order="C")
    lengths = numpy.frombuffer(idx, dtype=numpy.int32, count=s, offset=offset)
    pointers = numpy.frombuffer(idx, dtype=numpy.int64, count=s, offset=offset + lengths.nbytes)
    doc_indices = numpy.frombuffer(idx, dtype=numpy.int64, count=d,
                                   offset=offset + lengths.nbytes + pointers.nbytes)
    if offset + lengths.nbytes + pointers.nbytes + doc_indices.nbytes != len(idx):
        fail("index size mismatch")
    binary = numpy.memmap(prefix + ".bin", mode="r", order="C")

    docs = spec["docs"]
    if d != len(docs) + 1:
        fail("document index count %d, want %d" % (d, len(docs) + 1))
    seq, tokens = 0, 0
    for j, doc in enumerate(docs):
        if doc_indices[j] != seq:
            fail("document_indices[%d] = %d, want %d" % (j, doc_indices[j], seq))
        if not doc:
            continue
        got = numpy.frombuffer(binary, dtype=dtype, count=int(lengths[seq]), offset=int(pointers[seq]))
        if got.tolist() != doc:
            fail("sequence %d differs: %s... want %s..." % (seq, got[:8].tolist(), doc[:8]))
        seq += 1
        tokens += len(doc)
    if s != seq or doc_indices[-1] != seq:
        fail("sequence count %d, last document index %d, want %d" % (s, doc_indices[-1], seq))
    if tokens * numpy.dtype(dtype).itemsize != len(binary):
        fail(".bin holds %d bytes, documents need %d" % (len(binary), tokens * numpy.dtype(dtype).itemsize))
    print("ok sequences=%d documents=%d tokens=%d" % (s, d - 1, tokens))


if __name__ == "__main__":
    main()
