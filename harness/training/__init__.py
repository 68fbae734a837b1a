"""Training steps: one step of a family's program as the program under test, the loss and the
gradient of every parameter the loss reaches (and, with an optimizer, the updated parameters), where
`aten.convolution_backward` and the other backward ops really live.

A family that offers training steps takes the params of harness.training.params (`train_step`,
`optimizer`, `lr`) and wraps its module in harness.training.step.TrainStep in its builder. The
harness reads `train_step` itself: a training step is a program kind of its own ("train_step",
harness.program_kinds), so that a backend whose config does not take it (the ONNX
backends) is left out of such cases with one line per run. A backend compiles it through the one
seam: `export_program(program)` gives its joint forward-and-backward graph (harness.training.joint),
and `Program.train_step` offers its parts to a backend that compiles the forward pass and lets
autograd run the backward (Inductor, as torch.compile's users train).

This package's top level is pure Python (the pytest process reads the params); .step and .joint
import torch, in workers and tools only.
"""
