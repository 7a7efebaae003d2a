"""The official point-cloud datasets, for `attnbench-data` (`attnbench.data.catalog`): ModelNet40
in PointNet++'s resampled release and in PointNet's HDF5 release, and ShapeNetPart in PointNet++'s
release with normals, all fetched by the command into the folders the readers find by themselves
from the data root (`config.data.dir` empty) and counted by those readers.
"""

from __future__ import annotations

import pathlib

from attnbench.data import catalog, fetch

# ---- ModelNet40 (point clouds) -------------------------------------------------------------------


def _count_modelnet(layout: str):
    def count(folder: pathlib.Path) -> dict[str, int]:
        from pointcloud.data import modelnet40

        splits, _ = modelnet40.load_modelnet(folder, layout=layout, normals=False, cache=False)
        return {split: len(source) for split, source in splits.items()}

    return count


catalog.register(
    catalog.Dataset(
        name="modelnet40",
        title="ModelNet40, PointNet++'s resampled clouds with normals",
        size="about 1.6 GB (not checked here)",
        licence="ModelNet: for academic research (Princeton ModelNet terms); the resampled "
        "release by the PointNet++ authors",
        homepage="https://modelnet.cs.princeton.edu/",
        remotes=(
            fetch.Remote(
                url="https://shapenet.cs.stanford.edu/media/modelnet40_normal_resampled.zip",
                filename="modelnet40_normal_resampled.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="modelnet40_normal_resampled",
        configs=("pointcloud/modelnet40.py:preset=paper,source=official",),
        splits={"train": 9_843, "test": 2_468},
        arrange=catalog.untar_into("modelnet40_normal_resampled"),
        count=_count_modelnet("normal_resampled"),
        notes="The Stanford host has been unreliable; `--from` takes a mirror URL or a copy. "
        "SAMSA (arXiv 2408.05391, App. A) samples 1,024 points by farthest-point sampling.",
        layout="modelnet40_shape_names.txt (40 classes), modelnet40_{train,test}.txt (shape ids), "
        "<class>/<id>.txt (10,000 lines x,y,z,nx,ny,nz); modelnet10_* lists for ModelNet10",
    )
)

catalog.register(
    catalog.Dataset(
        name="modelnet40_hdf5",
        title="ModelNet40, PointNet's 2,048-point HDF5 release",
        size="about 435 MB (not checked here)",
        licence="ModelNet: for academic research (Princeton ModelNet terms)",
        homepage="https://modelnet.cs.princeton.edu/",
        remotes=(
            fetch.Remote(
                url="https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip",
                filename="modelnet40_ply_hdf5_2048.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder="modelnet40_ply_hdf5_2048",
        configs=("pointcloud/modelnet40.py:preset=paper,source=official",),
        splits={"train": 9_843, "test": 2_468},
        arrange=catalog.untar_into("modelnet40_ply_hdf5_2048"),
        count=_count_modelnet("hdf5"),
        notes="Read with --config.data.layout=hdf5 (needs the pointcloud extra, h5py).",
        layout="shape_names.txt, {train,test}_files.txt, ply_data_train0..4.h5 and "
        "ply_data_test0..1.h5 (data [n,2048,3], label [n,1], normal [n,2048,3])",
    )
)

# ---- ShapeNetPart ------------------------------------------------------------------------------

_SHAPENET_FOLDER = "shapenetcore_partanno_segmentation_benchmark_v0_normal"


def _count_shapenetpart(folder: pathlib.Path) -> dict[str, int]:
    """The split sizes `load_shapenetpart` reads: the category map and the three split lists with
    the reader's own parsing, each listed file checked to exist; no point file is read and
    nothing is cached (`cache=False`)."""
    from pointcloud.data import shapenetpart

    splits, _ = shapenetpart.load_shapenetpart(folder, cache=False)
    return {split: len(source) for split, source in splits.items()}


catalog.register(
    catalog.Dataset(
        name="shapenetpart",
        title="ShapeNetPart, PointNet++'s release with normals "
        "(shapenetcore_partanno_segmentation_benchmark_v0_normal)",
        # "around 700MB" in public download scripts of this zip; not checked here.
        size="about 700 MB (not checked here)",
        licence="ShapeNet terms of use (non-commercial research and education); part annotations "
        "by Yi et al. 2016",
        homepage="https://www.shapenet.org/",
        remotes=(
            # PointNet++'s data/README.md (charlesq34/pointnet2) links this file; it is also
            # the reader's SHAPENET_URL (tests/pointcloud/data/test_fetch_shapenetpart.py checks
            # that they agree).
            fetch.Remote(
                url="https://shapenet.cs.stanford.edu/media/"
                "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip",
                filename="shapenetcore_partanno_segmentation_benchmark_v0_normal.zip",
                checksum_source=catalog.NO_SUM,
            ),
        ),
        folder=_SHAPENET_FOLDER,
        configs=("pointcloud/shapenetpart.py:preset=paper,source=official",),
        # The lengths of train_test_split/shuffled_{train,val,test}_file_list.json: a public
        # per-category table of this release's splits sums to 12,137 / 1,870 / 2,874 (16,881
        # shapes, 16 categories); yanx27's part-segmentation log reads 2,874 test shapes.
        splits={"train": 12_137, "val": 1_870, "test": 2_874},
        arrange=catalog.untar_into(_SHAPENET_FOLDER),
        count=_count_shapenetpart,
        notes="The Stanford host has been unreliable (a Hugging Face copy of the zip says the "
        "original no longer exists); `--from` takes a mirror URL or a copy of the zip. verify "
        "counts the entries of the three split lists, each checked to name an existing file; "
        "the train / val sizes were not checked against a download here (yanx27's log reads "
        "13,995 train + val shapes from the category folders, against 14,007 listed). The "
        "config reads 2,500 points with normals per shape (configs/pointcloud/shapenetpart.py).",
        layout="synsetoffset2category.txt (16 categories), <synset>/<id>.txt (lines x y z nx ny "
        "nz part, 50 part ids), train_test_split/shuffled_{train,val,test}_file_list.json",
    )
)
