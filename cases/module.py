"""nn.Module cases: a module from cases/models, its inputs described as data (harness.families.module.params).

Ids read `module/<name>`. The same description works in a --cases-file entry with `family: module`.
"""
from harness.families.module import module_case

BLOCKS = "harness.cases.models.blocks"
FEATURES = [{"shape": [4, 16]}]

CASES = [
    module_case("mlp", f"{BLOCKS}:MLP", FEATURES),
    module_case("mlp_normal_inputs", f"{BLOCKS}:MLP", [{"shape": [4, 16], "values": "normal", "std": 3.0}]),
    module_case("mlp_dynamic_batch", f"{BLOCKS}:MLP", [{"shape": [4, 16], "dynamic": [0]}],
                input_sets=[[[7, 16]], [[1, 16]]]),
    module_case("mlp_float64", f"{BLOCKS}:MLP", [{"shape": [4, 16], "dtype": "float64"}]),
    module_case("self_attention", f"{BLOCKS}:SelfAttention", [{"shape": [2, 5, 16], "values": "normal"}]),
    module_case("conv_bn_relu", f"{BLOCKS}:ConvBNReLU", [{"shape": [2, 3, 8, 8], "values": "normal"}]),
    module_case("residual_layer_norm", f"{BLOCKS}:ResidualLayerNorm", [{"shape": [3, 5, 16], "values": "normal"}],
                init={"dim": 16}),
    module_case("embedding_mean", f"{BLOCKS}:EmbeddingMean", [{"shape": [3, 6], "dtype": "int64", "high": 50}]),
    module_case("statistics_dict", f"{BLOCKS}:Statistics", [{"shape": [5, 4], "values": "normal"}]),
    module_case("nan_safe_softmax", f"{BLOCKS}:NanSafeSoftmax",   # row 3 all -inf: a row of zeros
                [{"shape": [4, 6], "values": "normal", "nan": [[0, 1], [2, 3]],
                  "-inf": [[1, 0]] + [[3, column] for column in range(6)]}]),
    module_case("gru_encoder", f"{BLOCKS}:GRUEncoder", [{"shape": [2, 5, 4], "values": "normal"}]),
    # int8 programs (harness.quantization): PyTorch's PT2E flow, static, calibrated on the inputs.
    module_case("mlp/int8", f"{BLOCKS}:MLP", FEATURES, quantize="int8"),
    module_case("mlp_normal_inputs/int8", f"{BLOCKS}:MLP", [{"shape": [4, 16], "values": "normal", "std": 3.0}],
                quantize="int8"),
    module_case("self_attention/int8", f"{BLOCKS}:SelfAttention", [{"shape": [2, 5, 16], "values": "normal"}],
                quantize="int8"),
    module_case("conv_bn_relu/int8", f"{BLOCKS}:ConvBNReLU", [{"shape": [2, 3, 8, 8], "values": "normal"}],
                quantize="int8"),
    module_case("residual_layer_norm/int8", f"{BLOCKS}:ResidualLayerNorm", [{"shape": [3, 5, 16], "values": "normal"}],
                init={"dim": 16}, quantize="int8"),
    # Training steps (harness.training): the loss, every parameter's gradient, and SGD's updates.
    module_case("train_step_mlp_sgd", f"{BLOCKS}:MLP", FEATURES, train_step=True, optimizer="sgd"),
    module_case("train_step_conv_bn_relu", f"{BLOCKS}:ConvBNReLU", [{"shape": [2, 3, 8, 8], "values": "normal"}],
                train_step=True),
    module_case("train_step_self_attention", f"{BLOCKS}:SelfAttention", [{"shape": [2, 5, 16], "values": "normal"}],
                train_step=True),
]
