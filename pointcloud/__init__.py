"""Point clouds: ModelNet40 classification, ShapeNetPart segmentation, k-NN particle dynamics.

Layout:
  tasks.py             the registered tasks, `config.task = "pointcloud.<name>"`: `modelnet40`,
                       `shapenetpart` and, in its last section, `dynamics` (GRF's HD-VPD
                       substitute)
  models.py            the point models of ModelNet40 and ShapeNetPart: the point Transformer
                       with any attention (classifier, segmenter) and the PointNet and DGCNN
                       baselines
  interlacer.py        the dynamics task's model: HD-VPD's three particle-dynamics networks
                       (unmasked linear attention, the MP and GRF Interlacers)
  ops.py               point preprocessing: farthest-point and random sampling, normalisation
  data/                the data API (`load`, `train_transform`; `loader.py`), the official
                       readers with their stand-in glue (`modelnet40.py`, `shapenetpart.py`)
                       and their shared plumbing (`release_files.py`), the generated shapes
                       that stand in for both (`shapes.py`), and the dynamics task's simulator
                       (`dynamics.py`)
  inference_timing.py  benchmark: SAMSA Table 5, ModelNet40 test-split inference time
  scaling.py           benchmark: k-NN graphs and asymmetric GRF attention up to 32k points

No backbone is registered here: the point Transformer uses `attnbench.nn.backbones`' "samsa"
and "transformer". h5py (the `pointcloud` extra) is imported only where the HDF5 release is read.
"""
