"""Tests of `pointcloud.data`."""
