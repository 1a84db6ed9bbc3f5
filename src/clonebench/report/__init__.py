"""Rendering runs into what people read: paper tables (md/LaTeX/CSV), N-system comparisons, the HTML report and
plots. One format module (LaTeX escaping) for every table; statistics come from clonebench.stats."""
