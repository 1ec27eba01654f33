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
