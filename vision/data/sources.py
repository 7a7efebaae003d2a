"""The official image datasets the vision and LRA Image configs read, for `attnbench-data`
(`attnbench.data.catalog`): CIFAR-10, CIFAR-100 and Tiny-ImageNet, fetched by the command;
ImageNet-1k, Places365-Standard and iNaturalist 2021, listed with the steps (each needs a
registration or its terms accepted, and is tens to hundreds of GB).

Each is registered under the name of its `config.data.dataset` (`vision.data.DATASETS`), in the
folder its reader finds by itself under the data root when `config.data.dir` is empty
(`vision.data.loader` asks `catalog.official_dir`). `verify` counts the splits with the readers'
own listing of the files (`vision.data.folders`: file names only, no image is decoded) and
checks the number of classes (`CLASSES`).
"""

from __future__ import annotations

import pathlib

from attnbench.data import cache, catalog, fetch

# ---- CIFAR-10 / CIFAR-100 ----------------------------------------------------------------------
# The python version of each (Krizhevsky 2009); the archives' md5 sums are the ones the CIFAR page
# lists, and torchvision checks (torchvision/datasets/cifar.py).


def _count_cifar(read):
    def count(folder: pathlib.Path) -> dict[str, int]:
        return {split: len(arrays[1]) for split, arrays in read(folder).items()}

    return count


def _cifar10_read(folder):
    from attnbench.data.formats import cifar

    return cifar.read_cifar10(folder)


def _cifar100_read(folder):
    from attnbench.data.formats import cifar

    return cifar.read_cifar100(folder)


_CIFAR_PAGE = "https://www.cs.toronto.edu/~kriz/cifar.html"
_CIFAR_SUM = f"{_CIFAR_PAGE} (md5sum column); torchvision/datasets/cifar.py checks the same"

catalog.register(
    catalog.Dataset(
        name="cifar10",
        title="CIFAR-10, python version",
        size="163 MB",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            fetch.Remote(
                url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                filename="cifar-10-python.tar.gz",
                size=170_498_071,
                md5="c58f30108f718f92721af3b95e74349a",
                checksum_source=_CIFAR_SUM,
            ),
        ),
        folder="cifar-10-batches-py",
        configs=(
            "vision/cifar10.py:preset=paper",
            "lra/image.py:preset=paper",
            "language/cifar10.py:source=official",
        ),
        splits={"train": 50_000, "test": 10_000},
        arrange=catalog.untar_into("cifar-10-batches-py"),
        count=_count_cifar(_cifar10_read),
        layout="data_batch_1..5 (train) and test_batch: pickled dicts, b'data' uint8 [10000, "
        "3072] (planar RGB rows of 32 x 32) and b'labels' 0-9 (attnbench.data.formats.cifar)",
    )
)

catalog.register(
    catalog.Dataset(
        name="cifar100",
        title="CIFAR-100, python version",
        size="about 161 MB (not checked here)",
        licence="no licence stated; distributed by the authors for research (cite Krizhevsky 2009)",
        homepage=_CIFAR_PAGE,
        remotes=(
            fetch.Remote(
                url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                filename="cifar-100-python.tar.gz",
                md5="eb9058c3a382ffc7106e4002c42a8d85",
                checksum_source=_CIFAR_SUM,
            ),
        ),
        folder="cifar-100-python",
        configs=("vision/cifar100.py:preset=paper",),
        splits={"train": 50_000, "test": 10_000},
        arrange=catalog.untar_into("cifar-100-python"),
        count=_count_cifar(_cifar100_read),
        layout="train and test: pickled dicts, b'data' uint8 [n, 3072] (planar RGB rows of 32 x "
        "32), b'fine_labels' 0-99 (read) and b'coarse_labels' 0-19 "
        "(attnbench.data.formats.cifar)",
    )
)


# ---- The class-folder releases: counted by the readers' own listing ---------------------------

