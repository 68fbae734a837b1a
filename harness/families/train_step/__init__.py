"""The families' half of a training step (harness.training has the rest): .build wraps a family's
module in a TrainStep and gives the Built, in a worker. Not a family of its own: the module and model
families call it when a case's params say `train_step`."""
