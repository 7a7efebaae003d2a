"""Point clouds: ModelNet40 classification, ShapeNetPart segmentation, k-NN particle dynamics."""