# Classes per release, checked by verify (a partial copy has fewer class folders): Tiny-ImageNet
# 200 (its wnids.txt; the CS231n page); ILSVRC-2012 1,000 (the devkit's 1,000 leaf synsets);
# Places365 365 (categories_places365.txt); iNaturalist 2021 10,000 (visipedia/inat_comp
# 2021/README.md).
CLASSES = {"tiny_imagenet": 200, "imagenet": 1_000, "places365": 365, "inaturalist": 10_000}


def _count_folders(name: str):
    """`count` for a class-folder release: `{"train", "val"}` as its reader lists them (file
    names only), and a `DataError` when its number of classes differs from the release's."""

    def count(folder: pathlib.Path) -> dict[str, int]:
        from vision.data import folders

        if name == "tiny_imagenet":
            splits = folders.read_tiny_imagenet(folder)
        else:
            splits = folders.read_class_folders(folder, name)
        classes = len(splits["train"].classes)
        if classes != CLASSES[name]:
            raise cache.DataError(
                f"{folder}: {classes:,} classes in train/, the release has {CLASSES[name]:,} "
                "(a partial copy?)"
            )
        return {"train": len(splits["train"]), "val": len(splits["test"])}

    return count


# ---- Tiny-ImageNet -----------------------------------------------------------------------------
# CS231n's release (http://cs231n.stanford.edu/tiny-imagenet-200.zip): 200 classes, each with
# 500 training, 50 validation and 50 test images, the test set without labels (the dataset's
# description, as quoted by the loaders that read it, e.g. ContinualAI/avalanche). CS231n publishes
# no checksum; the md5 below is the one the loaders check (ContinualAI/avalanche
# avalanche/benchmarks/datasets/tiny_imagenet/tiny_imagenet.py, and others agree).

catalog.register(
    catalog.Dataset(
        name="tiny_imagenet",
        title="Tiny-ImageNet (tiny-imagenet-200, CS231n)",
        size="about 237 MiB (not checked here)",
        licence="not stated by the sources read here; its images are ImageNet's (ImageNet "
        "terms: non-commercial research)",
        homepage="http://cs231n.stanford.edu/",
        remotes=(
            fetch.Remote(
                url="http://cs231n.stanford.edu/tiny-imagenet-200.zip",
                filename="tiny-imagenet-200.zip",
                md5="90528d7ca1a48142e341f4ef8d21d0de",
                checksum_source="the Tiny-ImageNet loaders (ContinualAI/avalanche avalanche/"
                "benchmarks/datasets/tiny_imagenet/tiny_imagenet.py and others); CS231n "
                "publishes none",
            ),
        ),
        folder="tiny-imagenet-200",
        configs=(
            "vision/tiny_imagenet.py:preset=paper",
            "vision/tiny_imagenet.py:preset=paper,model=sliceformer",
        ),
        splits={"train": 100_000, "val": 10_000},
        arrange=catalog.untar_into("tiny-imagenet-200"),
        count=_count_folders("tiny_imagenet"),
        layout="wnids.txt, words.txt, train/<wnid>/images/*.JPEG (and <wnid>_boxes.txt), "
        "val/images/*.JPEG with val/val_annotations.txt (file, wnid, box), test/images/*.JPEG "
        "(unlabelled, not read); the configs report val as their test split",
        notes="the release's test images have no labels: the configs train on train and report "
        "val (Sliceformer Table 5). Class indices follow the sorted wnids.",
    )
)

# ---- ImageNet-1k (ILSVRC-2012) -----------------------------------------------------------------
# The release files and their md5 sums as torchvision checks them (torchvision/datasets/
# imagenet.py ARCHIVE_META); the split sizes as TensorFlow's reference ImageNet input pipeline
# states them (tensorflow/models official/resnet imagenet_main.py NUM_IMAGES). The train tar
# holds one tar per class (n01440764.tar, ...), the val tar the 50,000 images flat
# (torchvision's parse_train_archive / parse_val_archive).

