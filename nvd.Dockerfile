# Rival's NVIDIA image: NVIDIA's NeMo Framework image (CUDA, PyTorch,
# Megatron-Core, Transformer Engine, NeMo and Megatron-Bridge, validated
# together by NVIDIA) plus only what Rival's entry scripts need. Built
# through the Engine API by `mage image:nvd`; its cache key is the build
# context's digest plus the base image's digest.
# IMAGE_BASE overrides the base: the previous stack's image (STACK=previous
# passes it), a registry mirror, or a local test image.
# Why this tag: docs/containers.md.
ARG IMAGE_BASE=nvcr.io/nvidia/nemo:26.06
FROM ${IMAGE_BASE}
ARG IMAGE_BASE

# Training logs must reach Rival line by line as they are printed (step
# timing, progress), and entry scripts run from a mounted output folder that
# must not fill with __pycache__.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RIVAL_PLATFORM=nvd

# Runs mount the dataset, the output folder and the entry scripts below here.
WORKDIR /rival

LABEL org.opencontainers.image.title="rival-nvd" \
      org.opencontainers.image.description="Rival benchmark image for NVIDIA GPUs" \
      rival.platform="nvd" \
      rival.image-base="${IMAGE_BASE}"

# TorchTitan for the titan framework: the NeMo images ship none. TORCHTITAN_VERSION is the release
# frameworks/titan writes its job config for on the image's stack (core.Pins: 0.2.2 on
# nemo:26.06, 0.2.0 on nemo:26.02, checked against frameworks/facts/torchtitan_v<version>.json);
# the image task passes it with IMAGE_BASE. pip reads the image's configured package index; runs
# never reach the network. Every package the image already has is a constraint (name==version from
# `pip list --format=freeze`, which also writes packages installed from files or URLs that way;
# editable trees such as Megatron-Bridge are left out, pip refuses them as constraints), so pip adds
# TorchTitan's missing dependencies and changes none of NeMo's, PyTorch included. The build stops
# if `pip check` reports a broken requirement the base image did not already have, if the version
# is not the one asked for, or if `torchrun -m torchtitan.train`'s module cannot be imported.
ARG TORCHTITAN_VERSION=0.2.2
RUN python -m pip list --format=freeze --exclude-editable > /tmp/rival-constraints.txt && \
    { python -m pip check > /tmp/rival-check-before || true; } && \
    python -m pip install --no-cache-dir -c /tmp/rival-constraints.txt "torchtitan==${TORCHTITAN_VERSION}" && \
    { python -m pip check > /tmp/rival-check-after || true; } && \
    if grep -vxF -f /tmp/rival-check-before /tmp/rival-check-after | grep -v '^No broken requirements found' ; then \
        echo "installing torchtitan broke the requirements above (pip check)" >&2; exit 1; \
    fi && \
    RIVAL_TT="${TORCHTITAN_VERSION}" python -c "import os, sys, importlib.metadata as m; \
want = os.environ['RIVAL_TT']; got = m.version('torchtitan'); \
sys.exit('torchtitan ' + got + ' is not ' + want if got != want else None)" && \
    python -c "import torchtitan.train" && \
    rm /tmp/rival-constraints.txt /tmp/rival-check-before /tmp/rival-check-after
