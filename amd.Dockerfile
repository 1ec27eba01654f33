# Rival's AMD image: AMD's Primus training image (ROCm, PyTorch, Megatron-LM,
# TorchTitan and Primus, validated together by AMD) plus only what Rival's
# entry scripts need. Built through the Engine API by `mage image:amd`; its
# cache key is the build context's digest plus the base image's digest.
# IMAGE_BASE overrides the base: a registry mirror, or a local test image.
# Why this tag: docs/containers.md.
ARG IMAGE_BASE=rocm/primus:v26.2
FROM ${IMAGE_BASE}
ARG IMAGE_BASE

# Training logs must reach Rival line by line as they are printed (step
# timing, progress), and entry scripts run from a mounted output folder that
# must not fill with __pycache__.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RIVAL_PLATFORM=amd

# Runs mount the dataset, the output folder and the entry scripts below here.
WORKDIR /rival

LABEL org.opencontainers.image.title="rival-amd" \
      org.opencontainers.image.description="Rival benchmark image for AMD Instinct GPUs" \
      rival.platform="amd" \
      rival.image-base="${IMAGE_BASE}"
