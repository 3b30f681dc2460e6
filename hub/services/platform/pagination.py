"""Pages of long lists (a dataset's prompts, a comparison, the experiments): which slice a page shows, and the
counts a reader needs to walk them all. Every row is on exactly one page; a page past the last one is empty."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_PER_PAGE = 200
MAX_PER_PAGE = 1000
MAX_PAGE = 1_000_000


@dataclass(frozen=True)
class PageRequest:
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE


@dataclass(frozen=True)
class Pagination:
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def start(self) -> int:
        return min((self.page - 1) * self.per_page, self.total)

    @property
    def stop(self) -> int:
        return min(self.start + self.per_page, self.total)

    @property
    def previous_page(self) -> int | None:
        return min(self.page - 1, self.pages) if self.page > 1 else None

    @property
    def next_page(self) -> int | None:
        return self.page + 1 if self.page < self.pages else None

    def as_dict(self) -> dict[str, Any]:
        return {"page": self.page, "per_page": self.per_page, "total": self.total, "pages": self.pages}


def paginate(total: int, request: PageRequest | None) -> Pagination:
    """The page `request` asks for (the first, at the default size, when None) of `total` rows."""
    request = request or PageRequest()
    return Pagination(page=request.page, per_page=request.per_page, total=total)
