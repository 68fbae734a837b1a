"""A backend's stages: the steps that turn a program into something runnable (an export, an IR, a
compiled module), each fingerprinted, and each kept in the content-addressed stage cache (`--cache`,
`python -m harness cache`) so that a rerun redoes only the stages whose inputs changed. Each
backend names its own stages, in order (Backend.STAGES), and the packages that compute them (the
builds in their keys); nothing here lists them.

    fingerprinting  a stage output's short hash, in a canonical form
    changes         the first stage whose fingerprint changed between two results (the report diff)
    sql             the same rule in the run history's SQL, and how the history stores fingerprints
    keys            an entry's key: the stage's input, the builds of the packages that compute it, its options
    entries         the cache's directory of entries (atomic writes, checksums, least-recently-used eviction)
    commands        `python -m harness cache info|clear`
    reuse           a stage loaded from the cache or computed and written, inside a worker
    native_code     the JIT's machine code as a shared library, so that the cache can keep it
    stretches       a deterministic stretch's end (a pass that does not legalize, a lowering and its
                    machine code) remembered and given again

All but reuse, native_code and stretches are the controller's too: they import no torch."""