_IMAGENET_URL = "https://image-net.org/data/ILSVRC/2012/"
_TORCHVISION_MD5 = "torchvision/datasets/imagenet.py (ARCHIVE_META); image-net.org lists none"

catalog.register(
    catalog.Dataset(
        name="imagenet",
        title="ImageNet-1k (ILSVRC-2012)",
        size="about 138 GB train + 6.3 GB val (not checked here)",
        licence="ImageNet terms of access: non-commercial research, after registration",
        homepage="https://image-net.org/download.php",
        remotes=tuple(
            fetch.Remote(
                url=_IMAGENET_URL + filename,
                filename=filename,
                md5=md5,
                checksum_source=_TORCHVISION_MD5,
            )
            for filename, md5 in (
                ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
                ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
                ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
            )
        ),
        folder="imagenet",
        configs=(
            "vision/imagenet.py:preset=paper",
            "vision/imagenet.py:preset=paper,model=cait_s24",
            "vision/imagenet.py:preset=paper,model=swin_t",
            "vision/imagenet.py:preset=paper,model=grf_vit",
        ),
        splits={"train": 1_281_167, "val": 50_000},
        count=_count_folders("imagenet"),
        layout="train/<wnid>/*.JPEG and val/<wnid>/*.JPEG, 1,000 class folders named by WordNet "
        "id (labels: the sorted wnids, as torchvision's ImageFolder and timm)",
        steps="log in at https://image-net.org (registration, non-commercial terms) and download "
        "the three files above (the md5 sums are torchvision's). In the dataset folder (below): "
        "mkdir train val; tar -xf ILSVRC2012_img_train.tar -C train (1,000 per-class tars, "
        "n01440764.tar ...), then unpack each into its own folder and delete it: "
        'for t in train/*.tar; do d="${t%.tar}"; mkdir -p "$d" && tar -xf "$t" -C "$d" && '
        'rm "$t"; done; tar -xf ILSVRC2012_img_val.tar -C val (50,000 images, flat); then '
        "attnbench-data imagenet-val <folder>/val --devkit ILSVRC2012_devkit_t12.tar.gz moves "
        "each into val/<wnid>/ by the devkit's ground truth (restartable; --dry-run shows it). "
        "Or set config.data.source='tfds' (TFDS imagenet2012, prepared from the same two tars: "
        "vision/data/tfds.py)",
        notes="the val images' classes come from the devkit (data/meta.mat and "
        "data/ILSVRC2012_validation_ground_truth.txt), the same mapping torchvision uses; "
        "verify lists the files (no decoding), which over 1.3 million files takes a while; it "
        "checks the class folders, not a TFDS preparation (config.data.source='tfds').",
    )
)

# ---- Places365-Standard ------------------------------------------------------------------------
# The small (256 x 256) images of Places365-Standard in class folders, "easy format"
# (places365standard_easyformat.tar: places365_standard/train/<category>/ and val/<category>/,
# the layout CSAILVision/places365's train_placesCNN.py reads with ImageFolder; its README links
# the file). No checksum is published for it. Split sizes: 1,803,460 train / 36,500 val (the
# file lists of the release, as torchvision's Places365 and TFDS places365_small read them;
# counted in minkyu-choi04/places2-arranger's README).

