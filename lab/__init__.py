"""The lab: how simhash-pg's defaults were measured, and how to measure them again.

Evaluation on labelled pairs (:mod:`lab.quality`, :mod:`lab.evaluation`,
``simhash-pg eval``), benchmarks (``simhash-pg bench ...``), one-off
experiments behind figures in docs/ and the builder of the bundled sample.

It lives beside the runtime package, not in it: an installed wheel ships
``simhash_pg`` only, and the ``eval`` and ``bench`` commands work from a
checkout of the repository. The lab may import ``simhash_pg``; the runtime
package never imports the lab.
"""
