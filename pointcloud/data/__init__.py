"""Point-cloud data: the ModelNet40 and ShapeNetPart readers and stand-ins, and the particle
simulator of the dynamics task.

    splits, description = data.load(config.data)   # {"train", "val", "test"} sources
    transform = data.train_transform(config.data)   # training augmentation, or None

Modules:
  loader         the API this package exports: `load` (the splits of either dataset, official
                 files or the offline stand-in, cached), `train_transform`, `ConcatSource`,
                 `DATASETS`, `SOURCES`, `AUGMENTS`
  modelnet40     the official ModelNet40 / ModelNet10 readers (PointNet++'s text release,
                 PointNet's HDF5 release) and the stand-in's glue
  shapenetpart   the official ShapeNetPart reader and the stand-in's glue
  release_files  the official readers' shared plumbing: text tables, lazy per-file sources,
                 the release folder, the one-time conversion into memory-mapped `.npy` arrays
  shapes         the offline stand-in of both sets: seeded parametric shapes with parts
  dynamics       the rigid-body particle simulator and its windows: the data of the
                 `pointcloud.dynamics` task, which `pointcloud.tasks` reads directly
"""

from pointcloud.data.loader import (
    AUGMENTS,
    DATASETS,
    SOURCES,
    ConcatSource,
    load,
    train_transform,
)

__all__ = ["load", "train_transform", "ConcatSource", "DATASETS", "SOURCES", "AUGMENTS"]
