"""Official datasets: list them, fetch and check them, and see where the configs read them.

    attnbench-data list                      # every dataset: size, licence, source, configs
    attnbench-data where cifar10             # the folder a config reads it from
    attnbench-data fetch cifar10             # download, check the checksum, arrange
    attnbench-data fetch cifar10 --from ~/Downloads/cifar-10-python.tar.gz
    attnbench-data verify cifar10            # files (manifest) and the reader's split sizes
    attnbench-data fetch wikitext103 --from hf   # the Hugging Face Hub's copy (the hf extra)
    attnbench-data imagenet-val VAL_DIR --devkit ILSVRC2012_devkit_t12.tar.gz [--dry-run]
    attnbench-data markdown > DATA.md        # the catalog as the repository's DATA.md

(or `python -m scripts.data ...`). The data root is `--dir`, else `$ATTNBENCH_DATA`, else
`~/.cache/attnbench` (`attnbench.data.cache.data_root`), the one the configs read when their
`config.data.dir` is empty. `fetch` downloads into `<root>/downloads/` (an interrupted download
resumes), checks the published checksum (or, where none is published, records size and sha256
in the dataset's MANIFEST.json and says so), extracts safely and arranges the files in a
staging folder that replaces the dataset's folder only when complete: a failure leaves the data
root as it was. `verify` checks the manifest, then reads the folder with the project's reader
and compares the split sizes with the official counts, one line per problem (exit status 1 when
any). `imagenet-val` moves ILSVRC-2012's flat validation images into val/<wnid>/ by the devkit's
ground truth (`vision.data.imagenet_val`: checked first, restartable). The datasets are described
in `attnbench.data.catalog`.
"""

from __future__ import annotations

import argparse
import sys

from attnbench import cli
from attnbench.data import catalog, commands


def main(argv=None) -> int:
    parser = cli.ArgumentParser(prog=cli.prog("scripts.data"), description=__doc__.split("\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir", default="", help="the data root (default $ATTNBENCH_DATA or ~/.cache/attnbench)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", parents=[common], help="every dataset a config can read")
    p = sub.add_parser("where", parents=[common], help="the folder a config reads NAME from")
    p.add_argument("name", metavar="NAME")
    p = sub.add_parser("fetch", parents=[common], help="download, check and arrange NAME")
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "--from",
        dest="source",
        metavar="URL_OR_FILE",
        help="a mirror URL, a release file, or hf[:REPO_OR_FOLDER] (the Hugging Face Hub)",
    )
    p = sub.add_parser("verify", parents=[common], help="check NAME's files and split sizes")
    p.add_argument("name", metavar="NAME")
    p.add_argument("folder", nargs="?", metavar="DIR", help="default: where NAME is fetched")
    p = sub.add_parser("imagenet-val", help="move ILSVRC-2012's flat val images into val/<wnid>/")
    p.add_argument("val_dir", metavar="VAL_DIR", help="where ILSVRC2012_img_val.tar was unpacked")
    p.add_argument("--devkit", required=True, help="ILSVRC2012_devkit_t12.tar.gz or its folder")
    p.add_argument("--dry-run", action="store_true", help="say what would move; move nothing")
    sub.add_parser("markdown", help="the catalog as DATA.md (to stdout)")
    args = parser.parse_args(argv)
    if args.command == "list":
        return commands.list_datasets()
    if args.command == "markdown":
        from attnbench.data import datamd

        sys.stdout.write(datamd.render())
        return 0
    if args.command == "where":
        print(catalog.where(args.name, args.dir))
        return 0
    if args.command == "fetch":
        return commands.fetch_dataset(args.name, args.dir, args.source)
    if args.command == "imagenet-val":
        from vision.data import imagenet_val

        return imagenet_val.main(args.val_dir, args.devkit, args.dry_run)
    return commands.verify_dataset(args.name, args.folder, args.dir)


def run() -> None:
    """Console entry point (`attnbench-data`)."""
    sys.exit(cli.run(main))


if __name__ == "__main__":
    run()
