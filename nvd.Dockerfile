# Rival's NVIDIA image: NVIDIA's NeMo Framework image (CUDA, PyTorch,
# Megatron-Core, Transformer Engine, NeMo and Megatron-Bridge, validated
# together by NVIDIA) plus only what Rival's entry scripts need. Built
# through the Engine API by `mage image:nvd`; its cache key is the build
# context's digest plus the base image's digest.
# IMAGE_BASE overrides the base: a registry mirror, or a local test image.
# Why this tag: docs/containers.md.
ARG IMAGE_BASE=nvcr.io/nvidia/nemo:26.02
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

# TorchTitan for the titan framework: nvcr.io/nvidia/nemo:26.02 ships none. Release 0.2.0 is the
# version frameworks/titan writes its job config for (spec.Pins, checked against
# frameworks/facts/torchtitan_v0.2.0.json). pip reads the image's configured package index; runs
# never reach the network. Every package the image already has is a constraint (name==version from
# `pip list --format=freeze`, which also writes packages installed from files or URLs that way;
# editable trees such as Megatron-Bridge are left out, pip refuses them as constraints), so pip adds
# TorchTitan's missing dependencies and changes none of NeMo's, PyTorch included. The build stops
# if `pip check` reports a broken requirement the base image did not already have, if the version
# is not 0.2.0, or if `torchrun -m torchtitan.train`'s module cannot be imported.
RUN python -m pip list --format=freeze --exclude-editable > /tmp/rival-constraints.txt && \
    { python -m pip check > /tmp/rival-check-before || true; } && \
    python -m pip install --no-cache-dir -c /tmp/rival-constraints.txt "torchtitan==0.2.0" && \
    { python -m pip check > /tmp/rival-check-after || true; } && \
    if grep -vxF -f /tmp/rival-check-before /tmp/rival-check-after | grep -v '^No broken requirements found' ; then \
        echo "installing torchtitan broke the requirements above (pip check)" >&2; exit 1; \
    fi && \
    python -c "import sys, importlib.metadata as m; \
sys.exit('torchtitan ' + m.version('torchtitan') + ' is not 0.2.0' if m.version('torchtitan') != '0.2.0' else None)" && \
    python -c "import torchtitan.train" && \
    rm /tmp/rival-constraints.txt /tmp/rival-check-before /tmp/rival-check-after
