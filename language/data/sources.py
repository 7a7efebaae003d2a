"""The official corpora, for `attnbench-data` (`attnbench.data.catalog`): WikiText-103 and
enwik8, listed with their sources and the steps `fetch` prints.
"""

from __future__ import annotations

from attnbench.data import catalog

catalog.listed(
    "wikitext103",
    "WikiText-103 (word level)",
    "181 MB",
    "CC BY-SA 3.0 (Wikipedia text)",
    "https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/",
    {
        "wikitext-103-v1.zip": "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip"
    },
    "wikitext-103",
    ("language/wikitext103.py:preset=paper,source=official",),
    {},
    "unzip wikitext-103-v1.zip into the data root (it makes wikitext-103/wiki.{train,valid,test}"
    ".tokens), or set config.data.dir to that folder",
)
catalog.listed(
    "enwik8",
    "enwik8 (the first 10^8 bytes of an English Wikipedia dump)",
    "36 MB",
    "Wikipedia text (CC BY-SA); the Hutter Prize file",
    "http://mattmahoney.net/dc/textdata.html",
    {"enwik8.zip": "http://mattmahoney.net/dc/enwik8.zip"},
    "",
    ("language/enwik8.py:preset=paper,source=official",),
    {},
    "download enwik8.zip into the data root (the reader checks its 100,000,000 bytes)",
)