catalog.register(
    catalog.Dataset(
        name="places365",
        title="Places365-Standard, small images (256 x 256) in class folders",
        size="tens of GB (not checked here)",
        licence="the terms on the Places download page (read them there); the images' "
        "copyright stays with their owners (CSAILVision/places365 README)",
        homepage="http://places2.csail.mit.edu/download.html",
        remotes=(
            fetch.Remote(
                url="http://data.csail.mit.edu/places/places365/places365standard_easyformat.tar",
                filename="places365standard_easyformat.tar",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="places365_standard",
        configs=("vision/places365.py:preset=paper",),
        splits={"train": 1_803_460, "val": 36_500},
        count=_count_folders("places365"),
        layout="train/<category>/*.jpg and val/<category>/*.jpg, 365 class folders (labels: the "
        "sorted folder names)",
        steps="read the terms on http://places2.csail.mit.edu/download.html, download "
        "places365standard_easyformat.tar (above) and extract it into the data root: "
        "tar -xf places365standard_easyformat.tar -C <data root> makes places365_standard/ "
        "with train/<category>/ and val/<category>/, the folder the config reads. Or set "
        "config.data.source='tfds': TFDS places365_small downloads the release itself, "
        "prepared for random access with tfds build places365_small --file_format=array_record "
        "(vision/data/tfds.py)",
        notes="only the class-folder export (easy format) is read from files: the other "
        "downloads (train_256_places365standard.tar: data_256/<letter>/<category>/...; "
        "val_256.tar: flat, labels in places365_val.txt) need TFDS or a reorganisation. TFDS "
        "labels follow categories_places365.txt; the folders' labels their sorted names. verify "
        "checks the class folders, not a TFDS preparation.",
    )
)

# ---- iNaturalist 2021 --------------------------------------------------------------------------
# visipedia/inat_comp 2021/README.md ("Data"): the image archives on AWS Open Data with their md5
# sums, untarring to train/<category>/<image>.jpg and val/<category>/<image>.jpg; 10,000 species,
# 2,686,843 train / 100,000 val images (its table). The category folders are named
# "<id:05d>_<kingdom>_..._<species>" (torchvision/datasets/inaturalist.py checks the id prefix),
# so sorted folder names are the category ids.

_INAT_URL = "https://ml-inat-competition-datasets.s3.amazonaws.com/2021/"
_INAT_MD5 = "visipedia/inat_comp 2021/README.md (md5sum); torchvision's inaturalist.py agrees"

catalog.register(
    catalog.Dataset(
        name="inaturalist",
        title="iNaturalist 2021 (train and val images)",
        size="224 GB train + 8.4 GB val (visipedia/inat_comp)",
        licence="iNaturalist 2021 terms (visipedia/inat_comp 2021): non-commercial research and "
        "education, no redistribution of the images",
        homepage="https://github.com/visipedia/inat_comp/tree/master/2021",
        remotes=(
            fetch.Remote(
                url=_INAT_URL + "train.tar.gz",
                filename="train.tar.gz",
                md5="e0526d53c7f7b2e3167b2b43bb2690ed",
                checksum_source=_INAT_MD5,
            ),
            fetch.Remote(
                url=_INAT_URL + "val.tar.gz",
                filename="val.tar.gz",
                md5="f6f6e0e242e3d4c9569ba56400938afc",
                checksum_source=_INAT_MD5,
            ),
        ),
        folder="inaturalist2021",
        configs=("vision/inaturalist.py:preset=paper",),
        splits={"train": 2_686_843, "val": 100_000},
        count=_count_folders("inaturalist"),
        layout="train/<id>_<taxonomy>_<species>/*.jpg and val/<same>/*.jpg, 10,000 class "
        "folders (labels: the sorted folder names, i.e. the category ids)",
        steps="accept the terms in https://github.com/visipedia/inat_comp/tree/master/2021 "
        "(Terms of Use), download train.tar.gz and val.tar.gz (above; md5sum as listed), then "
        "mkdir <folder> && tar -xzf train.tar.gz -C <folder> && tar -xzf val.tar.gz -C <folder> "
        "(train/<category>/ and val/<category>/, the layout the config reads). Or set "
        "config.data.source='tfds': TFDS i_naturalist2021 downloads the same archives, "
        "prepared with tfds build i_naturalist2021 --file_format=array_record "
        "(vision/data/tfds.py)",
        notes="the train_mini (500,000 images) and public_test archives are not read. TFDS "
        "labels follow its i_naturalist2021_labels.txt; the folders' labels their sorted names. "
        "verify checks the class folders, not a TFDS preparation.",
    )
)
