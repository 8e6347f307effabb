"""`j0 image`: the article's image (vLLM's base image plus the overlay), its build step that runs
inside the base image on the standard library alone, its smoke checks and its identity."""

from typing import Any

# The face other commands use (issue 32), resolved on first use: the image's default tag
# (default_tag) and its manifest's type (ImageManifest; torch_cuda_of, doctor's part of it). The
# wheel index the build step asks is the engine floor's (j0.engine.source.wheel_index).
FACE = ("default_tag", "ImageManifest", "torch_cuda_of")


def __getattr__(name: str) -> Any:
    if name in ("ImageManifest", "torch_cuda_of"):
        from j0.image import manifest

        return getattr(manifest, name)
    if name == "default_tag":
        from j0.image.build import default_tag

        return default_tag
    raise AttributeError(f"module 'j0.image' has no attribute {name!r}")
