# Rival's CPU image: for containerized CPU runs of the fsdp framework (the
# engine tests, and hosts that keep PyTorch only in images). There is no
# default base: IMAGE_BASE must name an image with python3, PyTorch and
# numpy, for example one imported from a Debian rootfs with python3-torch
# (container/testdata/make-torch-base.sh builds one).
ARG IMAGE_BASE
FROM ${IMAGE_BASE}
ARG IMAGE_BASE

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RIVAL_PLATFORM=cpu

WORKDIR /rival

LABEL org.opencontainers.image.title="rival-cpu" \
      org.opencontainers.image.description="Rival benchmark image for CPU runs" \
      rival.platform="cpu" \
      rival.image-base="${IMAGE_BASE}"
