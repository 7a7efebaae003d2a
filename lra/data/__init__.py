"""The LRA datasets, one module per dataset. Each task's data module gives the LRA data-module
API that `lra.tasks` uses (`NUM_CLASSES`, `VOCAB_SIZE`, `data_config()`,
`load(config.data, cache_root) -> (splits, description)`); ListOps has its own entry points
(`ensure_generated`, `load_split`).

Modules:
  listops               ListOps: the official generator's algorithm, the release's TSV
                        reader/writer and the tokenizer
  text                  Text: the IMDB (aclImdb) reader and the Python-docs byte-level stand-in
  retrieval             Retrieval: the AAN pairs' TSV reader/writer and the Python-docs
                        cross-reference stand-in
  image                 Image: grayscale CIFAR-10 as LRA made it, and the Fashion-MNIST stand-in
  pathfinder            Pathfinder / Path-X: the data config, `params_for`, the splits and the
                        cache of generated or official images
  pathfinder_generator  the contour generator (`generate`, `generate_debug`; PATHFINDER32 etc.)
  pathfinder_release    the official release's files (`read_official`, `official_splits`,
                        `write_official`)
  pathfinder_stats      statistics of generated images against the original generator's
                        (`python -m lra.data.pathfinder_stats`)
"""
