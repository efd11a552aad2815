"""The course's sources as data, and the check of their claims against this run's records.

:mod:`~labkit.sources.seeds` holds the two source articles (in ``shared/seeds/``) restated in the
course's words: what they argue, their comparison and benchmark tables with every figure typed
once, their five project scenarios and their decision flow (which the selection guide offers
too). :mod:`~labkit.sources.claims` turns their performance figures into claims, each with the
regime it was made in, and judges them from measured records without ever claiming more than
the measurement's regime allows (``from labkit.sources import seeds, claims``). Not for:
measuring (:mod:`labkit.runner`), reading or validating results files (:mod:`labkit.results`),
or scoring frameworks for a project (:mod:`labkit.guide`).
"""

from . import claims, seeds

__all__ = ["claims", "seeds"]
