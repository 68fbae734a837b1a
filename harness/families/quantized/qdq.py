"""An ONNX model quantized to int8 by onnxruntime's QDQ quantizer (worker only; the onnx extra):
`quantize_static` in the QDQ format, calibrated (min-max) on the case's inputs, int8 weights per
channel, uint8 activations (as the PT2E flow quantizes a PyTorch program). The model holds
QuantizeLinear and DequantizeLinear nodes around the float nodes they feed."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx

from harness.families.quantized.pt2e import NotQuantized

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def quantize_qdq(path: Path, input_names: list[str], input_sets: list[tuple]) -> Path:
    """The QDQ int8 model of the model at `path`, written beside it in a temporary folder of its
    own; NotQuantized when the quantizer left no QuantizeLinear or DequantizeLinear node."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Inputs(CalibrationDataReader):
        def __init__(self):
            self.sets = iter([dict(zip(input_names, (np.asarray(v) for v in inputs))) for inputs in input_sets])

        def get_next(self):
            return next(self.sets, None)

    folder = Path(tempfile.mkdtemp(prefix="harness-qdq-"))
    quantized = folder / f"{path.stem}.int8.onnx"
    quantize_static(str(path), str(quantized), Inputs(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    if not any(node.op_type in QDQ_OPS for node in onnx.load(str(quantized)).graph.node):
        raise NotQuantized("onnxruntime's QDQ quantizer left no QuantizeLinear or DequantizeLinear node in the "
                           "model: no node of it has a quantization pattern, so its int8 variant would test "
                           "float code; leave quantize out for this case")
    return quantized
