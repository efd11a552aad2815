"""The course's two source articles as data (``labkit/data/sources.toml``, read by
:mod:`~labkit.sources.seeds`), the audit of their claims within each claim's regime
(:mod:`~labkit.sources.claims`, notebook 09) and :func:`articles`, their one-screen introduction
(notebook 00). Not for: measuring (:mod:`labkit.runner`) or weighing advice (:mod:`labkit.guide`).
"""

from . import claims, seeds

__all__ = ["articles", "claims", "seeds"]


def articles() -> list[dict]:
    """Each article: key, file, title, date ("" when it gives none), what it was written for,
    url ("" when the course has none), what it is and what it argues."""
    keys = ("key", "file", "title", "date", "written_for", "url", "about", "argues")
    return [{k: getattr(a, k) for k in keys} for a in seeds.ARTICLES]
