# Rival's AMD image: AMD's Primus training image (ROCm, PyTorch, Megatron-LM,
# TorchTitan and Primus, validated together by AMD) plus only what Rival's
# entry scripts need. Built through the Engine API by `mage image:amd`; its
# cache key is the build context's digest plus the base image's digest.
# IMAGE_BASE overrides the base: the previous stack's image (STACK=previous
# passes it), a registry mirror, or a local test image.
# Why this tag: docs/containers.md.
ARG IMAGE_BASE=rocm/primus:v26.5
FROM ${IMAGE_BASE}
ARG IMAGE_BASE

# Training logs must reach Rival line by line as they are printed (step
# timing, progress), and entry scripts run from a mounted output folder that
# must not fill with __pycache__.
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    RIVAL_PLATFORM=amd

# Primus's run_pretrain.sh pip-installs requirements.txt on every run, and its
# Megatron prepare step builds Megatron's dataset helper and installs
# Emerging-Optimizers in editable mode (frameworks/facts/primus_<tag>.json,
# run_time_installs). Do all of it here, so that a run on a compute node
# without a package index finds everything installed; the environment below
# keeps pip from reaching for an index at run time (an editable reinstall
# then builds from the installed build backend, without isolation). A base
# image without Primus (a local test image) skips the step; the pinned base
# without it stops the build.
RUN if [ -f /workspace/Primus/requirements.txt ]; then \
        cd /workspace/Primus \
        && pip install --no-cache-dir -r requirements.txt \
        && make -C third_party/Megatron-LM/megatron/core/datasets \
        && pip install --no-cache-dir -e third_party/Emerging-Optimizers; \
    elif [ "${IMAGE_BASE#rocm/primus:}" != "${IMAGE_BASE}" ]; then \
        echo "amd.Dockerfile: ${IMAGE_BASE} has no /workspace/Primus/requirements.txt; runs would need a package index at run time" >&2; \
        exit 1; \
    fi
ENV PIP_NO_INDEX=1 \
    PIP_NO_BUILD_ISOLATION=0 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1

# Runs mount the dataset, the output folder and the entry scripts below here.
WORKDIR /rival

LABEL org.opencontainers.image.title="rival-amd" \
      org.opencontainers.image.description="Rival benchmark image for AMD Instinct GPUs" \
      rival.platform="amd" \
      rival.image-base="${IMAGE_BASE}"
