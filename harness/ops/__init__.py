"""What each case's program holds and what each backend did with it: the ops of a program
(`ops` in a record), the path each took through a backend's lowering (`lowering`), the paths a
backend's config claims (`expected`), and the coverage matrix built from a report's records
(`coverage`, `python -m harness coverage`).

The worker half (`names`, `listing`, `paths`) imports torch only inside the functions that take
torch objects; the report half (`coverage`, `core_aten`) reads records."""
