"""PyTorch's OpInfo database as cases: one per (op, variant, dtype, sample) of the installed torch.

The cases come from a manifest of op_db that a worker writes once per torch installation (see
harness.families.opinfo.params); --opinfo-samples and --dtypes choose which samples.
Ids read `opinfo/<op>/<variant or default>/<dtype>/<sample index>`.
"""
from harness.families.opinfo.params import opinfo_case_ids, opinfo_cases

FAMILIES = ("opinfo", "opinfo_grad")


def cases(options):
    return opinfo_cases(options, FAMILIES)


def case_ids(options):
    return opinfo_case_ids(options, FAMILIES)
