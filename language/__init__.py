"""Causal language and pixel modelling: SSA's decoders on WikiText-103, enwik8 and CIFAR-10
sub-pixels, GFSA's GPT-2 fine-tuning, with any registered attention mechanism that can be causal.

Layout:
  tasks.py            the registered task, `config.task = "language.lm"`
  models.py           `Decoder`, the causal LM (`build_decoder`): token embedding or adaptive
                      input, the "decoder" backbone, tied / untied head or adaptive softmax
  adaptive.py         adaptive input embeddings and the adaptive softmax (parts of the LM)
  gpt2.py             GPT-2's model section and Hugging Face GPT-2 checkpoints into a `Decoder`
  backbones/          the backbone registered with `attnbench.nn.backbones`: "decoder"
                      (`decoder.py`: causal pre-LN blocks, ALiBi and 2-D relative positions,
                      the model section's fields, its FLOP formula)
  data/               `corpora.py`: the `Corpus` type, `data_config`, `load` and the official
                      readers (WikiText-103 / -2, PTB, enwik8, CIFAR-10 and Fashion-MNIST
                      pixels); `tokenizers.py`: fairseq's word-level rule and `Dictionary`,
                      GPT-2's byte-level BPE; `standin.py`: the Python-documentation bytes
                      stand-in; `windows.py`: training and sliding-evaluation windows;
                      `distaug.py`: Distribution Augmentation of image sequences
  tokenizer_speed.py  the word-level tokenisation benchmark (`python -m scripts.tokenizer_speed`)
"""
