"""@export and @annotate_args in the shape of torch-mlir's annotations.py."""
TORCH_MLIR_EXPORT_ATTR_NAME = "_torch_mlir_export"
TORCH_MLIR_ARG_ANNOTATIONS_ATTR_NAME = "_torch_mlir_arg_annotations"


def export(fn):
    setattr(fn, TORCH_MLIR_EXPORT_ATTR_NAME, True)
    return fn


def annotate_args(annotations):
    """[None (self), (shape with -1 for a dynamic size, dtype, value semantics), ...]"""

    def decorator(fn):
        setattr(fn, TORCH_MLIR_ARG_ANNOTATIONS_ATTR_NAME, annotations)
        return fn

    return decorator
