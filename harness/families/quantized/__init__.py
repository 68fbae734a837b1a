"""The families' half of an int8 program (harness.quantization has its params): .pt2e quantizes a
family's module with PyTorch's PT2E flow and gives the Built, .golden judges it in quantization
steps, in a worker. Not a family of its own: the module and model families call it when a case's
params say `quantize: int8`."""
