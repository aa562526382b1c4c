from projects.errors import NovelsiteError


class PipelineBusy(NovelsiteError):
    """This project is already writing or planning; wait for it, or answer its waiting question."""

    code = "pipeline_busy"
    http_status = 409


class PipelineNotReady(NovelsiteError):
    """The project is not in a state where this can start."""

    code = "pipeline_not_ready"
    http_status = 409


class LeaseLost(NovelsiteError):
    """Another worker took over this stage (its lease expired); this result is discarded."""

    code = "lease_lost"
    http_status = 409
