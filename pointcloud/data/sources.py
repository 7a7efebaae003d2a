"""The official point-cloud datasets, for `attnbench-data` (`attnbench.data.catalog`): ModelNet40
in PointNet++'s resampled release and in PointNet's HDF5 release, both fetched by the command.
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
    )
)
