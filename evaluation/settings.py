"""The toolkit's settings, read once from `CHATEVAL_*` environment variables (see .env.example)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_DATASETS = Path(__file__).resolve().parent.parent / "datasets"


class ToolkitSettings(BaseSettings):
    """Where datasets and caches live and how large user files may be."""

    model_config = SettingsConfigDict(env_prefix="CHATEVAL_", extra="ignore")

    home: Path = Field(
        default=Path.home() / ".local" / "share" / "chateval",
        description="Folder for fetched/imported datasets and caches.",
    )
    dataset_dirs: list[Path] = Field(
        default_factory=list, description="Extra folders searched for datasets (JSON list)."
    )
    max_line_chars: int = Field(default=20_000, description="Longest accepted response line, in characters.")
    max_file_bytes: int = Field(default=200 * 1024 * 1024, description="Largest accepted response file.")

    @property
    def user_datasets(self) -> Path:
        return self.home / "datasets"

    def dataset_search_path(self) -> list[Path]:
        """Folders searched for datasets, first match wins: extra dirs, user home, the shipped `datasets/`."""
        return [*self.dataset_dirs, self.user_datasets, REPO_DATASETS]


@lru_cache
def get_settings() -> ToolkitSettings:
    return ToolkitSettings()
