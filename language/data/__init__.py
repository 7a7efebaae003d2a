"""The language corpora and their model inputs.

Modules:
  corpus      the `Corpus` type every reader returns, and the split names
  corpora     `config.data` (`data_config`), the dispatcher `load` and the readers of the
              official files: WikiText-103 / WikiText-2 and PTB (word level or
              GPT-2 BPE), enwik8, CIFAR-10 sub-pixels, and the Fashion-MNIST pixel stand-in
  tokenizers  fairseq's word-level rule (`tokenize_words`, `Dictionary`, `build_word_level`)
              and GPT-2's byte-level BPE (`GPT2BPE`, `bytes_to_unicode`)
  standin     the byte-level offline stand-in: the Python documentation's reST sources
              (`find_standin_dir`, `python_docs_bytes`, `unigram_bits`)
  windows     training windows and sliding evaluation windows over streams; one window per image
  distaug     Distribution Augmentation of sub-pixel image sequences
"""
