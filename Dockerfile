# posviz as a Hugging Face Docker Space (also runs anywhere with Docker):
#   docker build -t posviz . && docker run --rm -p 8501:8501 posviz
# On a Space the app runs in hosted mode because Spaces set SPACE_ID (README, "Hosted demo").
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# Debian's Chromium renders the SVG and PNG exports (kaleido 1.x); Liberation gives it the usual fonts.
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-liberation \
    && rm -rf /var/lib/apt/lists/*
ENV BROWSER_PATH=/usr/bin/chromium

# Spaces run the container as uid 1000.
RUN useradd -m -u 1000 user

# The packages go into the system site-packages as root, so the app's user cannot change them.
# PyPI's Linux torch wheel is the CUDA build (several GB of nvidia-* packages, no use on a CPU
# Space); PyTorch's CPU index offers 2.13.0+cpu, which satisfies torch==2.13.0 and, as a local
# version of it, is preferred by pip over PyPI's 2.13.0. TORCH_FROM (pip options, split by the
# shell) names that index; a build that cannot reach it mounts a folder holding the wheel and
# names that instead: podman build --volume /opt/wheels:/opt/wheels:ro
# --build-arg TORCH_FROM="--find-links /opt/wheels" (tests/support/container.py does so). torch
# is asked for as +cpu first (its version read from requirements.txt), so that a build that reaches
# neither fails at once instead of falling back to PyPI's CUDA build.
ARG TORCH_FROM="--extra-index-url https://download.pytorch.org/whl/cpu"
COPY requirements.txt /tmp/requirements.txt
RUN torch="torch==$(sed -n 's/^torch==//p' /tmp/requirements.txt)+cpu" \
    && pip install --no-cache-dir --retries 1 $TORCH_FROM "$torch" \
    && pip install --no-cache-dir $TORCH_FROM -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

USER user
ENV HOME=/home/user \
    HF_HOME=/home/user/.cache/huggingface \
    NUMBA_CACHE_DIR=/home/user/.cache/numba \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false
# Hub downloads (HF_HOME) and UMAP's compiled functions (NUMBA_CACHE_DIR) need writable folders.
RUN mkdir -p "$HF_HOME" "$NUMBA_CACHE_DIR" "$HOME/app"

WORKDIR $HOME/app
COPY --chown=user . .
# umap-learn and pynndescent compile their numba functions on first use (a minute on 2 cores):
# one projection here leaves them in NUMBA_CACHE_DIR, so the container's first UMAP is quick. The
# model page's first chart of the bundled model is stored in ~/.cache/posviz, so the container's
# first visitor sees it while torch and the model load (posviz.app.first_paint).
RUN python -c "import numpy as np, posviz; from posviz.analysis.projection import project; \
from posviz.app import first_paint; \
project(np.random.default_rng(0).normal(size=(64, 8)), 'umap'); first_paint.store(posviz.load_model())"

EXPOSE 8501
# slim has no curl: the standard library asks Streamlit's health endpoint (non-2xx raises, exit 1).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=5)"]

CMD ["python", "-m", "streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
