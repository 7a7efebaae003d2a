"""Recipes of the point-cloud tasks (`pointcloud/tasks.py`): `modelnet40.py` (SAMSA Tables 1, 5,
6 classification), `shapenetpart.py` (SAMSA Tables 1, 6 part segmentation), `dynamics.py` (GRF's
particle-dynamics substitute); `common.py` holds their shared sections."""
